// The encoders of hooks 2 and 3 added with DeBERTa and CoPE — FIRE and KERPLE (score biases) and
// vision RoPE bound to a patch table (q/k transform) — through posenc::attention and
// attention_backward (the fused path) against sdpa / sdpa_backward, within the documented bounds
// (attention.hpp; attention_backward.hpp: 1e-6 (1 + A) max |oracle|). DeBERTa and CoPE (hooks 5,
// 6) are computed by sdpa only: the fused entries refuse them at compile time (checked here as the
// trait the static_asserts read).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/vision_rope.hpp>

#include "fast_support.hpp"

using posenc::tensor_view;
using namespace posenc_test;

static_assert(posenc::fused_attention_supports<posenc::deberta_relative>);
static_assert(!posenc::fused_attention_supports<posenc::cope>);
static_assert(posenc::fused_attention_supports<posenc::combined<posenc::rope, posenc::deberta_relative>>);
static_assert(posenc::fused_attention_supports<posenc::fire>);
static_assert(posenc::fused_attention_supports<posenc::kerple>);
static_assert(posenc::fused_attention_supports<posenc::vision_rope_bound>);

namespace {

posenc::fire make_fire(std::ptrdiff_t heads) {
  const posenc::fire_config cfg{.num_heads = heads, .mlp_width = 8};
  auto p = random_values(static_cast<std::size_t>(cfg.parameter_count()), 31);
  p[0] = 0.3;
  p[1] = 20;  // L below the call's positions for some queries
  return posenc::fire(cfg, p);
}

posenc::kerple make_kerple(std::ptrdiff_t heads, posenc::kerple_kernel k) {
  return posenc::kerple({.kernel = k, .num_heads = heads}, random_values(static_cast<std::size_t>(heads), 32),
                        random_values(static_cast<std::size_t>(heads), 33));  // projected to >= 0.01
}

posenc::vision_rope_bound make_vision(std::ptrdiff_t tokens, std::ptrdiff_t D) {
  const std::array<posenc::vision_grid_thw, 1> g{{{1, 2, tokens / 2}}};
  return posenc::vision_rope(posenc::vision_rope_config::qwen_vl(D)).bind(posenc::vision_merged_positions(g, 1));
}

/// posenc::attention_backward (after the forward, for its log-sum-exp) against sdpa_backward on the
/// same float inputs: every gradient within 1e-6 (1 + A) max |oracle|, A bounding max |logit|.
template <class E>
void compare_backward(const fast_shape& s, const E& enc, const posenc::attention_options& o, std::size_t n_params) {
  const fast_inputs<float> in(s, 7, 1.5);
  const auto dout = random_values(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), 8);
  const std::vector<float> doutf(dout.begin(), dout.end());
  const std::vector<double> doutd(doutf.begin(), doutf.end());
  using fview = tensor_view<const float>;
  using dview = tensor_view<const double>;
  std::vector<float> out(doutf.size()), lse(static_cast<std::size_t>(s.B * s.Hq * s.Sq));
  std::vector<float> dq(in.q.size()), dk(in.k.size()), dv(in.v.size());
  std::vector<double> g(n_params, 0.0), gd(n_params, 0.0);
  const auto q = fview::bthd(in.q.data(), s.B, s.Sq, s.Hq, s.D), k = fview::bthd(in.k.data(), s.B, s.Sk, s.Hkv, s.D),
             v = fview::bthd(in.v.data(), s.B, s.Sk, s.Hkv, s.Dv);
  posenc::attention(q, k, v, tensor_view<float>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv), enc, o, {.log_sum_exp = lse});
  posenc::attention_backward(q, k, v, fview::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv), std::span<const float>(lse),
                             fview::bthd(doutf.data(), s.B, s.Sq, s.Hq, s.Dv),
                             tensor_view<float>::bthd(dq.data(), s.B, s.Sq, s.Hq, s.D),
                             tensor_view<float>::bthd(dk.data(), s.B, s.Sk, s.Hkv, s.D),
                             tensor_view<float>::bthd(dv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o, {.encoder = g});
  std::vector<double> rq(in.qd.size()), rk(in.kd.size()), rv(in.vd.size());
  posenc::sdpa_backward(
      dview::bthd(in.qd.data(), s.B, s.Sq, s.Hq, s.D), dview::bthd(in.kd.data(), s.B, s.Sk, s.Hkv, s.D),
      dview::bthd(in.vd.data(), s.B, s.Sk, s.Hkv, s.Dv), dview::bthd(doutd.data(), s.B, s.Sq, s.Hq, s.Dv),
      tensor_view<double>::bthd(rq.data(), s.B, s.Sq, s.Hq, s.D),
      tensor_view<double>::bthd(rk.data(), s.B, s.Sk, s.Hkv, s.D),
      tensor_view<double>::bthd(rv.data(), s.B, s.Sk, s.Hkv, s.Dv), enc, o, {.encoder = gd});
  const posenc::attention_mask mask(o, s.B, s.Sq, s.Sk);
  const double A = logit_bound(in, enc, o, mask);
  auto near = [&](const auto& got, const std::vector<double>& want, const char* what) {
    double mx = 0, worst = 0;
    for (double w : want) mx = std::max(mx, std::fabs(w));
    for (std::size_t n = 0; n < want.size(); ++n)
      worst = std::max(worst, std::fabs(static_cast<double>(got[n]) - want[n]));
    INFO(what << ": max |fused - oracle| = " << worst << ", max |oracle| = " << mx << ", A <= " << A);
    CHECK(worst <= 1e-6 * (1 + A) * mx);
    CHECK(mx > 0);
  };
  near(dq, rq, "dq");
  near(dk, rk, "dk");
  near(dv, rv, "dv");
  if (n_params > 0) near(g, gd, "encoder parameters");
}

}  // namespace

