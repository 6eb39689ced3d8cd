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

// DeBERTa (hooks 4 and 5: c2p and p2c, in distance form, trainable, with the scale rule).
#include <posenc/encoders/deberta.hpp>
static_assert(hooks_of<deberta_relative> == (hook_relative_kv | hook_relative_query));
static_assert(distance_relative_kv_encoding<deberta_relative> && distance_relative_query_encoding<deberta_relative>);
static_assert(trainable_relative_kv_encoding<deberta_relative> && trainable_relative_query_encoding<deberta_relative>);
static_assert(has_softmax_scale_multiplier<deberta_relative>);

// CoPE (hook 6, with its backward, trainable).
#include <posenc/encoders/cope.hpp>
static_assert(hooks_of<cope> == hook_contextual_position);
static_assert(trainable_contextual_position_encoding<cope>);

// FIRE and KERPLE (hook 3, trainable; KERPLE in distance form).
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>
static_assert(hooks_of<fire> == hook_score_bias && trainable_score_bias_encoding<fire> &&
              !distance_bias_encoding<fire>);
static_assert(hooks_of<kerple> == hook_score_bias && trainable_score_bias_encoding<kerple> &&
              distance_bias_encoding<kerple>);

// Vision RoPE: the bound encoder is hook 2 with its backward; the unbound one takes explicit grids.
#include <posenc/rope/vision_rope.hpp>
static_assert(hooks_of<vision_rope_bound> == hook_qk_transform && qk_transform_backward_encoding<vision_rope_bound>);
static_assert(hooks_of<vision_rope> == hook_none);

// Composition carries hooks 5 and 6; two of either cannot be combined.
#include <posenc/encoders/combined.hpp>
static_assert(hooks_of<combined<rope, deberta_relative>> ==
              (hook_qk_transform | hook_relative_kv | hook_relative_query));
static_assert(hooks_of<combined<alibi, cope>> == (hook_score_bias | hook_contextual_position));
static_assert(trainable_contextual_position_encoding<combined<alibi, cope>>);
static_assert(trainable_relative_query_encoding<combined<alibi, deberta_relative>>);
template <class A, class B>
concept combinable = requires {
  typename combined<A, B>;
};
static_assert(!combinable<deberta_relative, deberta_relative> && !combinable<cope, cope>);
