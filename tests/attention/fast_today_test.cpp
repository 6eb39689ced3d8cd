// posenc::attention with the encoders of today's models through the fast path: every
// layer kind of gpt-oss (YaRN truncate=false, sliding/full, sinks), Llama 4 (NoPE + temperature,
// RoPE) and Gemma 3 (local/global RoPE), and Qwen2.5-VL's mRoPE bound to the position ids of an
// image prompt — each against sdpa on the same inputs, within attention.hpp's documented bound.
#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/config/json.hpp>
#include <posenc/config/layer_encoder.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/mrope_index.hpp>

#include "fast_support.hpp"

using namespace posenc_test;

namespace {

posenc::layered_config load(const std::string& name) {
  return posenc::load_hf_layered(
      posenc::parse_config_json(posenc::read_text_file(std::string(POSENC_GOLDEN_DIR) + "/configs/" + name), name));
}

// Layer `layer` of `cfg` on a causal sequence of n tokens starting at `first`, with the layer's
// window shrunk below n so that it acts, and `sinks` when given.
void check_layer(const posenc::layered_config& cfg, std::size_t layer, std::ptrdiff_t D, std::int64_t first, bool sinks,
                 double growth) {
  const fast_shape s{.B = 1, .Sq = 37, .Sk = 37, .Hq = 8, .Hkv = 2, .D = D, .Dv = D};
  const fast_inputs<float> in(s, 40 + layer);
  fast_masks m;
  m.causal = true;
  if (cfg.layers[layer].attention == posenc::layer_attention::sliding) m.window = 9;
  for (std::ptrdiff_t t = 0; t < s.Sk; ++t) m.pq.push_back(first + t);
  m.pk = m.pq;
  if (sinks) m.sinks = {0.5, -1.0, 2.0, 0.0, 1.5, -0.25, 3.0, 0.75};
  std::visit(
      [&](const auto& enc) {
        const double e = fast_error(in, enc, m, {}, growth);
        INFO("layer " << layer << " (" << enc.name() << "), window " << m.window.value_or(0) << " -> error " << e);
        CHECK(e <= fast_bound);
      },
      posenc::make_layer_encoder(cfg, layer));
}

}  // namespace

TEST_CASE("attention runs gpt-oss layers (YaRN truncate=false, sliding/full, sinks) like sdpa", "[fast][today]") {
  const auto cfg = load("gpt_oss_20b.json");
  REQUIRE(cfg.attention_sinks);
  for (std::size_t layer : {0u, 1u}) check_layer(cfg, layer, 64, 0, true, 1.0);
  for (std::size_t layer : {0u, 1u}) check_layer(cfg, layer, 64, 70000, true, 1.0);  // past L0 = 4096
}

TEST_CASE("attention runs Llama 4 NoPE+temperature and RoPE layers like sdpa", "[fast][today]") {
  const auto cfg = load("llama4_scout.json");
  bool nope = false, rotary = false;
  for (std::size_t layer = 0; layer < 4; ++layer) {
    nope |= !cfg.layers[layer].rope.has_value();
    rotary |= cfg.layers[layer].rope.has_value();
    // 10^5: the temperature is log(13) * 0.1 + 1 there, so the query scale really acts.
    check_layer(cfg, layer, 128, 100000, false, 1.3);
  }
  CHECK((nope && rotary));
}

TEST_CASE("attention runs Gemma 3 local and global layers like sdpa", "[fast][today]") {
  const auto cfg = load("gemma3_4b.json");
  for (std::size_t layer : {0u, 5u}) check_layer(cfg, layer, 256, 5000, false, 1.0);
}

TEST_CASE("attention runs Qwen2.5-VL mRoPE bound to an image prompt like sdpa", "[fast][today]") {
  const auto cfg = load("qwen2_5_vl_7b.json");
  constexpr std::int64_t VS = 151652, IM = 151655, VE = 151653;
  std::vector<std::int64_t> ids = {9707, 11, VS};
  for (int i = 0; i < 24; ++i) ids.push_back(IM);  // 1 x 8 x 12 patches, merged 2x2 -> 24 tokens
  ids.insert(ids.end(), {VE, 3838, 374, 264, 2168, 13, 576, 11, 1052, 30});
  const std::vector<std::array<std::int64_t, 3>> grid = {{1, 8, 12}};
  const auto table = posenc::mrope_rope_index(
      {.model = posenc::mrope_index_model::qwen2_5_vl},
      {.batch = 1, .seq = static_cast<std::ptrdiff_t>(ids.size()), .input_ids = ids, .image_grid_thw = grid});
  const auto enc = std::get<posenc::mrope>(posenc::make_layer_encoder(cfg, 0)).bind(table);

  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(ids.size()) + 3;  // the prompt and three decoded tokens
  const fast_shape s{.B = 1, .Sq = n, .Sk = n, .Hq = 4, .Hkv = 2, .D = 128, .Dv = 128};
  const fast_inputs<float> in(s, 77);
  fast_masks m;
  m.causal = true;
  for (std::ptrdiff_t t = 0; t < n; ++t) m.pq.push_back(t);
  m.pk = m.pq;
  const double e = fast_error(in, enc, m);
  INFO("error " << e);
  CHECK(e <= fast_bound);
}
