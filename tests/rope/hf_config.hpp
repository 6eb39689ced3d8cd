// tests/rope/hf_config.hpp — maps the HF config.json fields stored in the golden files to a rope_config.
// A test-local mirror of what the config loader does (HF semantics of each rope_type).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <posenc/rope/config.hpp>

namespace posenc_test {

inline posenc::rope_config rope_config_from_hf(const nlohmann::json& c) {
  using namespace posenc;
  rope_config r;
  r.head_dim = c.contains("head_dim") ? c.at("head_dim").get<int>()
                                      : c.at("hidden_size").get<int>() / c.at("num_attention_heads").get<int>();
  r.theta = c.value("rope_theta", 10000.0);
  if (c.contains("partial_rotary_factor")) r.partial_rotary_factor = c.at("partial_rotary_factor").get<double>();
  const auto max_pos = c.value("max_position_embeddings", std::int64_t{0});
  if (!c.contains("rope_scaling") || c.at("rope_scaling").is_null()) return r;
  const auto& s = c.at("rope_scaling");
  const std::string type =
      s.contains("rope_type") ? s.at("rope_type").get<std::string>() : s.at("type").get<std::string>();
  if (type == "linear") {
    r.scaling = linear_scaling{.factor = s.at("factor").get<double>()};
  } else if (type == "dynamic") {
    r.scaling = dynamic_ntk_scaling{.factor = s.at("factor").get<double>(), .original_max_position = max_pos};
  } else if (type == "yarn") {
    yarn_scaling y{.factor = s.at("factor").get<double>(),
                   .original_max_position = s.value("original_max_position_embeddings", max_pos)};
    if (s.contains("beta_fast")) y.beta_fast = s.at("beta_fast").get<double>();
    if (s.contains("beta_slow")) y.beta_slow = s.at("beta_slow").get<double>();
    if (s.contains("attention_factor")) y.attention_factor = s.at("attention_factor").get<double>();
    if (s.contains("mscale")) y.mscale = s.at("mscale").get<double>();
    if (s.contains("mscale_all_dim")) y.mscale_all_dim = s.at("mscale_all_dim").get<double>();
    if (s.contains("truncate")) y.truncate = s.at("truncate").get<bool>();
    r.scaling = y;
  } else if (type == "llama3") {
    r.scaling = llama3_scaling{.factor = s.at("factor").get<double>(),
                               .low_freq_factor = s.at("low_freq_factor").get<double>(),
                               .high_freq_factor = s.at("high_freq_factor").get<double>(),
                               .original_max_position = s.at("original_max_position_embeddings").get<std::int64_t>()};
  } else if (type == "longrope") {
    longrope_scaling l{.short_factor = s.at("short_factor").get<std::vector<double>>(),
                       .long_factor = s.at("long_factor").get<std::vector<double>>()};
    if (c.contains("original_max_position_embeddings")) {
      l.original_max_position = c.at("original_max_position_embeddings").get<std::int64_t>();
      l.max_position = max_pos;  // HF derives the factor from the ratio here
    } else {
      l.original_max_position = max_pos;
      if (s.contains("factor")) l.factor = s.at("factor").get<double>();
      l.max_position = max_pos;
    }
    if (s.contains("attention_factor")) l.attention_factor = s.at("attention_factor").get<double>();
    r.scaling = l;
  }
  return r;
}

}  // namespace posenc_test
