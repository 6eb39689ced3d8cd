// Vision RoPE against the Hugging Face code itself (tests/golden/vision_rope.json, gen_vision_rope.py:
// Pixtral, Qwen2-VL / Qwen2.5-VL windows / Qwen3-VL, Llama 4 with its class token, MiniMax-M3-VL's
// (t, h, w)), the patch-position builders against HF's, the bound encoder through sdpa, the
// backward as the transpose, and invalid inputs.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/rope/vision_rope.hpp>

#include "attention/attention_support.hpp"
#include "support/check.hpp"
#include "support/golden.hpp"

using posenc::tensor_view;
using posenc::vision_grid_thw;
using posenc::vision_positions;
using posenc::vision_rope;
using posenc::vision_rope_config;
using posenc_test::flatten;

namespace {

std::vector<vision_grid_thw> grids_of(const nlohmann::json& j) {
  std::vector<vision_grid_thw> g;
  for (const auto& x : j) g.push_back({x[0].get<std::int64_t>(), x[1].get<std::int64_t>(), x[2].get<std::int64_t>()});
  return g;
}

/// The case's positions (built by posenc, checked against HF's ids where the golden has them),
/// its encoder config, and the layout: tokens, heads, and whether heads come before tokens.
struct vision_case {
  vision_positions pos;
  vision_rope_config config;
  std::ptrdiff_t tokens = 0, heads = 0;
  bool heads_first = false;  // Pixtral's [1, heads, tokens, d]
};

vision_case build(const nlohmann::json& c) {
  vision_case v;
  const std::string conv = c.at("convention");
  const std::ptrdiff_t D = c.at("head_dim");
  const double theta = c.at("theta");
  v.heads = c.at("heads");
  if (conv == "pixtral") {
    std::vector<vision_grid_thw> g;
    for (const auto& hw : c.at("grids_hw")) g.push_back({1, hw[0].get<std::int64_t>(), hw[1].get<std::int64_t>()});
    v.pos = posenc::vision_raster_positions(g);
    const std::int64_t max_width = c.at("image_size").get<std::int64_t>() / c.at("patch_size").get<std::int64_t>();
    const auto ids = c.at("position_ids").get<std::vector<std::int64_t>>();  // HF: h * max_width + w
    REQUIRE(static_cast<std::ptrdiff_t>(ids.size()) == v.pos.size());
    for (std::size_t n = 0; n < ids.size(); ++n) CHECK(ids[n] == v.pos.h[n] * max_width + v.pos.w[n]);
    v.config = vision_rope_config::pixtral(D, theta);
    v.heads_first = true;
  } else if (conv == "qwen_vl" || conv == "minimax_m3_vl") {
    const auto g = grids_of(c.at("grid_thw"));
    const std::int64_t m = c.at("spatial_merge_size");
    v.pos = posenc::vision_merged_positions(g, m);
    const bool three = conv == "minimax_m3_vl";
    const auto ids = flatten(c.at(three ? "position_ids_thw" : "position_ids_hw"));
    REQUIRE(static_cast<std::ptrdiff_t>(ids.size()) == v.pos.size() * (three ? 3 : 2));
    for (std::ptrdiff_t n = 0; n < v.pos.size(); ++n) {
      const auto u = static_cast<std::size_t>(n);
      if (three) CHECK(static_cast<std::int64_t>(ids[3 * u]) == v.pos.t[u]);
      CHECK(static_cast<std::int64_t>(ids[(three ? 3 : 2) * u + (three ? 1 : 0)]) == v.pos.h[u]);
      CHECK(static_cast<std::int64_t>(ids[(three ? 3 : 2) * u + (three ? 2 : 1)]) == v.pos.w[u]);
    }
    if (c.contains("window_index")) {
      const auto w = posenc::vision_window_index(g, m, c.at("window_size"), c.at("patch_size"));
      CHECK(w.unit_order == c.at("window_index").get<std::vector<std::int64_t>>());
      CHECK(w.offsets == c.at("cu_window_seqlens").get<std::vector<std::int64_t>>());
      v.pos = posenc::permute_merge_units(v.pos, w.unit_order, m);
    }
    v.config = three ? vision_rope_config::minimax_m3_vl(D, theta) : vision_rope_config::qwen_vl(D, theta);
  } else {
    REQUIRE(conv == "llama4");
    v.pos = posenc::llama4_vision_positions(c.at("image_size").get<std::int64_t>() /
                                            c.at("patch_size").get<std::int64_t>());
    v.config = vision_rope_config::llama4(D, theta);
  }
  v.tokens = v.pos.size();
  return v;
}

/// x rotated by the encoder: [tokens, heads, d] (or Pixtral's [heads, tokens, d]) in T.
template <class T>
std::vector<double> rotate(const vision_rope& enc, const vision_case& v, const std::vector<double>& x) {
  std::vector<T> y(x.begin(), x.end());
  const std::ptrdiff_t D = enc.head_dim(), S = v.tokens, H = v.heads;
  // [1, S, H, D] with the strides of the golden layout
  const auto view =
      v.heads_first ? tensor_view<T>::bhtd(y.data(), 1, H, S, D) : tensor_view<T>::bthd(y.data(), 1, S, H, D);
  enc.transform_q(view, v.pos);
  return std::vector<double>(y.begin(), y.end());
}

}  // namespace

