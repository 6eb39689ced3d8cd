// tests/attention/fast_kernels_test.cpp — the attention tile microkernels of every ISA this machine
// runs against the scalar ones: the vectorised exp within its documented error, the in-place (decode)
// QK^T and PV kernels on bfloat16 / float16 rows against double sums (bfloat16 through the pair order:
// split_q, load_eo, merge_o), and whole attention calls (packed prefill path, in-place decode path,
// float / bfloat16 / float16 K/V) within the documented attention bound.
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>

#include "fast_support.hpp"
#include "support/check.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

std::vector<isa> isas_here() {
  std::vector<isa> r;
  for (isa i : {isa::avx2, isa::avx512, isa::neon})
    if (posenc::kernels::isa_supported(i)) r.push_back(i);
  return r;
}

template <class T, class E>
void compare_to_scalar(isa which, const fast_shape& s, const posenc::attention_options& o, const E& enc,
                       bool head_major = false) {
  fast_inputs<T> in(s, 77);
  in.head_major_kv = head_major;
  // the exact kernels of every ISA (the AVX512_BF16 ones, the default for bfloat16 K/V where the CPU has
  // them, round q and p: fast_bf16_dot_test.cpp checks them against sdpa within their own bound)
  const posenc::fast_attention_options exact{.bf16_dot_products = false};
  std::vector<float> ref, got;
  {
    posenc::kernels::scoped_isa use(isa::scalar);
    ref = run_fast(in, enc, o, exact);
  }
  {
    posenc::kernels::scoped_isa use(which);
    REQUIRE(use.active());
    got = run_fast(in, enc, o, exact);
  }
  const posenc::attention_mask mask(o, s.B, s.Sq, s.Sk);
  const double A = logit_bound(in, enc, o, mask);
  INFO(posenc::kernels::isa_name(which) << " Sq " << s.Sq << " Sk " << s.Sk << " Hq " << s.Hq << " Hkv " << s.Hkv
                                        << " D " << s.D << " Dv " << s.Dv << " head-major " << head_major);
  POSENC_CHECK_CLOSE(got, ref, 2 * fast_bound * (1 + A) * in.vmax(), 0);
}

// rotate: RoPE + ALiBi (keys rotated into float copies); else ALiBi alone (keys read in their storage).
template <class T>
void compare_to_scalar(isa which, const fast_shape& s, const posenc::attention_options& o, bool rotate = true) {
  if (rotate)
    compare_to_scalar<T>(
        which, s, o,
        posenc::combine(posenc::rope({.head_dim = static_cast<int>(s.D)}), posenc::alibi({.num_heads = s.Hq})));
  else
    compare_to_scalar<T>(which, s, o, posenc::alibi({.num_heads = s.Hq}));
}

