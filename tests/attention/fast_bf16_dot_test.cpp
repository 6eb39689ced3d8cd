// tests/attention/fast_bf16_dot_test.cpp — the AVX512_BF16 kernels (fast_attention_options::
// bf16_dot_products, on by default; fast/x86/avx512_bf16-inl.hpp): bfloat16 K/V on the decode path and on
// the prefill path's pair tiles with the default options against sdpa within their documented bound
// 2^-8 (1 + A) max |v|, in effect by default (errors above the exact path's 5e-7 bound, since q and p are
// rounded to bfloat16), the exact path still reachable ({.bf16_dot_products = false}: 5e-7 on the same
// inputs), bit-identical for any thread count; the pair tiles' packs and products against double sums
// of the rounded operands. Skipped, with a message, on CPUs without AVX512_BF16.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>

#include "fast_support.hpp"
#include "support/skip.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

bool have_bf16_dot() {
  return posenc::kernels::isa_supported(isa::avx512) &&
         posenc::kernels::attention_kernels_for(isa::avx512).bf16_dot.usable();
}

}  // namespace

TEST_CASE("bf16_dot_products (the default): decode with bfloat16 K/V within 2^-8 (1 + A) max |v| of sdpa",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16 (the option falls back to the default kernels)");
  posenc::kernels::scoped_isa use(isa::avx512);
  REQUIRE(use.active());
  const posenc::fast_attention_options dot{};  // the default options take the dot products here
  const posenc::fast_attention_options exact{.bf16_dot_products = false};
  double worst = 0;
  // decode shapes (G x Sq < 16 rows: the in-place path), odd key counts (a key pair with no partner),
  // D = Dv multiples of 32, GQA ratios 1 / 4 / 8, with and without a bias encoder and padding
  const fast_shape shapes[] = {{.B = 1, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
                               {.B = 2, .Sq = 1, .Sk = 77, .Hq = 8, .Hkv = 1, .D = 64, .Dv = 64},
                               {.B = 1, .Sq = 3, .Sk = 130, .Hq = 2, .Hkv = 2, .D = 32, .Dv = 96},
                               {.B = 1, .Sq = 1, .Sk = 4500, .Hq = 4, .Hkv = 1, .D = 96, .Dv = 32}};
  std::uint64_t seed = 90;
  for (const auto& s : shapes)
    for (bool causal : {false, true}) {
      const fast_inputs<posenc::bfloat16> in(s, ++seed);
      fast_masks m;
      m.causal = causal;
      if (!causal) m.lengths.assign(static_cast<std::size_t>(s.B), s.Sk - 5);
      const double e1 = fast_error(in, posenc::no_position{}, m, dot);
      const double e2 = fast_error(in, posenc::alibi({.num_heads = static_cast<int>(s.Hq)}), m, dot);
      INFO("Sq " << s.Sq << " Sk " << s.Sk << " Hq " << s.Hq << " Hkv " << s.Hkv << " D " << s.D << " causal " << causal
                 << ": " << e1 << ", " << e2);
      CHECK(e1 <= bf16_dot_bound);
      CHECK(e2 <= bf16_dot_bound);
      worst = std::max({worst, e1, e2});
      // the exact kernels, asked for, on the same inputs keep the fp32 bound
      CHECK(fast_error(in, posenc::no_position{}, m, exact) <= fast_bound);
    }
  INFO("worst " << worst);
  CHECK(worst > fast_bound);  // the default took the dot products: bf16 rounding of q and p shows
}

TEST_CASE("bf16_dot_products: bit-identical for 1 and 2 threads (key chunks merged in a fixed order)",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16");
  posenc::kernels::scoped_isa use(isa::avx512);
  const fast_inputs<posenc::bfloat16> in({.B = 1, .Sq = 1, .Sk = 4500, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64}, 5);
  posenc::thread_pool one(1), two(2);
  const posenc::attention_options o{.causal = true};
  const auto a = run_fast(in, posenc::no_position{}, o, {.executor = one.as_parallel_for(), .bf16_dot_products = true});
  const auto b = run_fast(in, posenc::no_position{}, o, {.executor = two.as_parallel_for(), .bf16_dot_products = true});
  CHECK(a == b);
}

namespace {

float bf16_round(float x) {
  return static_cast<float>(posenc::bfloat16(x));
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> out;
  for (const double x : random_values(n, seed)) out.push_back(static_cast<float>(x));
  return out;
}

}  // namespace

TEST_CASE("bf16 dot prefill tiles: pair packs and vdpbf16ps products against double sums, tails and key runs",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16");
  const posenc::kernels::storage_kernels<posenc::bfloat16>& kern =
      posenc::kernels::attention_kernels_for(isa::avx512).bf16_dot;
  REQUIRE(kern.qk_tile != nullptr);
  REQUIRE(kern.pv_tile != nullptr);
  constexpr int R = 15, ld = 64;  // rows: register blocks of 6, 6, 2 and 1
  const auto values = [](std::size_t n, std::uint64_t seed) {
    std::vector<float> x = random_floats(n, seed);
    for (float& e : x) e = bf16_round(e);
    return x;
  };
  for (const int D : {32, 96, 128})
    for (const int nk : {64, 37, 1}) {
      INFO("D " << D << " keys " << nk);
      const std::ptrdiff_t ks = D + 3;  // an odd token stride: rows at 2-byte alignment
      const std::vector<float> kf = values(static_cast<std::size_t>(nk * ks), 7), q = random_floats(R * D, 8);
      std::vector<posenc::bfloat16> k(kf.size(), posenc::bfloat16(0.0f));
      for (std::size_t i = 0; i < kf.size(); ++i) k[i] = posenc::bfloat16(kf[i]);
      std::vector<float> qp(R * D), kt(static_cast<std::size_t>(D * ld), 0.0f), s(R * ld, -1.0f);
      std::vector<const float*> rows(R);
      for (int r = 0; r < R; ++r) kern.prep_q(q.data() + r * D, D, qp.data() + r * D), rows[r] = qp.data() + r * D;
      kern.pack_kt({k.data(), ks, 0, nk}, D, kt.data(), ld);
      kern.qk_tile({.q = rows.data(), .rows = R, .dim = D, .scale = 0.5f, .kt = {kt.data(), ld}, .s = {s.data(), ld}});
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < ld; ++j) {
          double want = 0, mag = 0;
          for (int d = 0; j < nk && d < D; ++d) {
            const double x = static_cast<double>(bf16_round(q[r * D + d])) * kf[j * ks + d];
            want += x, mag += std::fabs(x);
          }
          CHECK(std::fabs(s[r * ld + j] - 0.5 * want) <= 0.5 * mag * D * 0x1p-24);
        }
      // PV: every key, then a run [first, first + n) with an odd start and end whose outside
      // neighbours hold NaN (their products must never be formed)
      const int Dv = D, dvp = (Dv + 63) / 64 * 64;
      std::vector<float> vf = values(static_cast<std::size_t>(nk * ks), 9);
      const std::vector<float> p = random_floats(R * ld, 10), o0 = random_floats(R * dvp, 11);
      for (const int first : {0, 3}) {
        const int n = first == 0 ? nk : std::max(0, nk - 6);
        if (n == 0) continue;
        INFO("first " << first << " n " << n);
        std::vector<posenc::bfloat16> v(vf.size(), posenc::bfloat16(0.0f));
        for (std::size_t i = 0; i < vf.size(); ++i) v[i] = posenc::bfloat16(vf[i]);
        for (const int j : {first - 1, first + n})
          if (j >= 0 && j < nk)
            for (int c = 0; c < Dv; ++c) v[j * ks + c] = posenc::bfloat16(std::numeric_limits<float>::quiet_NaN());
        std::vector<float> vt(static_cast<std::size_t>(ld * dvp), 0.0f), o = o0;
        kern.pack_v({v.data(), ks, 0, nk}, Dv, vt.data(), dvp);
        kern.pv_tile({.p = p.data() + first,
                      .row_stride = ld,
                      .rows = R,
                      .keys = n,
                      .vt = {vt.data(), dvp},
                      .cols = dvp,
                      .o = {o.data(), dvp},
                      .first = first});
        for (int r = 0; r < R; ++r)
          for (int c = 0; c < dvp; ++c) {
            double want = o0[r * dvp + c], mag = std::fabs(want);
            for (int j = first; c < Dv && j < first + n; ++j) {
              const double x = static_cast<double>(bf16_round(p[r * ld + j])) * vf[j * ks + c];
              want += x, mag += std::fabs(x);
            }
            CHECK(std::fabs(o[r * dvp + c] - want) <= mag * (n + 1) * 0x1p-24);
          }
      }
    }
}