TEST_CASE(
    "vision rope: rotations equal HF for every convention (Pixtral, Qwen2-VL, Qwen2.5-VL windows, "
    "Qwen3-VL, Llama 4, MiniMax-M3-VL, images and video)",
    "[vision_rope][golden]") {
  const auto file = posenc_test::load_golden("vision_rope.json");
  int cases = 0;
  for (const auto& c : file.at("cases")) {
    ++cases;
    INFO(c.at("id").get<std::string>());
    const vision_case v = build(c);
    const auto x = flatten(c.at("x"));
    const auto& e = c.at("expected");
    REQUIRE(static_cast<std::ptrdiff_t>(x.size()) == v.tokens * v.heads * v.config.head_dim);
    // exact angles in double vs the reference promoted to float64 (positions < 100: ~1e-14 angles)
    POSENC_CHECK_CLOSE(rotate<double>(vision_rope(v.config), v, x), flatten(e.at("out_fp64full")), 1e-13, 0);
    // HF's float32 arithmetic in float vs the reference as written
    auto c32 = v.config;
    c32.angles = posenc::angle_mode::reference_fp32;
    POSENC_CHECK_CLOSE(rotate<float>(vision_rope(c32), v, x), flatten(e.at("out_fp32")), 2e-6, 0);
  }
  CHECK(cases == 10);
}

TEST_CASE("vision rope: pair assignments of each convention", "[vision_rope]") {
  const vision_rope px(vision_rope_config::pixtral(16));
  CHECK(px.rotary_dim() == 16);
  CHECK(px.inv_freq()[0] == 1.0);
  CHECK(px.inv_freq()[4] == Approx(std::pow(10000.0, -2.0 / 16)));  // first w pair: the odd frequency w_1
  CHECK(std::vector<unsigned char>(px.pair_axes().begin(), px.pair_axes().end()) ==
        std::vector<unsigned char>{1, 1, 1, 1, 2, 2, 2, 2});
  const vision_rope l4(vision_rope_config::llama4(16));
  CHECK(l4.geometry().layout == posenc::pairing::interleaved);
  CHECK(l4.position_offset() == 1);
  CHECK(l4.pair_axes()[0] == 2);  // the column first
  const vision_rope mm(vision_rope_config::minimax_m3_vl(80));
  CHECK(mm.rotary_dim() == 78);  // 3 x 26, two dims pass through
  CHECK(mm.pairs() == 39);
  CHECK(mm.pair_axes()[0] == 0);
  CHECK(mm.pair_axes()[13] == 1);
  CHECK(mm.pair_axes()[26] == 2);
}