// The in-place kernels of ISA `which` on storage T against double sums: QK^T of heads x Rg query rows
// (Rg = 5: a block of four rows and one single row) and PV of the same rows, D / Dv with tails of every
// vector width and n keys. bfloat16 goes through the pair order (q by split_q, o put back by merge_o),
// as the driver does; the products are exact, so only the fp32 summation differs from the reference.
template <class T>
void in_place_kernels(isa which, int D, int Dv, int n) {
  const auto& kern = posenc::kernels::attention_kernels_for(which);
  constexpr int heads = 2, Rg = 5, R = heads * Rg;
  const auto rq = random_values(static_cast<std::size_t>(R * D), 11),
             rk = random_values(static_cast<std::size_t>(n * heads * D), 12),
             rv = random_values(static_cast<std::size_t>(n * heads * Dv), 13),
             rp = random_values(static_cast<std::size_t>(R * n), 14),
             ro = random_values(static_cast<std::size_t>(R * Dv), 15);
  std::vector<float> q(rq.begin(), rq.end()), prepared(q.size());
  std::vector<T> k, v;
  for (double x : rk) k.push_back(T(static_cast<float>(x)));
  for (double x : rv) v.push_back(T(static_cast<float>(x)));
  std::vector<const float*> rows(R);
  for (int r = 0; r < R; ++r) {
    rows[r] = q.data() + r * D;
    if constexpr (std::is_same_v<T, posenc::bfloat16>) {
      kern.bf16.prep_q(q.data() + r * D, D, prepared.data() + r * D);
      rows[r] = prepared.data() + r * D;
    }
  }
  const float scale = 0.75f;
  std::vector<float> s(static_cast<std::size_t>(R * n), -9.0f);
  kern.template storage<T>().qk({.q = {rows.data(), Rg, heads, D}, .scale = scale, .s = {s.data(), n}},
                                {k.data(), heads * D, D, n});
  std::vector<double> sref(s.size()), stol(s.size());
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < n; ++j) {
      double x = 0, a = 0;
      for (int d = 0; d < D; ++d) {
        const double kd =
            static_cast<double>(static_cast<float>(k[static_cast<std::size_t>((j * heads + r / Rg) * D + d)]));
        x += static_cast<double>(q[static_cast<std::size_t>(r * D + d)]) * kd;
        a += std::fabs(static_cast<double>(q[static_cast<std::size_t>(r * D + d)]) * kd);
      }
      sref[static_cast<std::size_t>(r * n + j)] = scale * x;
      stol[static_cast<std::size_t>(r * n + j)] = scale * a * 1e-6;
    }
  INFO(posenc::kernels::isa_name(which) << (std::is_same_v<T, posenc::bfloat16> ? " bfloat16" : " float16") << " D "
                                        << D << " Dv " << Dv << " n " << n);
  for (std::size_t i = 0; i < s.size(); ++i) {
    INFO("score " << i);
    CHECK(std::fabs(static_cast<double>(s[i]) - sref[i]) <= stol[i]);
  }

  std::vector<float> p(rp.begin(), rp.end()), o(ro.begin(), ro.end());
  if constexpr (std::is_same_v<T, posenc::bfloat16>)  // o rows accumulate in pair order (the same permutation)
    for (int r = 0; r < R; ++r) {
      const std::vector<float> row(o.begin() + r * Dv, o.begin() + (r + 1) * Dv);
      kern.bf16.prep_q(row.data(), Dv, o.data() + r * Dv);
    }
  kern.template storage<T>().pv({.p = {p.data(), n}, .per_head = Rg, .heads = heads, .dim = Dv, .o = {o.data(), Dv}},
                                {v.data(), heads * Dv, Dv, n});
  if constexpr (std::is_same_v<T, posenc::bfloat16>)
    for (int r = 0; r < R; ++r) kern.bf16.finish_o(o.data() + r * Dv, Dv);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Dv; ++c) {
      double x = ro[static_cast<std::size_t>(r * Dv + c)], a = std::fabs(x);
      for (int j = 0; j < n; ++j) {
        const double t =
            rp[static_cast<std::size_t>(r * n + j)] *
            static_cast<double>(static_cast<float>(v[static_cast<std::size_t>((j * heads + r / Rg) * Dv + c)]));
        x += t, a += std::fabs(t);
      }
      INFO("row " << r << " column " << c);
      CHECK(std::fabs(static_cast<double>(o[static_cast<std::size_t>(r * Dv + c)]) - x) <= a * 1e-6);
    }
}

}  // namespace

TEST_CASE("fast kernels: in-place QK^T and PV on bfloat16 / float16 rows, pair order and tails, every ISA",
          "[fast][kernels]") {
  std::vector<isa> all{isa::scalar};
  for (isa i : isas_here()) all.push_back(i);
  // D, Dv: multiples of 64 and of 32; 96 + 4 and 64 + 24 (a pair block, then a vector and a tail on AVX2);
  // below one AVX-512 pair; below every pair
  const int dims[][2] = {{128, 128}, {96, 32}, {100, 88}, {40, 24}, {7, 5}};
  for (isa which : all)
    for (const auto& dd : dims)
      for (int n : {1, 63}) {
        in_place_kernels<posenc::bfloat16>(which, dd[0], dd[1], n);
        in_place_kernels<posenc::float16>(which, dd[0], dd[1], n);
      }
}

