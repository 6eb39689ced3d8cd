// tests/attention/fused_support.hpp — the setup the fused-encoder tests share: every ISA this build
// and CPU run, the fused forward against sdpa on each of them, and posenc::attention_backward (after the forward, for
// its log-sum-exp) against sdpa_backward on the same float inputs, every gradient within 1e-6 (1 + A) max |oracle|
// (attention/attention_backward.hpp), A bounding max |logit|.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/kernels/isa.hpp>

#include "fast_support.hpp"

namespace posenc_test {

/// The ISAs the tests run the fused path on: scalar and every SIMD target this CPU has.
inline std::vector<posenc::kernels::isa> every_fused_isa() {
  using posenc::kernels::isa;
  std::vector<isa> r{isa::scalar};
  for (isa i : {isa::avx2, isa::avx512, isa::neon})
    if (posenc::kernels::isa_supported(i)) r.push_back(i);
  return r;
}

/// The fused forward against sdpa on every ISA within fast_bound (1 + A) vmax, and (so the comparison
/// sees the encoder's term) sdpa with `without_term` — the same encoder with its term removed — moved
/// by more than 1000 times that bound.
template <class E>
void compare_forward(const fast_inputs<float>& in, const E& enc, const E& without_term, const fast_masks& m,
                     const posenc::fast_attention_options& tiles) {
  const auto o = m.options();
  const auto ref = run_oracle(in, enc, o);
  const posenc::attention_mask mask(o, in.s.B, in.s.Sq, in.s.Sk);
  const double unit = (1 + logit_bound(in, enc, o, mask)) * in.vmax();
  const auto other = run_oracle(in, without_term, o);
  double moved = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) moved = std::max(moved, std::fabs(other[i] - ref[i]));
  CHECK(moved > 1000 * fast_bound * unit);
  for (const auto which : every_fused_isa()) {
    posenc::kernels::scoped_isa use(which);
    const auto got = run_fast(in, enc, o, tiles);
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
      worst = std::max(worst, std::isfinite(got[i]) ? std::fabs(static_cast<double>(got[i]) - ref[i]) : INFINITY);
    INFO("on " << posenc::kernels::isa_name(which) << ": error / ((1 + A) vmax) = " << worst / unit);
    CHECK(worst <= fast_bound * unit);
  }
}

/// The fused forward and backward of one call: out, lse, dq, dk, dv and the encoder's gradient.
struct fused_gradients {
  std::vector<float> out, lse, dq, dk, dv;
  std::vector<double> params;
};

template <class E>
fused_gradients run_fused_backward(const fast_inputs<float>& in, const std::vector<float>& dout, const E& enc,
                                   const posenc::attention_options& o, std::size_t n_params,
                                   posenc::fast_attention_options f = {}) {
  const fast_shape& s = in.s;
  using fview = posenc::tensor_view<const float>;
  using view = posenc::tensor_view<float>;
  fused_gradients r;
  r.out.resize(dout.size());
  r.lse.resize(static_cast<std::size_t>(s.B * s.Hq * s.Sq));
  r.dq.resize(in.q.size()), r.dk.resize(in.k.size()), r.dv.resize(in.v.size());
  r.params.assign(n_params, 0.0);
  const auto q = fview::bthd(in.q.data(), s.B, s.Sq, s.Hq, s.D), k = fview::bthd(in.k.data(), s.B, s.Sk, s.Hkv, s.D),
             v = fview::bthd(in.v.data(), s.B, s.Sk, s.Hkv, s.Dv);
  f.log_sum_exp = r.lse;
  posenc::attention(q, k, v, view::bthd(r.out.data(), s.B, s.Sq, s.Hq, s.Dv), enc, o, f);
  f.log_sum_exp = {};
  posenc::attention_backward(q, k, v, fview::bthd(r.out.data(), s.B, s.Sq, s.Hq, s.Dv), std::span<const float>(r.lse),
                             fview::bthd(dout.data(), s.B, s.Sq, s.Hq, s.Dv),
                             view::bthd(r.dq.data(), s.B, s.Sq, s.Hq, s.D),
                             view::bthd(r.dk.data(), s.B, s.Sk, s.Hkv, s.D),
                             view::bthd(r.dv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o, {.encoder = r.params}, f);
  return r;
}

/// The fused backward against sdpa_backward on the same float inputs (seed 7, |q|, |k| x 1.5, a
/// random dout): dq, dk, dv and the encoder's gradient (when n_params > 0) within 1e-6 (1 + A) max
/// |oracle|, each oracle gradient nonzero.
template <class E>
void compare_backward(const fast_shape& s, const E& enc, const posenc::attention_options& o, std::size_t n_params,
                      const posenc::fast_attention_options& f = {}) {
  const fast_inputs<float> in(s, 7, 1.5);
  const auto dout = random_values(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), 8);
  const std::vector<float> doutf(dout.begin(), dout.end());
  const std::vector<double> doutd(doutf.begin(), doutf.end());
  using dview = posenc::tensor_view<const double>;
  using view = posenc::tensor_view<double>;
  const fused_gradients got = run_fused_backward(in, doutf, enc, o, n_params, f);
  std::vector<double> rq(in.qd.size()), rk(in.kd.size()), rv(in.vd.size()), gd(n_params, 0.0);
  posenc::sdpa_backward(
      dview::bthd(in.qd.data(), s.B, s.Sq, s.Hq, s.D), dview::bthd(in.kd.data(), s.B, s.Sk, s.Hkv, s.D),
      dview::bthd(in.vd.data(), s.B, s.Sk, s.Hkv, s.Dv), dview::bthd(doutd.data(), s.B, s.Sq, s.Hq, s.Dv),
      view::bthd(rq.data(), s.B, s.Sq, s.Hq, s.D), view::bthd(rk.data(), s.B, s.Sk, s.Hkv, s.D),
      view::bthd(rv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o, {.encoder = gd});
  const posenc::attention_mask mask(o, s.B, s.Sq, s.Sk);
  const double A = logit_bound(in, enc, o, mask);
  auto near = [&](const auto& g, const std::vector<double>& want, const char* what) {
    double mx = 0, worst = 0;
    for (double w : want) mx = std::max(mx, std::fabs(w));
    for (std::size_t n = 0; n < want.size(); ++n)
      worst = std::max(
          worst, std::isfinite(static_cast<double>(g[n])) ? std::fabs(static_cast<double>(g[n]) - want[n]) : INFINITY);
    INFO(what << ": max |fused - oracle| = " << worst << ", max |oracle| = " << mx << ", A <= " << A);
    CHECK(worst <= 1e-6 * (1 + A) * mx);
    CHECK(mx > 0);
  };
  near(got.dq, rq, "dq");
  near(got.dk, rk, "dk");
  near(got.dv, rv, "dv");
  if (n_params > 0) near(got.params, gd, "encoder parameters");
}

}  // namespace posenc_test