TEST_CASE(
    "vision rope: the bound encoder in sdpa equals rotating q and k first (Qwen2.5-VL windows as "
    "segments), its backward the transpose",
    "[vision_rope]") {
  const std::vector<vision_grid_thw> grids{{2, 4, 6}};
  const auto win = posenc::vision_window_index(grids, 2, 56, 14);
  const auto pos = posenc::permute_merge_units(posenc::vision_merged_positions(grids, 2), win.unit_order, 2);
  const auto seg = posenc::vision_segments(win.offsets);
  const vision_rope enc(vision_rope_config::qwen_vl(8));
  const auto bound = enc.bind(pos);
  const std::ptrdiff_t S = pos.size(), H = 2, D = 8;
  auto q = posenc_test::random_values(static_cast<std::size_t>(S * H * D), 1);
  auto k = posenc_test::random_values(q.size(), 2);
  const auto v = posenc_test::random_values(q.size(), 3);
  std::vector<double> a(q.size()), b(q.size());
  const posenc::attention_options o{.query_segments = seg, .key_segments = seg};
  auto view = [&](const std::vector<double>& x) { return tensor_view<const double>::bthd(x.data(), 1, S, H, D); };
  posenc::sdpa(view(q), view(k), view(v), tensor_view<double>::bthd(a.data(), 1, S, H, D), bound, o);
  enc.transform_q(tensor_view<double>::bthd(q.data(), 1, S, H, D), pos);
  enc.transform_k(tensor_view<double>::bthd(k.data(), 1, S, H, D), pos);
  posenc::sdpa(view(q), view(k), view(v), tensor_view<double>::bthd(b.data(), 1, S, H, D), posenc::no_position{}, o);
  POSENC_CHECK_CLOSE(a, b, 0, 0);
  // <R x, y> == <x, R^T y>
  auto x = posenc_test::random_values(q.size(), 4), y = posenc_test::random_values(q.size(), 5);
  const auto x0 = x, y0 = y;
  std::vector<std::int64_t> idx(static_cast<std::size_t>(S));
  for (std::ptrdiff_t n = 0; n < S; ++n) idx[static_cast<std::size_t>(n)] = S - 1 - n;  // any order of the table
  bound.transform_k(tensor_view<double>::bthd(x.data(), 1, S, H, D), idx);
  bound.transform_k_backward(tensor_view<double>::bthd(y.data(), 1, S, H, D), idx);
  double lhs = 0, rhs = 0;
  for (std::size_t n = 0; n < x.size(); ++n) lhs += x[n] * y0[n], rhs += x0[n] * y[n];
  CHECK(lhs == Approx(rhs).epsilon(1e-14));
}

TEST_CASE("vision rope: frames, windows and segments", "[vision_rope]") {
  const std::vector<vision_grid_thw> grids{{2, 2, 3}, {1, 1, 2}};
  CHECK(posenc::vision_frame_offsets(grids) == std::vector<std::int64_t>{0, 6, 12, 14});
  CHECK(posenc::vision_segments(std::vector<std::int64_t>{0, 2, 2, 5}) == std::vector<std::int32_t>{0, 0, 2, 2, 2});
  const auto p = posenc::vision_raster_positions(grids);
  CHECK(p.t == std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0});
  CHECK(p.h == std::vector<std::int64_t>{0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0});
  const auto l4 = posenc::llama4_vision_positions(3);
  CHECK(l4.size() == 10);
  CHECK(l4.unrotated.back() == 1);
}

TEST_CASE("vision rope: invalid configurations and inputs are refused by name", "[vision_rope][invalid]") {
  using posenc_test::error_of;
  error_of([] { vision_rope(vision_rope_config::qwen_vl(10)); }, "vision_rope.head_dim");
  error_of([] { vision_rope(vision_rope_config::pixtral(7)); }, "vision_rope.head_dim");
  error_of([] { vision_rope(vision_rope_config::minimax_m3_vl(4)); }, "vision_rope.head_dim");
  error_of([] { vision_rope(vision_rope_config::llama4(16, 0.5)); }, "vision_rope.theta");
  const std::vector<vision_grid_thw> odd{{1, 3, 4}};
  error_of([&] { (void)posenc::vision_merged_positions(odd, 2); }, "vision.grid_thw");
  error_of([&] { (void)posenc::vision_merged_positions(odd, 0); }, "vision.spatial_merge_size");
  error_of([&] { (void)posenc::vision_window_index(odd, 1, 10, 14); }, "vision.window_size");
  const vision_rope enc(vision_rope_config::qwen_vl(8));
  const auto bound = enc.bind(posenc::vision_raster_positions(odd));
  std::vector<double> x(2 * 8, 0.5);
  const std::vector<std::int64_t> beyond{0, 12};
  error_of([&] { bound.transform_q(tensor_view<double>::bthd(x.data(), 1, 2, 1, 8), beyond); }, "vision_rope.position");
  vision_positions broken;
  broken.t = {0};
  error_of([&] { (void)enc.bind(broken); }, "vision_positions");
  const std::vector<std::int64_t> too_few{0};
  posenc_test::refused<posenc::shape_error>(
      [&] { bound.transform_q(tensor_view<double>::bthd(x.data(), 1, 2, 1, 8), too_few); }, "positions");
}