TEST_CASE("fast kernels: the strided PV of the backward, every ISA", "[fast][kernels]") {
  // With p given transposed (row stride 1, key stride R) the packed PV forms the products of the forward's
  // layout (key stride 1) in the same order, so the same bits; !accumulate ignores what o held (NaN here); and the sums
  // are those of a double reference within fp32 rounding. 13 rows: register blocks and every tail; 37 keys; 128 columns
  // (two 64-column blocks).
  constexpr int R = 13, n = 37, dvp = 128;
  const auto pr = random_values(static_cast<std::size_t>(R * n), 5),
             vr = random_values(static_cast<std::size_t>(n * dvp), 6),
             orr = random_values(static_cast<std::size_t>(R * dvp), 7);
  std::vector<float> p(pr.begin(), pr.end()), vt(vr.begin(), vr.end()), o0(orr.begin(), orr.end()), pt(p.size());
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < n; ++j) pt[static_cast<std::size_t>(j * R + r)] = p[static_cast<std::size_t>(r * n + j)];
  std::vector<isa> all{isa::scalar};
  for (isa i : isas_here()) all.push_back(i);
  for (isa which : all) {
    INFO(posenc::kernels::isa_name(which));
    const auto& k = posenc::kernels::attention_kernels_for(which).tiles;
    std::vector<float> packed(o0), transposed(o0), fresh(o0.size(), std::numeric_limits<float>::quiet_NaN()),
        packed0(o0.size(), 0.0f);
    const auto pv = [&](const float* pp, std::ptrdiff_t row_stride, std::ptrdiff_t key_stride, float* o, bool acc) {
      k.pv_packed({.p = pp,
                   .row_stride = row_stride,
                   .key_stride = key_stride,
                   .rows = R,
                   .keys = n,
                   .vt = {vt.data(), dvp},
                   .cols = dvp,
                   .o = {o, dvp},
                   .accumulate = acc});
    };
    pv(p.data(), n, 1, packed.data(), true);
    pv(pt.data(), 1, R, transposed.data(), true);
    pv(p.data(), n, 1, fresh.data(), false);
    pv(p.data(), n, 1, packed0.data(), true);
    CHECK(std::memcmp(transposed.data(), packed.data(), packed.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(fresh.data(), packed0.data(), fresh.size() * sizeof(float)) == 0);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < dvp; ++c) {
        double x = o0[static_cast<std::size_t>(r * dvp + c)], a = std::fabs(x);
        for (int j = 0; j < n; ++j) {
          const double t = static_cast<double>(p[static_cast<std::size_t>(r * n + j)]) *
                           static_cast<double>(vt[static_cast<std::size_t>(j * dvp + c)]);
          x += t, a += std::fabs(t);
        }
        CHECK(std::fabs(static_cast<double>(packed[static_cast<std::size_t>(r * dvp + c)]) - x) <= a * 1e-6);
      }
  }
}

TEST_CASE("fast kernels: the vectorised exp is within 4e-7 (relative) on every ISA", "[fast][kernels]") {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-87.0f + 175.0f * static_cast<float>(i) / 200000.0f);
  for (float v : {-std::numeric_limits<float>::infinity(), -1000.0f, -87.5f, 0.0f, -0.0f, 1e-30f}) x.push_back(v);
  std::vector<isa> all{isa::scalar};
  for (isa i : isas_here()) all.push_back(i);
  for (isa which : all) {
    const auto& k = posenc::kernels::attention_kernels_for(which).tiles;
    std::vector<float> y(x.size());
    k.exp(x.data(), y.data(), static_cast<int>(x.size()));
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i] < -87.33f) {
        CHECK(y[i] == 0.0f);  // masked scores (-inf) and underflow give exactly 0
        continue;
      }
      if (x[i] > 88.0f) continue;
      const double e = std::exp(static_cast<double>(x[i]));
      worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - e) / e);
    }
    INFO(posenc::kernels::isa_name(which) << ": worst relative error " << worst);
    CHECK(worst <= 4e-7);
  }
}

TEST_CASE(
    "fast kernels: the folded bias row (row_max_add, exp_sum_add) equals add_row then row_max / exp_sum, "
    "bit for bit, every ISA",
    "[fast][kernels]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<isa> all{isa::scalar};
  for (isa i : isas_here()) all.push_back(i);
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (isa which : all) {
    const auto& k = posenc::kernels::attention_kernels_for(which).tiles;
    for (int n : {1, 5, 15, 16, 17, 31, 64, 70}) {
      for (int special = 0; special < 4; ++special) {  // none, a -inf score, a NaN score, a +inf bias
        std::vector<float> x(96), t(static_cast<std::size_t>(n));
        for (float& v : x) v = nd(rng);
        for (float& v : t) v = nd(rng) * 10.0f;
        const auto at = static_cast<std::size_t>(n / 2);
        if (special == 1) x[at] = -inf;
        if (special == 2) x[at] = std::numeric_limits<float>::quiet_NaN();
        if (special == 3) t[at] = inf;
        std::vector<float> added = x, folded = x;
        k.add_row(added.data(), t.data(), n);
        const float want = k.row_max(added.data(), n), got = k.row_max_add(folded.data(), t.data(), n);
        INFO(posenc::kernels::isa_name(which) << " n " << n << " case " << special);
        CHECK(std::memcmp(&want, &got, sizeof want) == 0);
        CHECK(std::memcmp(folded.data(), x.data(), x.size() * sizeof(float)) == 0);  // the max pass writes nothing
        if (!std::isfinite(want)) continue;  // the softmax step adds the row itself then
        const float m = want - 0.5f;
        const float sum_want = k.exp_sum(added.data(), n, m), sum_got = k.exp_sum_add(folded.data(), t.data(), n, m);
        CHECK(std::memcmp(&sum_want, &sum_got, sizeof sum_want) == 0);
        CHECK(std::memcmp(added.data(), folded.data(), static_cast<std::size_t>(n) * sizeof(float)) == 0);
        CHECK(sum_got > 0.0f);
      }
    }
  }
}

