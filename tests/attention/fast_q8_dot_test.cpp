// tests/attention/fast_q8_dot_test.cpp — the vpdpbusd key kernels for q8_0 keys (AVX512_VNNI:
// fast/x86/avx512_vnni-inl.hpp; AVX-VNNI on the AVX2 kernels: fast/x86/avx2_vnni.hpp), chosen by
// fast_attention_options::q8_0_int8_dot_products (on by default): on each ISA whose kernels have one
// here, decode over q8_0 K equals sdpa on the query quantised as documented (one scale per row,
// max |q| / 127, quants rounded to nearest, ties to even) and the dequantised K/V within the float
// bound 5e-7 (1 + A) max |v|, so the integer products are exact and the quantisation is the documented
// one; against sdpa on the fp32 query the error is above the float bound (the default took the int8
// path) and within (exp(2 delta) - 1) max |v|; {.q8_0_int8_dot_products = false} keeps the float
// bound; a query row holding Inf or NaN gives a NaN output row and leaves the others' bits. Skipped on
// CPUs with neither instruction.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/kernels/isa.hpp>

#include "fast_support.hpp"
#include "support/skip.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

/// The ISAs whose kernels have the vpdpbusd key form on this CPU (AVX512_VNNI, AVX-VNNI).
std::vector<isa> q8_dot_isas() {
  std::vector<isa> r;
  for (const isa i : {isa::avx512, isa::avx2})
    if (posenc::kernels::isa_supported(i) && posenc::kernels::attention_kernels_for(i).q8_0_dot.usable())
      r.push_back(i);
  return r;
}

/// fast_inputs whose K (and V when `qv`) are q8_0 blocks; kd / vd hold the dequantised values.
struct q8_case {
  fast_inputs<float> in;
  std::vector<posenc::block_q8_0> kq, vq;
  q8_case(fast_shape s, std::uint64_t seed, bool qv) : in(s, seed) {
    auto quant = [](std::vector<float>& x, std::vector<double>& xd, std::vector<posenc::block_q8_0>& q) {
      q.resize(x.size() / 32);
      posenc::q8_0::quantize_row_ref(x.data(), q.data(), static_cast<std::ptrdiff_t>(x.size()));
      posenc::q8_0::dequantize_row_ref(q.data(), x.data(), static_cast<std::ptrdiff_t>(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i) xd[i] = x[i];
    };
    quant(in.k, in.kd, kq);
    if (qv) quant(in.v, in.vd, vq);
  }
  [[nodiscard]] std::vector<float> run(const auto& enc, const posenc::attention_options& o,
                                       const posenc::fast_attention_options& f) const {
    const auto& s = in.s;
    std::vector<float> out(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), -7.0f);
    using cv = posenc::tensor_view<const float>;
    using c8 = posenc::tensor_view<const posenc::block_q8_0>;
    const auto q = cv::bthd(in.q.data(), s.B, s.Sq, s.Hq, s.D);
    const auto k = c8::bthd(kq.data(), s.B, s.Sk, s.Hkv, s.D / 32);
    const auto ov = posenc::tensor_view<float>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv);
    if (vq.empty())
      posenc::attention(q, k, cv::bthd(in.v.data(), s.B, s.Sk, s.Hkv, s.Dv), ov, enc, o, f);
    else
      posenc::attention(q, k, c8::bthd(vq.data(), s.B, s.Sk, s.Hkv, s.Dv / 32), ov, enc, o, f);
    return out;
  }
};

/// q as the kernel quantises it (fast/x86/avx512_vnni-inl.hpp), dequantised: per row of D values,
/// d = max |q| / 127 in fp32, quants round(q / d) to nearest, ties to even.
std::vector<double> quantised_q(const std::vector<float>& q, std::ptrdiff_t D) {
  std::vector<double> y(q.size());
  const auto n = static_cast<std::size_t>(D);
  for (std::size_t b = 0; b < q.size(); b += n) {
    float m = 0;
    for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(q[b + i]));
    const float d = m / 127.0f;
    for (std::size_t i = 0; i < n; ++i)
      y[b + i] = d > 0 ? static_cast<double>(std::nearbyint(q[b + i] / d)) * static_cast<double>(d) : 0.0;
  }
  return y;
}

double worst_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double w = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    w = std::max(w, std::isfinite(got[i]) ? std::fabs(static_cast<double>(got[i]) - ref[i]) : INFINITY);
  return w;
}

