// mRoPE (rope/mrope.hpp) and its position ids (rope/mrope_index.hpp): mrope.json golden cases at
// the README tolerances, text-only == plain RoPE bit for bit, relative invariance per stream,
// prefill == decode through the KV cache for a text+image prompt, and every invalid input.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/mrope_index.hpp>

#include "support/check.hpp"
#include "support/golden.hpp"

using namespace posenc;
using posenc_test::flatten;

namespace {

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

template <class T>
std::vector<T> as(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

mrope_config qwen2vl_7b(angle_mode mode = angle_mode::exact) {
  return {.rope = {.head_dim = 128, .theta = 1000000.0, .angles = mode}, .section = {16, 24, 24}};
}

/// Rotates x [P][D] (one head) with explicit streams, returns doubles.
template <class T>
std::vector<double> run_streams(const mrope& enc, const std::vector<double>& x, const std::vector<std::int64_t>& t,
                                const std::vector<std::int64_t>& h, const std::vector<std::int64_t>& w) {
  auto buf = as<T>(x);
  const auto P = static_cast<std::ptrdiff_t>(t.size());
  enc.transform_q(tensor_view<T>::bthd(buf.data(), 1, P, 1, enc.head_dim()), mrope_streams{t, h, w});
  return std::vector<double>(buf.begin(), buf.end());
}

}  // namespace

TEST_CASE("mrope.json contiguous apply (Qwen2-VL 7B) at the README tolerances", "[rope][mrope][golden]") {
  const auto file = posenc_test::load_golden("mrope.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "apply") continue;
    ++n;
    INFO(c.at("id").get<std::string>());
    const auto sec = c.at("mrope_section").get<std::array<int, 3>>();
    const auto layout = c.at("layout") == "interleaved" ? mrope_layout::interleaved : mrope_layout::contiguous;
    const int D = c.at("head_dim").get<int>();
    const double theta = c.at("rope_theta").get<double>();
    const auto pos = c.at("positions").get<std::vector<std::vector<std::int64_t>>>();
    const auto q = flatten(c.at("inputs").at("q")), k = flatten(c.at("inputs").at("k"));
    const auto& e = c.at("expected");
    // the README's "position": the token's largest stream position
    std::vector<double> maxpos;
    for (std::size_t p = 0; p < pos[0].size(); ++p)
      maxpos.push_back(static_cast<double>(std::max({pos[0][p], pos[1][p], pos[2][p]})));
    auto check_rows = [&](const std::vector<double>& got, const nlohmann::json& want_j, double atol0, double per_pos) {
      const auto want = flatten(want_j);
      REQUIRE(got.size() == want.size());
      const auto Du = static_cast<std::size_t>(D);
      for (std::size_t r = 0; r < maxpos.size(); ++r) {
        INFO("row " << r);
        const std::vector<double> g(got.begin() + static_cast<std::ptrdiff_t>(r * Du),
                                    got.begin() + static_cast<std::ptrdiff_t>((r + 1) * Du));
        const std::vector<double> w(want.begin() + static_cast<std::ptrdiff_t>(r * Du),
                                    want.begin() + static_cast<std::ptrdiff_t>((r + 1) * Du));
        POSENC_CHECK_CLOSE(g, w, atol0 + per_pos * maxpos[r], 0.0);
      }
    };
    for (auto mode : {angle_mode::exact, angle_mode::reference_fp32}) {
      const mrope enc({.rope = {.head_dim = D, .theta = theta, .angles = mode}, .section = sec, .layout = layout});
      // pair -> stream map as HF's merge gives it
      const auto ps = c.at("pair_stream").get<std::vector<int>>();
      REQUIRE(enc.pair_streams().size() == ps.size());
      for (std::size_t i = 0; i < ps.size(); ++i) CHECK(int(enc.pair_streams()[i]) == ps[i]);
      if (mode == angle_mode::reference_fp32) {
        // HF's fp32 inv_freq (rtol 1e-6, README); outputs vs _fp32 (atol 2e-6, fp32 angle)
        POSENC_CHECK_CLOSE(enc.base_frequencies().inv_freq, c.at("inv_freq_fp32").get<std::vector<double>>(), 0.0,
                           1e-6);
        // the reference's own fp32 inv_freq (our powf may differ by an ulp, which a large position
        // would amplify): then the angle is HF's float32(position) * inv_freq_fp32 exactly
        mrope_config hf = enc.config();
        hf.rope.scaling = explicit_frequencies{c.at("inv_freq_fp32").get<std::vector<double>>()};
        const mrope enc32(hf);
        check_rows(run_streams<float>(enc32, q, pos[0], pos[1], pos[2]), e.at("q_out_fp32"), 2e-6, 0);
        check_rows(run_streams<float>(enc32, k, pos[0], pos[1], pos[2]), e.at("k_out_fp32"), 2e-6, 0);
        // the same fp32 inv_freq with exact double angles: _fp64 at the fp64 tolerance
        hf.rope.angles = angle_mode::exact;
        const mrope enc64(hf);
        check_rows(run_streams<double>(enc64, q, pos[0], pos[1], pos[2]), e.at("q_out_fp64"), 1e-12, 2.5e-16);
        check_rows(run_streams<double>(enc64, k, pos[0], pos[1], pos[2]), e.at("k_out_fp64"), 1e-12, 2.5e-16);
      } else {
        // double inv_freq: float storage vs _fp64full at the fp32 tolerance, double at the fp64 one
        check_rows(run_streams<float>(enc, q, pos[0], pos[1], pos[2]), e.at("q_out_fp64full"), 2e-6, 1.2e-7);
        check_rows(run_streams<float>(enc, k, pos[0], pos[1], pos[2]), e.at("k_out_fp64full"), 2e-6, 1.2e-7);
        check_rows(run_streams<double>(enc, q, pos[0], pos[1], pos[2]), e.at("q_out_fp64full"), 1e-12, 2.5e-16);
        check_rows(run_streams<double>(enc, k, pos[0], pos[1], pos[2]), e.at("k_out_fp64full"), 1e-12, 2.5e-16);
      }
    }
  }
  CHECK(n >= 1);
}

TEST_CASE("mrope.json rope_index through mrope_rope_index (exact)", "[rope][mrope][golden][index]") {
  const auto file = posenc_test::load_golden("mrope.json");
  int n = 0;
  for (const auto& c : file.at("cases")) {
    if (c.at("kind") != "rope_index") continue;
    ++n;
    INFO(c.at("id").get<std::string>());
    const auto& cfg = c.at("config");
    const auto& in = c.at("inputs");
    mrope_index_config ic;
    const std::string model = c.at("model");
    ic.model = model == "qwen2_5_vl"
                   ? mrope_index_model::qwen2_5_vl
                   : (model == "qwen3_vl" ? mrope_index_model::qwen3_vl : mrope_index_model::qwen2_vl);
    ic.spatial_merge_size = cfg.at("spatial_merge_size").get<int>();
    ic.image_token_id = cfg.at("image_token_id").get<std::int64_t>();
    ic.video_token_id = cfg.at("video_token_id").get<std::int64_t>();
    ic.vision_start_token_id = cfg.at("vision_start_token_id").get<std::int64_t>();
    if (cfg.contains("tokens_per_second")) ic.tokens_per_second = cfg.at("tokens_per_second").get<double>();
    const auto ids = in.at("input_ids").get<std::vector<std::vector<std::int64_t>>>();
    std::vector<std::int64_t> flat_ids, mask;
    for (const auto& r : ids) flat_ids.insert(flat_ids.end(), r.begin(), r.end());
    if (!in.at("attention_mask").is_null())
      for (const auto& r : in.at("attention_mask").get<std::vector<std::vector<std::int64_t>>>())
        mask.insert(mask.end(), r.begin(), r.end());
    std::vector<std::array<std::int64_t, 3>> img, vid;
    if (!in.at("image_grid_thw").is_null())
      img = in.at("image_grid_thw").get<std::vector<std::array<std::int64_t, 3>>>();
    if (!in.at("video_grid_thw").is_null())
      vid = in.at("video_grid_thw").get<std::vector<std::array<std::int64_t, 3>>>();
    std::vector<double> sec;
    if (!in.at("second_per_grid_ts").is_null()) sec = in.at("second_per_grid_ts").get<std::vector<double>>();
    const auto B = static_cast<std::ptrdiff_t>(ids.size());
    const auto S = static_cast<std::ptrdiff_t>(ids[0].size());
    const auto got = mrope_rope_index(ic, {.batch = B,
                                           .seq = S,
                                           .input_ids = flat_ids,
                                           .attention_mask = mask,
                                           .image_grid_thw = img,
                                           .video_grid_thw = vid,
                                           .second_per_grid_ts = sec});
    std::vector<std::int64_t> want;
    for (const auto& s : c.at("expected").at("position_ids").get<std::vector<std::vector<std::vector<std::int64_t>>>>())
      for (const auto& r : s) want.insert(want.end(), r.begin(), r.end());
    CHECK(got.ids == want);
    std::vector<std::int64_t> wd;
    for (const auto& r : c.at("expected").at("mrope_position_deltas").get<std::vector<std::vector<std::int64_t>>>())
      wd.push_back(r[0]);
    CHECK(got.delta == wd);
  }
  CHECK(n >= 1);
}

TEST_CASE("mrope on text-only tokens is plain RoPE bit for bit", "[rope][mrope]") {
  const std::vector<std::int64_t> pos = {0, 1, 5, 17, 1000, 65535, 1 << 24, 123456789, -3};
  const auto P = static_cast<std::ptrdiff_t>(pos.size());
  for (auto mode : {angle_mode::exact, angle_mode::reference_fp32}) {
    for (int variant = 0; variant < 3; ++variant) {
      mrope_config c = qwen2vl_7b(mode);
      if (variant == 1) {
        c.rope.scaling = yarn_scaling{.factor = 4, .original_max_position = 32768};  // Qwen2.5-VL long context
      } else if (variant == 2) {
        c.layout = mrope_layout::interleaved;
        c.section = {24, 20, 20};
      }
      const mrope m(c);
      const rope r(c.rope);
      const auto x = random_values(static_cast<std::size_t>(P * 2 * 128), 7);
      auto check = [&]<class T>(T) {
        auto a = as<T>(x), b = as<T>(x), s = as<T>(x), d = as<T>(x);
        r.transform_q(tensor_view<T>::bthd(a.data(), 1, P, 2, 128), pos);
        m.transform_q(tensor_view<T>::bthd(b.data(), 1, P, 2, 128), pos);
        m.transform_k(tensor_view<T>::bthd(s.data(), 1, P, 2, 128), mrope_streams{pos, pos, pos});
        // bound with a text-only table: cache position c -> c on every stream
        mrope_position_ids ids{.batch = 1, .length = P, .ids = {}, .delta = {0}};
        for (int st = 0; st < 3; ++st) ids.ids.insert(ids.ids.end(), pos.begin(), pos.end());
        std::vector<std::int64_t> cache(static_cast<std::size_t>(P));
        for (std::size_t i = 0; i < cache.size(); ++i) cache[i] = static_cast<std::int64_t>(i);
        m.bind(ids).transform_q(tensor_view<T>::bthd(d.data(), 1, P, 2, 128), cache);
        CHECK(a == b);
        CHECK(a == s);
        CHECK(a == d);
      };
      check(float{});
      check(double{});
    }
  }
}

TEST_CASE("mrope pair streams: contiguous and Qwen3-VL interleaved", "[rope][mrope]") {
  const auto c = mrope_pair_streams({16, 24, 24}, mrope_layout::contiguous, 64);
  CHECK(c[15] == 0);
  CHECK(c[16] == 1);
  CHECK(c[39] == 1);
  CHECK(c[40] == 2);
  CHECK(c[63] == 2);
  const auto i = mrope_pair_streams({24, 20, 20}, mrope_layout::interleaved, 64);
  std::array<int, 3> count{};
  for (auto s : i) ++count[s];
  CHECK(count == std::array<int, 3>{24, 20, 20});
  CHECK((i[0] == 0 && i[1] == 1 && i[2] == 2 && i[3] == 0 && i[58] == 1 && i[59] == 2));
  // HF/vLLM: past 3*s_h and 3*s_w every pair follows t (ggml's IMROPE would use a 4th stream for 61, 62)
  CHECK((i[60] == 0 && i[61] == 0 && i[62] == 0 && i[63] == 0));
}

TEST_CASE("mrope scores are invariant under a shift of each stream", "[rope][mrope][property]") {
  // <R(t,h,w) q, R(t',h',w') k> depends only on the per-stream differences.
  for (auto layout : {mrope_layout::contiguous, mrope_layout::interleaved}) {
    mrope_config c = qwen2vl_7b();
    c.layout = layout;
    if (layout == mrope_layout::interleaved) c.section = {24, 20, 20};
    const mrope m(c);
    const auto q = random_values(128, 1), k = random_values(128, 2);
    auto score = [&](std::array<std::int64_t, 3> pq, std::array<std::int64_t, 3> pk) {
      const auto a = run_streams<double>(m, q, {pq[0]}, {pq[1]}, {pq[2]});
      const auto b = run_streams<double>(m, k, {pk[0]}, {pk[1]}, {pk[2]});
      double s = 0;
      for (std::size_t d = 0; d < a.size(); ++d) s += a[d] * b[d];
      return s;
    };
    const double s0 = score({10, 3, 7}, {4, 5, 2});
    for (std::array<std::int64_t, 3> shift :
         {std::array<std::int64_t, 3>{5, 0, 0}, {0, 9, 0}, {0, 0, 13}, {100, -2, 40}, {70000, 3, 3}}) {
      INFO(shift[0] << " " << shift[1] << " " << shift[2]);
      const double s1 = score({10 + shift[0], 3 + shift[1], 7 + shift[2]}, {4 + shift[0], 5 + shift[1], 2 + shift[2]});
      CHECK(std::fabs(s1 - s0) < 1e-11);
    }
    // and a shift of one stream for q only does change it (the test can fail)
    CHECK(std::fabs(score({10, 4, 7}, {4, 5, 2}) - s0) > 1e-6);
  }
}

TEST_CASE("mrope rejects malformed configurations, naming the key", "[rope][mrope][validate]") {
  using posenc_test::error_of;
  mrope_config c = qwen2vl_7b();
  c.section = {16, 24, 16};
  const auto msg = error_of([&] { mrope{c}; }, "mrope.section");
  CHECK(msg.find("64") != std::string::npos);
  c.section = {-1, 33, 32};
  error_of([&] { mrope{c}; }, "mrope.section");
  c = qwen2vl_7b();
  c.rope.scaling = dynamic_ntk_scaling{.factor = 2, .original_max_position = 4096};
  error_of([&] { mrope{c}; }, "mrope.scaling");
  c = qwen2vl_7b();
  c.rope.head_dim = 0;
  error_of([&] { mrope{c}; }, "rope.head_dim");
  mrope_position_ids bad{.batch = 1, .length = 4, .ids = std::vector<std::int64_t>(11), .delta = {0}};
  error_of([&] { static_cast<void>(mrope(qwen2vl_7b()).bind(bad)); }, "mrope_position_ids.ids");
  bad.ids.resize(12);
  bad.delta.clear();
  error_of([&] { static_cast<void>(mrope(qwen2vl_7b()).bind(bad)); }, "mrope_position_ids.delta");
}

TEST_CASE("mrope_rope_index: text, padding, videos, and errors", "[rope][mrope][index]") {
  using posenc_test::error_of;
  constexpr std::int64_t VS = 151652, IM = 151655, VI = 151656, VE = 151653;
  mrope_index_config q2;
  SECTION("text only: arange on every stream; left padding keeps 1 and shifts the delta") {
    const std::vector<std::int64_t> ids = {5, 6, 7, 8, 0, 0, 9, 10};
    const std::vector<std::int64_t> mask = {1, 1, 1, 1, 0, 0, 1, 1};
    const auto r = mrope_rope_index(q2, {.batch = 2, .seq = 4, .input_ids = ids, .attention_mask = mask});
    for (int s = 0; s < 3; ++s) {
      CHECK(std::vector<std::int64_t>(r.ids.begin() + s * 8, r.ids.begin() + s * 8 + 8) ==
            std::vector<std::int64_t>{0, 1, 2, 3, 1, 1, 0, 1});
    }
    CHECK(r.delta == std::vector<std::int64_t>{0, -2});  // max(1, 1) + 1 - 4
  }
  auto video_prompt = [&](std::int64_t frames_tokens) {
    std::vector<std::int64_t> ids = {1, 2, VS};
    for (std::int64_t i = 0; i < frames_tokens; ++i) ids.push_back(VI);
    ids.push_back(VE);
    ids.push_back(3);
    return ids;
  };
  SECTION("Qwen2.5-VL video: t index = frame * int(second_per_grid) * tokens_per_second") {
    // grid (3 frames, 4x4 patches) -> 3 x 2 x 2 merged tokens
    const auto ids = video_prompt(12);
    const std::vector<std::array<std::int64_t, 3>> grid = {{3, 4, 4}};
    mrope_index_config q25{.model = mrope_index_model::qwen2_5_vl};
    for (double sec : {2.0, 0.5, 1.0}) {
      const std::vector<double> s = {sec};
      const auto r = mrope_rope_index(q25, {.batch = 1,
                                            .seq = static_cast<std::ptrdiff_t>(ids.size()),
                                            .input_ids = ids,
                                            .video_grid_thw = grid,
                                            .second_per_grid_ts = s});
      const auto step = static_cast<std::int64_t>(sec) * 2;
      for (int f = 0; f < 3; ++f) CHECK(r.ids[static_cast<std::size_t>(3 + 4 * f)] == 3 + f * step);
      CHECK(r.ids[static_cast<std::size_t>(r.length + 3 + 4 * 2 + 3)] == 3 + 1);  // h of the last token: row 1
      const std::int64_t mx = 3 + std::max<std::int64_t>(2 * step, 1);
      CHECK(r.ids[static_cast<std::size_t>(r.length - 1)] == mx + 2);  // text after VE resumes at max + 1
      CHECK(r.delta[0] == mx + 3 - r.length);
    }
    // Qwen2-VL ignores the seconds: frames are 0, 1, 2
    const auto r2 = mrope_rope_index(
        q2, {.batch = 1, .seq = static_cast<std::ptrdiff_t>(ids.size()), .input_ids = ids, .video_grid_thw = grid});
    for (int f = 0; f < 3; ++f) CHECK(r2.ids[static_cast<std::size_t>(3 + 4 * f)] == 3 + f);
  }
  SECTION("an image grid with t = 2: Qwen2-VL counts frames, Qwen2.5-VL gives images 0 seconds") {
    const std::vector<std::int64_t> ids = {1, VS, IM, IM, IM, IM, IM, IM, IM, IM, VE};
    const std::vector<std::array<std::int64_t, 3>> grid = {{2, 4, 4}};
    const mrope_index_inputs in{.batch = 1, .seq = 11, .input_ids = ids, .image_grid_thw = grid};
    const auto a = mrope_rope_index(q2, in);
    const auto b = mrope_rope_index({.model = mrope_index_model::qwen2_5_vl}, in);
    CHECK(a.ids[2] == 2);
    CHECK(a.ids[6] == 3);
    CHECK(b.ids[2] == 2);
    CHECK(b.ids[6] == 2);
  }
  SECTION("Qwen3-VL: a video is one single-frame block per frame") {
    std::vector<std::int64_t> ids = {1};
    for (int f = 0; f < 2; ++f) {
      ids.push_back(50 + f);  // timestamp text
      ids.push_back(VS);
      for (int i = 0; i < 4; ++i) ids.push_back(VI);
      ids.push_back(VE);
    }
    const std::vector<std::array<std::int64_t, 3>> grid = {{2, 4, 4}};
    const auto r = mrope_rope_index(
        {.model = mrope_index_model::qwen3_vl},
        {.batch = 1, .seq = static_cast<std::ptrdiff_t>(ids.size()), .input_ids = ids, .video_grid_thw = grid});
    // frame 0 block at 3..6 starts at 3; VE = 5, timestamp 6, VS 7, frame 1 block starts at 8
    CHECK(r.ids[3] == 3);
    CHECK(r.ids[6] == 3);
    CHECK(r.ids[10] == 8);
    CHECK(r.ids[static_cast<std::size_t>(r.length + 6)] == 4);  // h of frame 0's last token
  }
  SECTION("malformed inputs") {
    const std::vector<std::int64_t> ids = {1, VS, IM, IM, IM, IM, VE};
    const std::vector<std::array<std::int64_t, 3>> g = {{1, 4, 4}}, two = {{1, 4, 4}, {1, 4, 4}}, odd = {{1, 3, 4}};
    const auto S = static_cast<std::ptrdiff_t>(ids.size());
    error_of(
        [&] { static_cast<void>(mrope_rope_index(q2, {.batch = 1, .seq = S, .input_ids = ids, .video_grid_thw = g})); },
        "mrope_index.image_grid_thw");
    error_of(
        [&] {
          static_cast<void>(mrope_rope_index(q2, {.batch = 1, .seq = S, .input_ids = ids, .image_grid_thw = two}));
        },
        "mrope_index.image_grid_thw");
    error_of(
        [&] {
          static_cast<void>(mrope_rope_index(q2, {.batch = 1, .seq = S, .input_ids = ids, .image_grid_thw = odd}));
        },
        "mrope_index.image_grid_thw");
    const std::vector<std::array<std::int64_t, 3>> big = {{1, 8, 8}};
    error_of(
        [&] {
          static_cast<void>(mrope_rope_index(q2, {.batch = 1, .seq = S, .input_ids = ids, .image_grid_thw = big}));
        },
        "mrope_index.input_ids");
    error_of([&] { static_cast<void>(mrope_rope_index(q2, {.batch = 2, .seq = S, .input_ids = ids})); },
             "mrope_index.input_ids");
  }
}

TEST_CASE("mrope through sdpa and the KV cache: prefill == token-by-token decode (text + image)",
          "[rope][mrope][kv_cache]") {
  constexpr std::int64_t VS = 151652, IM = 151655, VE = 151653;
  // text, image (1 x 4 x 6 patches -> 6 tokens), text
  const std::vector<std::int64_t> ids = {10, 11, VS, IM, IM, IM, IM, IM, IM, VE, 12, 13};
  const auto S = static_cast<std::ptrdiff_t>(ids.size());
  const std::vector<std::array<std::int64_t, 3>> grid = {{1, 4, 6}};
  auto table = mrope_rope_index({}, {.batch = 1, .seq = S, .input_ids = ids, .image_grid_thw = grid});
  CHECK(table.delta[0] == -3);
  mrope_config c{.rope = {.head_dim = 16, .theta = 10000}, .section = {2, 3, 3}};
  const auto enc = mrope(c).bind(table);
  const std::ptrdiff_t Hq = 4, Hkv = 2, D = 16, N = S + 3;  // 3 decode tokens past the table (delta rule)
  const auto q = random_values(static_cast<std::size_t>(N * Hq * D), 11);
  const auto k = random_values(static_cast<std::size_t>(N * Hkv * D), 12);
  const auto v = random_values(static_cast<std::size_t>(N * Hkv * D), 13);
  std::vector<std::int64_t> cache_pos(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < cache_pos.size(); ++i) cache_pos[i] = static_cast<std::int64_t>(i);

  std::vector<double> full(static_cast<std::size_t>(N * Hq * D));
  sdpa(tensor_view<const double>::bthd(q.data(), 1, N, Hq, D), tensor_view<const double>::bthd(k.data(), 1, N, Hkv, D),
       tensor_view<const double>::bthd(v.data(), 1, N, Hkv, D), tensor_view<double>::bthd(full.data(), 1, N, Hq, D),
       enc, {.causal = true, .query_positions = cache_pos, .key_positions = cache_pos});

  kv_cache<double> cache({.kv_heads = Hkv, .head_dim = D});
  std::vector<double> step(full.size());
  const std::ptrdiff_t prefill = 7;  // ends inside the image block
  auto run = [&](std::ptrdiff_t t0, std::ptrdiff_t n) {
    const std::span<const std::int64_t> p(cache_pos.data() + t0, static_cast<std::size_t>(n));
    CHECK(cache.append(enc, tensor_view<const double>::bthd(k.data() + t0 * Hkv * D, 1, n, Hkv, D),
                       tensor_view<const double>::bthd(v.data() + t0 * Hkv * D, 1, n, Hkv, D), p) == cache_event::none);
    cache.attend(enc, tensor_view<const double>::bthd(q.data() + t0 * Hq * D, 1, n, Hq, D),
                 tensor_view<double>::bthd(step.data() + t0 * Hq * D, 1, n, Hq, D), p, {.causal = true});
  };
  run(0, prefill);
  for (std::ptrdiff_t t = prefill; t < N; ++t) run(t, 1);
  POSENC_CHECK_CLOSE(step, full, 1e-12, 0.0);

  // The bound encoder really used the table: plain (text) mRoPE on the same cache positions differs.
  std::vector<double> text(full.size());
  sdpa(tensor_view<const double>::bthd(q.data(), 1, N, Hq, D), tensor_view<const double>::bthd(k.data(), 1, N, Hkv, D),
       tensor_view<const double>::bthd(v.data(), 1, N, Hkv, D), tensor_view<double>::bthd(text.data(), 1, N, Hq, D),
       mrope(c), {.causal = true, .query_positions = cache_pos, .key_positions = cache_pos});
  double diff = 0;
  for (std::size_t i = 0; i < text.size(); ++i) diff = std::max(diff, std::fabs(text[i] - full[i]));
  CHECK(diff > 1e-6);
}

TEST_CASE("mrope_bound in the KV cache: K-shift is refused, naming the operation", "[rope][mrope][kv_cache]") {
  mrope_position_ids ids{.batch = 1, .length = 2, .ids = {0, 1, 0, 1, 0, 1}, .delta = {0}};
  const auto enc = mrope(mrope_config{.rope = {.head_dim = 8}, .section = {2, 1, 1}}).bind(ids);
  kv_cache<double> cache({.kv_heads = 1, .head_dim = 8});
  std::vector<double> k(16, 0.5);
  const std::vector<std::int64_t> p = {0, 1};
  static_cast<void>(cache.append(enc, tensor_view<const double>::bthd(k.data(), 1, 2, 1, 8),
                                 tensor_view<const double>::bthd(k.data(), 1, 2, 1, 8), p));
  posenc_test::error_of([&] { cache.shift_window(enc, 0, 1); }, "kv_cache.shift_window");
}