TEST_CASE("bf16_dot_products (the default): prefill on pair tiles within 2^-8 (1 + A) max |v| of sdpa, every hook",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16");
  posenc::kernels::scoped_isa use(isa::avx512);
  const posenc::fast_attention_options dot{}, exact{.bf16_dot_products = false};
  // prefill shapes (G x Sq >= 16 rows: packed tiles), odd key counts, query tiles of 128 / G tokens and
  // a last tile cut short, GQA 1 / 4 / 8, D = Dv or not
  const fast_shape shapes[] = {{.B = 1, .Sq = 40, .Sk = 77, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
                               {.B = 2, .Sq = 33, .Sk = 33, .Hq = 4, .Hkv = 4, .D = 64, .Dv = 96},
                               {.B = 1, .Sq = 150, .Sk = 301, .Hq = 8, .Hkv = 1, .D = 32, .Dv = 32}};
  std::uint64_t seed = 300;
  double worst = 0;
  for (const auto& s : shapes) {
    const fast_inputs<posenc::bfloat16> in(s, ++seed);
    const posenc::alibi alibi({.num_heads = static_cast<int>(s.Hq)});
    const posenc::rope rope({.head_dim = static_cast<int>(s.D)});
    for (int variant = 0; variant < 4; ++variant) {
      fast_masks m;
      m.causal = variant != 1;
      if (variant == 1) m.lengths.assign(static_cast<std::size_t>(s.B), s.Sk - 5);  // padding
      if (variant == 2) m.window = 17;                                              // odd runs of keys
      if (variant == 3) m.sinks.assign(static_cast<std::size_t>(s.Hq), 0.5);
      const double e[] = {fast_error(in, posenc::no_position{}, m, dot), fast_error(in, alibi, m, dot),
                          fast_error(in, posenc::combine(rope, alibi), m, dot)};
      INFO("Sq " << s.Sq << " Sk " << s.Sk << " Hq " << s.Hq << " Hkv " << s.Hkv << " D " << s.D << " variant "
                 << variant << ": " << e[0] << ", " << e[1] << ", " << e[2]);
      for (const double x : e) {
        CHECK(x <= bf16_dot_bound);
        worst = std::max(worst, x);
      }
      CHECK(fast_error(in, alibi, m, exact) <= fast_bound);
    }
  }
  INFO("worst " << worst);
  CHECK(worst > fast_bound);  // the default took the dot products on the prefill path
}

TEST_CASE("bf16_dot_products: prefill with NaN values at masked keys, runs of keys from odd offsets",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16");
  posenc::kernels::scoped_isa use(isa::avx512);
  const fast_shape s{.B = 1, .Sq = 70, .Sk = 70, .Hq = 4, .Hkv = 1, .D = 64, .Dv = 64};
  fast_inputs<posenc::bfloat16> in(s, 17);
  fast_masks m;
  m.causal = true;
  m.window = 9;
  m.key_mask.assign(static_cast<std::size_t>(s.Sk), 1);
  for (const std::ptrdiff_t j : {4, 11, 12, 40}) {  // hidden keys holding NaN: each row takes its runs
    m.key_mask[static_cast<std::size_t>(j)] = 0;
    for (std::ptrdiff_t d = 0; d < s.Dv; ++d) {
      in.v[static_cast<std::size_t>(j * s.Dv + d)] = posenc::bfloat16(std::numeric_limits<float>::quiet_NaN());
      in.vd[static_cast<std::size_t>(j * s.Dv + d)] = std::numeric_limits<double>::quiet_NaN();
    }
  }
  const double e = fast_error(in, posenc::no_position{}, m, {});
  INFO("error " << e);
  CHECK(e <= bf16_dot_bound);
}

TEST_CASE("bf16_dot_products: prefill bit-identical for 1 and 2 threads", "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16");
  posenc::kernels::scoped_isa use(isa::avx512);
  const fast_inputs<posenc::bfloat16> in({.B = 1, .Sq = 300, .Sk = 300, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64}, 6);
  posenc::thread_pool one(1), two(2);
  const posenc::attention_options o{.causal = true};
  const posenc::alibi alibi({.num_heads = 8});
  const auto a = run_fast(in, alibi, o, {.executor = one.as_parallel_for()});
  const auto b = run_fast(in, alibi, o, {.executor = two.as_parallel_for()});
  CHECK(a == b);
  CHECK(a != run_fast(in, alibi, o, {.executor = one.as_parallel_for(), .bf16_dot_products = false}));
}
