// Layer rules of the hybrid and cross-attention families whose layer lists the config classes build
// themselves: Zamba / Zamba2 (layers_block_type, the attention over the doubled hidden width, RoPE iff
// use_mem_rope), RecurrentGemma (block_types cycled, local attention) and Mllama
// (cross_attention_layers). The conformance cases check the class defaults against transformers; these
// check the keys' edges.
#include <algorithm>
#include <cmath>
#include <string>

#include <catch2/catch.hpp>

#include <posenc/config/json.hpp>
#include <posenc/config/layered.hpp>

#include "support/check.hpp"

using namespace posenc;
using posenc_test::error_of;

namespace {

layered_config load(const nlohmann::json& j) {
  return load_hf_layered(to_config_value(j));
}

std::string kinds(const layered_config& c) {
  std::string s;
  for (const auto& l : c.layers)
    s += l.attention == layer_attention::full        ? 'F'
         : l.attention == layer_attention::sliding   ? 'S'
         : l.attention == layer_attention::mamba     ? 'M'
         : l.attention == layer_attention::linear    ? 'L'
         : l.attention == layer_attention::cross     ? 'X'
         : l.attention == layer_attention::recurrent ? 'R'
                                                     : '?';
  return s;
}

bool warned(const layered_config& c, const std::string& part) {
  return std::any_of(c.warnings.begin(), c.warnings.end(),
                     [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("Zamba / Zamba2: layers_block_type, doubled head width, RoPE iff use_mem_rope", "[layered][hybrid]") {
  const nlohmann::json z2 = {{"model_type", "zamba2"},
                             {"hidden_size", 1024},
                             {"num_attention_heads", 16},
                             {"num_hidden_layers", 4},
                             {"use_mem_rope", true},
                             {"rope_theta", 10000},
                             {"layers_block_type", {"mamba", "hybrid", "linear_attention", "hybrid"}}};
  const auto c = load(z2);
  CHECK(kinds(c) == "MFMF");
  REQUIRE(c.layers[1].rope);
  CHECK(c.layers[1].rope->head_dim == 128);                                          // 2 * 1024 / 16
  CHECK(c.layers[1].softmax_scale == Approx(1.0 / std::sqrt(64.0)).epsilon(1e-15));  // (head_dim / 2)^-0.5
  auto off = z2;
  off.erase("use_mem_rope");  // the class default: no RoPE
  const auto n = load(off);
  CHECK(!n.layers[1].rope);
  CHECK(n.layers[1].softmax_scale == Approx(0.125));
  // without layers_block_type Zamba2 builds its 54-entry default list, whatever num_hidden_layers says
  auto absent = z2;
  absent.erase("layers_block_type");
  error_of([&] { load(absent); }, "layers_block_type");
  absent["num_hidden_layers"] = 54;
  CHECK(kinds(load(absent)) == "MMMMMMFMMMMMFMMMMMFMMMMMFMMMMMFMMMMMFMMMMMFMMMMFMMMFMM");
  // Zamba reads attention_head_dim when given; its default list puts attention at 2, then i % period == offset
  const auto z = load({{"model_type", "zamba"},
                       {"hidden_size", 1024},
                       {"num_attention_heads", 16},
                       {"num_hidden_layers", 9},
                       {"attn_layer_period", 3},
                       {"attn_layer_offset", 1},
                       {"attention_head_dim", 96}});
  CHECK(kinds(z) == "MMFMFMMFM");
  CHECK(z.layers[2].softmax_scale == Approx(1.0 / std::sqrt(48.0)));
  CHECK(!z.layers[2].rope);
}

TEST_CASE("RecurrentGemma: block_types cycled, attention layers slide", "[layered][hybrid]") {
  const nlohmann::json rg = {{"model_type", "recurrent_gemma"},
                             {"hidden_size", 512},
                             {"num_attention_heads", 4},
                             {"num_hidden_layers", 5},
                             {"block_types", {"attention", "recurrent"}},
                             {"attention_window_size", 64},
                             {"partial_rotary_factor", 0.5}};
  const auto c = load(rg);
  CHECK(kinds(c) == "SRSRS");
  CHECK(c.layers[0].window == 64);
  REQUIRE(c.layers[0].rope);
  CHECK(c.layers[0].rope->head_dim == 128);  // the whole head rotates: partial_rotary_factor is not read
  CHECK(c.layers[0].rope->rotary_dim.value_or(128) == 128);
  CHECK(c.layers[0].rope->partial_rotary_factor.value_or(1.0) == 1.0);
  auto bad = rg;
  bad["block_types"] = {"recurrent", "mlp"};
  error_of([&] { load(bad); }, "block_types");
}

TEST_CASE("Mllama: cross_attention_layers are cross-attention layers without positions", "[layered][hybrid]") {
  const nlohmann::json ml = {{"model_type", "mllama_text_model"},
                             {"hidden_size", 512},
                             {"num_attention_heads", 4},
                             {"num_hidden_layers", 5},
                             {"cross_attention_layers", {1, 4, 7}}};
  const auto c = load(ml);
  CHECK(kinds(c) == "FXFFX");
  CHECK(!c.layers[1].rope);
  CHECK(warned(c, "cross_attention_layers[2]"));  // 7: no such layer, the model selects none
  auto bad = ml;
  bad["cross_attention_layers"] = {1, "two"};
  error_of([&] { load(bad); }, "cross_attention_layers[1]");
  auto dflt = ml;
  dflt.erase("cross_attention_layers");
  CHECK(kinds(load(dflt)) == "FFFXF");  // the class default [3, 8, ...]
}
