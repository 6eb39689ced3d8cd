// The encoders of hooks 2 and 3 added with DeBERTa and CoPE — FIRE and KERPLE (score biases) and
// vision RoPE bound to a patch table (q/k transform) — through posenc::attention and
// attention_backward (the fused path) against sdpa / sdpa_backward, within the documented bounds
// (attention.hpp; attention_backward.hpp: 1e-6 (1 + A) max |oracle|). DeBERTa and CoPE (hooks 5, 6)
// have their own tests (fused_deberta_test.cpp, fused_cope_test.cpp); the trait the fused entries'
// static_asserts read is checked here.
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

#include "fused_support.hpp"

using posenc::tensor_view;
using namespace posenc_test;

static_assert(posenc::fused_attention_supports<posenc::deberta_relative>);
static_assert(posenc::fused_attention_supports<posenc::cope>);
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