TEST_CASE("attention: FIRE, KERPLE and bound vision RoPE through the fused path equal sdpa within the bound",
          "[fast][encoders]") {
  const fast_shape s{.B = 2, .Sq = 40, .Sk = 70, .Hq = 4, .Hkv = 2, .D = 32, .Dv = 24};
  const fast_inputs<float> in(s, 11, 1.5);
  fast_masks causal;
  causal.causal = true;
  fast_masks window = causal;
  window.window = 17;
  for (const fast_masks& m : {causal, window}) {
    INFO("window " << m.window.value_or(0));
    CHECK(fast_error(in, make_fire(4), m) <= fast_bound);
    CHECK(fast_error(in, make_kerple(4, posenc::kerple_kernel::logarithmic), m) <= fast_bound);
    CHECK(fast_error(in, make_kerple(4, posenc::kerple_kernel::power), m) <= fast_bound);
  }
  // vision towers are bidirectional; positions index the bound table (Sq = Sk)
  const fast_shape vs{.B = 1, .Sq = 48, .Sk = 48, .Hq = 4, .Hkv = 4, .D = 32, .Dv = 32};
  const fast_inputs<float> vin(vs, 12, 1.5);
  fast_masks none;
  CHECK(fast_error(vin, make_vision(48, 32), none) <= fast_bound);
  CHECK(fast_error(vin, posenc::combine(make_vision(48, 32), make_kerple(4, posenc::kerple_kernel::power)), none) <=
        fast_bound);
}

TEST_CASE("attention_backward: FIRE and KERPLE parameters, bound vision RoPE inputs, against sdpa_backward",
          "[fast][encoders][backward]") {
  const fast_shape s{.B = 2, .Sq = 30, .Sk = 45, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 16};
  const auto fire = make_fire(4);
  const auto kerple = make_kerple(4, posenc::kerple_kernel::logarithmic);
  compare_backward(s, fire, {.causal = true}, static_cast<std::size_t>(fire.parameter_count()));
  compare_backward(s, kerple, {.causal = true, .sliding_window = 20},
                   static_cast<std::size_t>(kerple.parameter_count()));
  const fast_shape vs{.B = 1, .Sq = 24, .Sk = 24, .Hq = 2, .Hkv = 2, .D = 16, .Dv = 16};
  compare_backward(vs, make_vision(24, 16), {}, 0);
}
