// Each encoder models exactly the hook concepts of its family (docs/design.md §3). Later encoders add a
// line here; the static_asserts fail to compile if an encoder gains or loses a hook.
#include <catch2/catch.hpp>

#include <posenc/posenc.hpp>

using namespace posenc;

static_assert(positional_encoding<no_position>);
static_assert(hooks_of<no_position> == hook_none);

TEST_CASE("hook sets are as declared", "[concepts]") {
  CHECK(hooks_of<no_position> == hook_none);
  CHECK(std::string(no_position::name()) == "none");
}

// Absolute encoders (hook 1).
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/sinusoidal.hpp>
static_assert(hooks_of<learned_absolute> == hook_additive);
static_assert(hooks_of<sinusoidal> == hook_additive);

// Relative key/value encoders (hook 4).
#include <posenc/encoders/shaw.hpp>
static_assert(hooks_of<shaw_relative> == hook_relative_kv);

// Score-bias encoders (hook 3).
#include <posenc/encoders/t5.hpp>
static_assert(hooks_of<t5_bias> == hook_score_bias);
#include <posenc/encoders/alibi.hpp>
static_assert(hooks_of<alibi> == hook_score_bias);

// q/k transform encoders (hook 2).
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>
static_assert(hooks_of<rope> == hook_qk_transform);
static_assert(has_softmax_scale_multiplier<rope>);
static_assert(hooks_of<xpos> == hook_qk_transform);
static_assert(!has_softmax_scale_multiplier<xpos>);
