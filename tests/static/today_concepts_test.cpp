// The encoders of today's models model exactly their hooks: mRoPE (plain and bound) and the attention
// temperature transform q/k; combined with RoPE the temperature keeps a single hook.
#include <catch2/catch.hpp>

#include <posenc/config/layer_encoder.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/mrope.hpp>

using namespace posenc;

static_assert(hooks_of<mrope> == hook_qk_transform);
static_assert(has_softmax_scale_multiplier<mrope>);
static_assert(hooks_of<mrope_bound> == hook_qk_transform);
static_assert(hooks_of<attention_temperature> == hook_qk_transform);
static_assert(!has_softmax_scale_multiplier<attention_temperature>);
static_assert(hooks_of<combined<rope, attention_temperature>> == hook_qk_transform);
static_assert(std::variant_size_v<layer_encoder> == 6);

TEST_CASE("issue-12 encoders model exactly the query/key transform hook", "[static]") {
  CHECK(mrope::name() == "mrope");
  CHECK(attention_temperature::name() == "temperature");
}