TEST_CASE("fast kernels: every ISA's attention agrees with the scalar kernels", "[fast][kernels]") {
  for (isa which : isas_here()) {
    for (bool causal : {false, true}) {
      const posenc::attention_options o{.causal = causal};
      // packed path (>= 16 rows per work item), D and Dv not multiples of any vector width
      compare_to_scalar<float>(which, {.B = 1, .Sq = 70, .Sk = 133, .Hq = 2, .Hkv = 1, .D = 72, .Dv = 72}, o);
      compare_to_scalar<posenc::bfloat16>(which, {.B = 1, .Sq = 40, .Sk = 99, .Hq = 4, .Hkv = 1, .D = 128, .Dv = 128},
                                          o);
      // in-place path (decode: few rows), tails of D, float16 and bfloat16
      compare_to_scalar<float>(which, {.B = 2, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 100, .Dv = 100}, o);
      compare_to_scalar<posenc::float16>(which, {.B = 1, .Sq = 2, .Sk = 257, .Hq = 4, .Hkv = 4, .D = 64, .Dv = 64}, o);
      compare_to_scalar<posenc::bfloat16>(which, {.B = 1, .Sq = 1, .Sk = 5000, .Hq = 4, .Hkv = 1, .D = 128, .Dv = 128},
                                          o);
      // the same with keys kept in their storage (no rotation): the bfloat16 key kernel reads q rows in
      // pair order; D and Dv with tails of every pair width, odd key counts
      compare_to_scalar<posenc::bfloat16>(which, {.B = 2, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 100, .Dv = 88}, o,
                                          false);
      compare_to_scalar<posenc::bfloat16>(which, {.B = 1, .Sq = 3, .Sk = 4099, .Hq = 4, .Hkv = 4, .D = 72, .Dv = 136},
                                          o, false);
      compare_to_scalar<posenc::float16>(which, {.B = 1, .Sq = 1, .Sk = 257, .Hq = 4, .Hkv = 1, .D = 100, .Dv = 40}, o,
                                         false);
    }
  }
}

TEST_CASE("fast kernels: head-major decode, key tiles read as four runs side by side, agrees with the scalar kernels",
          "[fast][kernels]") {
  // Tiles of 256 keys as four runs of 64 (a last tile of 232 as four of 58, of 45 as one run); 3, 4 and
  // 8 query rows per kv head (rows4x4 takes blocks of 4: with 3 the scores go token by token, the PV
  // sums still by runs); D and Dv with tails of every vector width.
  for (isa which : isas_here())
    for (const fast_shape s : {fast_shape{.B = 1, .Sq = 1, .Sk = 1000, .Hq = 8, .Hkv = 2, .D = 100, .Dv = 88},
                               fast_shape{.B = 2, .Sq = 1, .Sk = 301, .Hq = 6, .Hkv = 2, .D = 64, .Dv = 72},
                               fast_shape{.B = 1, .Sq = 1, .Sk = 520, .Hq = 16, .Hkv = 2, .D = 128, .Dv = 128}}) {
      const posenc::attention_options o{.causal = true};
      const auto enc = posenc::alibi({.num_heads = s.Hq});
      compare_to_scalar<float>(which, s, o, enc, true);
      compare_to_scalar<posenc::float16>(which, s, o, enc, true);
      compare_to_scalar<posenc::bfloat16>(which, s, o, enc, true);
    }
}

// The decode kernels' prefetch hint (fast/prefetch.hpp) against the vendor and family Linux reports
// (its "cpu family" is the base plus the extended family, as the hint computes it).
TEST_CASE("decode prefetches fill L1 on AMD family 1Ah and later only", "[attention][kernels]") {
#if POSENC_HAS_X86_KERNELS
  std::ifstream in("/proc/cpuinfo");
  std::string line, vendor;
  int family = -1;
  while (std::getline(in, line) && (vendor.empty() || family < 0)) {
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 2);
    if (line.rfind("cpu family", 0) == 0) family = std::stoi(line.substr(line.find(':') + 1));
  }
  if (family < 0) {
    WARN("no /proc/cpuinfo here: the hint is not checked against it");
    return;
  }
  CHECK(posenc::detail::cpu_prefers_l1_prefetch() == (vendor == "AuthenticAMD" && family >= 0x1a));
#else
  CHECK_FALSE(posenc::detail::cpu_prefers_l1_prefetch());
#endif
  CHECK(posenc::detail::decode_prefetch_l1() == posenc::detail::cpu_prefers_l1_prefetch());
}