/// The int8 key path of ISA `which` against sdpa (the first test case below).
void check_dot_path(isa which) {
  posenc::kernels::scoped_isa use(which);
  REQUIRE(use.active());
  const posenc::fast_attention_options dot{};
  const posenc::fast_attention_options exact{.q8_0_int8_dot_products = false};
  // decode shapes (the in-place path), D = 32 / 96 (a last single block) and 64 / 128 / 256, GQA 1 / 4 / 8,
  // key counts not a multiple of 4, key chunks, q8_0 or float values
  const fast_shape decode_shapes[] = {{.B = 1, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
                                      {.B = 2, .Sq = 1, .Sk = 77, .Hq = 8, .Hkv = 1, .D = 64, .Dv = 64},
                                      {.B = 1, .Sq = 3, .Sk = 130, .Hq = 2, .Hkv = 2, .D = 32, .Dv = 96},
                                      {.B = 1, .Sq = 1, .Sk = 4500, .Hq = 4, .Hkv = 1, .D = 96, .Dv = 32},
                                      {.B = 1, .Sq = 1, .Sk = 45, .Hq = 8, .Hkv = 1, .D = 256, .Dv = 64}};
  std::uint64_t seed = 40;
  double worst_fp32_q = 0;
  for (const auto& s : decode_shapes)
    for (const bool causal : {false, true})
      for (const bool qv : {false, true}) {
        const q8_case c(s, ++seed, qv);
        fast_masks m;
        m.causal = causal;
        if (!causal) m.lengths.assign(static_cast<std::size_t>(s.B), s.Sk - 5);
        const auto o = m.options();
        const posenc::attention_mask mask(o, s.B, s.Sq, s.Sk);
        const double vmax = c.in.vmax();
        fast_inputs<float> hat = c.in;  // the oracle's inputs with the quantised query
        hat.qd = quantised_q(c.in.q, s.D);
        for (const int enc : {0, 1}) {
          const posenc::alibi alibi({.num_heads = static_cast<int>(s.Hq)});
          const auto got = enc == 0 ? c.run(posenc::no_position{}, o, dot) : c.run(alibi, o, dot);
          const auto ref_hat = enc == 0 ? run_oracle(hat, posenc::no_position{}, o) : run_oracle(hat, alibi, o);
          const auto ref = enc == 0 ? run_oracle(c.in, posenc::no_position{}, o) : run_oracle(c.in, alibi, o);
          const double A =
              enc == 0 ? logit_bound(hat, posenc::no_position{}, o, mask) : logit_bound(hat, alibi, o, mask);
          const double e_hat = worst_error(got, ref_hat), e = worst_error(got, ref);
          // the documented logit bound of q's quantisation, from the 2-norms: scale |q| sqrt(D) |k| / 254
          double qn = 0, kn = 0;
          for (std::size_t r = 0; r < c.in.qd.size(); r += static_cast<std::size_t>(s.D)) {
            double n = 0;
            for (std::ptrdiff_t i = 0; i < s.D; ++i)
              n += c.in.qd[r + static_cast<std::size_t>(i)] * c.in.qd[r + static_cast<std::size_t>(i)];
            qn = std::max(qn, std::sqrt(n));
          }
          for (std::size_t r = 0; r < c.in.kd.size(); r += static_cast<std::size_t>(s.D)) {
            double n = 0;
            for (std::ptrdiff_t i = 0; i < s.D; ++i)
              n += c.in.kd[r + static_cast<std::size_t>(i)] * c.in.kd[r + static_cast<std::size_t>(i)];
            kn = std::max(kn, std::sqrt(n));
          }
          const double delta = qn * kn / 254;  // scale 1 / sqrt(D) times sqrt(D)
          INFO(posenc::kernels::isa_name(which)
               << " Sq " << s.Sq << " Sk " << s.Sk << " Hq " << s.Hq << " Hkv " << s.Hkv << " D " << s.D << " Dv "
               << s.Dv << " causal " << causal << " q8_0 V " << qv << " alibi " << enc << ": against the quantised q "
               << e_hat / ((1 + A) * vmax) << ", against fp32 q " << e << " (bound " << std::expm1(2 * delta) * vmax
               << ")");
          CHECK(e_hat <= fast_bound * (1 + A) * vmax);
          CHECK(e <= (std::expm1(2 * delta) + fast_bound * (1 + A)) * vmax);
          worst_fp32_q = std::max(worst_fp32_q, e / ((1 + A) * vmax));
          // the widening kernels, asked for, keep the float bound against the fp32 query
          const auto ex = enc == 0 ? c.run(posenc::no_position{}, o, exact) : c.run(alibi, o, exact);
          CHECK(worst_error(ex, ref) <= fast_bound * (1 + A) * vmax);
        }
      }
  INFO(posenc::kernels::isa_name(which) << ": worst against the fp32 query " << worst_fp32_q);
  CHECK(worst_fp32_q > fast_bound);  // the default took the int8 products: q's quantisation shows
}

}  // namespace

TEST_CASE("q8_0_int8_dot_products (the default): decode over q8_0 keys is sdpa on the quantised query",
          "[fast][q8_0][q8dot]") {
  const auto isas = q8_dot_isas();
  if (isas.empty()) POSENC_SKIP("this CPU has neither AVX512_VNNI nor AVX-VNNI (the widening kernels run)");
  for (const isa which : isas) check_dot_path(which);
}

TEST_CASE("q8_0_int8_dot_products: a query row holding Inf or NaN gives a NaN row, the other rows as before",
          "[fast][q8_0][q8dot]") {
  const auto isas = q8_dot_isas();
  if (isas.empty()) POSENC_SKIP("this CPU has neither AVX512_VNNI nor AVX-VNNI");
  for (const isa which : isas) {
    posenc::kernels::scoped_isa use(which);
    INFO(posenc::kernels::isa_name(which));
    const fast_shape s{.B = 1, .Sq = 1, .Sk = 70, .Hq = 4, .Hkv = 1, .D = 64, .Dv = 64};
    for (const float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      q8_case c(s, 3, true);
      const auto clean = c.run(posenc::no_position{}, {.causal = true}, {});
      c.in.q[static_cast<std::size_t>(s.D + 5)] = bad;  // head 1
      const auto got = c.run(posenc::no_position{}, {.causal = true}, {});
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": " << got[i] << " / without the bad value " << clean[i]);
        if (i / static_cast<std::size_t>(s.Dv) == 1)
          CHECK(std::isnan(got[i]));
        else  // rows are independent: the other heads' bits do not change
          CHECK(std::memcmp(&got[i], &clean[i], sizeof(float)) == 0);
      }
    }
  }
}
