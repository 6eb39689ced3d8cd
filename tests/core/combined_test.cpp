// combined<A, B> models the union of its parts' hooks and adds/chains their effects.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/concepts.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>

using namespace posenc;

namespace {

struct bias_a {  // b = h + 10 * (i - j)
  std::ptrdiff_t heads = 2;
  [[nodiscard]] std::string_view name() const { return "a"; }
  [[nodiscard]] std::ptrdiff_t num_heads() const { return heads; }
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const {
    return static_cast<double>(h) + 10.0 * static_cast<double>(i - j);
  }
};

struct shift_qk {  // adds the position to q and twice the position to k
  [[nodiscard]] std::string_view name() const { return "shift"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const { return 2; }
  template <class T>
  void apply(tensor_view<T> x, std::span<const std::int64_t> pos, double mul) const {
    for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
        for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
          for (std::ptrdiff_t d = 0; d < x.dim(); ++d)
            x(b, t, h, d) +=
                static_cast<T>(mul * static_cast<double>(pos[static_cast<std::size_t>(b * x.tokens() + t)]));
  }
  template <class T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t> pos) const {
    apply(q, pos, 1);
  }
  template <class T>
  void transform_k(tensor_view<T> k, std::span<const std::int64_t> pos) const {
    apply(k, pos, 2);
  }
};

struct scale_qk {  // multiplies q by 3
  [[nodiscard]] std::string_view name() const { return "scale"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const { return 2; }
  double softmax_scale_multiplier() const { return 1.5; }
  template <class T>
  void transform_q(tensor_view<T> q, std::span<const std::int64_t>) const {
    for (std::ptrdiff_t t = 0; t < q.tokens(); ++t)
      for (std::ptrdiff_t d = 0; d < q.dim(); ++d) q(0, t, 0, d) *= T(3);
  }
  template <class T>
  void transform_k(tensor_view<T>, std::span<const std::int64_t>) const {}
};

}  // namespace

static_assert(hooks_of<bias_a> == hook_score_bias);
static_assert(hooks_of<shift_qk> == hook_qk_transform);
static_assert(hooks_of<combined<bias_a, shift_qk>> == (hook_score_bias | hook_qk_transform));
static_assert(hooks_of<combined<no_position, bias_a>> == hook_score_bias);
static_assert(hooks_of<combined<no_position, no_position>> == hook_none);
static_assert(!has_softmax_scale_multiplier<combined<bias_a, shift_qk>>);
static_assert(has_softmax_scale_multiplier<combined<scale_qk, bias_a>>);

TEST_CASE("combined adds score biases and names both parts", "[combined]") {
  const auto c = combine(bias_a{}, bias_a{});
  CHECK(c.name() == "a+a");
  CHECK(c.bias(1, 5, 3) == 2 * (1 + 20.0));
  CHECK_THROWS_WITH(combine(bias_a{2}, bias_a{3}), Catch::Contains("combined.num_heads") && Catch::Contains("3"));
}

TEST_CASE("combined applies q/k transforms first then second", "[combined]") {
  const auto c = combine(shift_qk{}, scale_qk{});  // q: (x + p) * 3
  std::vector<double> q{1, 1, 1, 1};
  const std::vector<std::int64_t> pos{2, 5};
  c.transform_q(tensor_view<double>::thd(q.data(), 2, 1, 2), pos);
  CHECK(q == std::vector<double>{9, 9, 18, 18});
  const auto r = combine(scale_qk{}, shift_qk{});  // q: x * 3 + p
  std::vector<double> q2{1, 1, 1, 1};
  r.transform_q(tensor_view<double>::thd(q2.data(), 2, 1, 2), pos);
  CHECK(q2 == std::vector<double>{5, 5, 8, 8});
  CHECK(r.softmax_scale_multiplier() == 1.5);
}
