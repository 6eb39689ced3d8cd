// examples/07_todays_models.cpp — multimodal RoPE and per-layer positional configuration.
//
// 1. Qwen2.5-VL: the published config's mrope_section, position ids for a text + image prompt
//    (HF get_rope_index), and decoding through a KV cache with the positions bound to the encoder.
// 2. Gemma 3, Llama 4, gpt-oss: which encoder acts on each layer, from their config.json values.
// Exits non-zero if the cached decode disagrees with full attention.
#include <cmath>
#include <cstdio>
#include <string>
#include <variant>
#include <vector>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/config/json.hpp>
#include <posenc/config/layer_encoder.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/mrope_index.hpp>

namespace {

// Published values (Qwen/Qwen2.5-VL-7B-Instruct config.json, the position-related part).
constexpr const char* qwen25_vl = R"({"model_type": "qwen2_5_vl", "hidden_size": 3584, "num_attention_heads": 28,
  "num_key_value_heads": 4, "num_hidden_layers": 28, "max_position_embeddings": 128000, "rope_theta": 1000000.0,
  "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}})";
// Gemma 3 4B text config (the values of layered.json), Llama 4 Scout, gpt-oss-20b.
constexpr const char* gemma3 = R"({"model_type": "gemma3_text", "num_hidden_layers": 34, "num_attention_heads": 8,
  "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131072, "sliding_window": 1024,
  "sliding_window_pattern": 6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
  "rope_scaling": {"rope_type": "linear", "factor": 8.0}})";
constexpr const char* llama4 = R"({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40,
  "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 48, "max_position_embeddings": 10485760,
  "no_rope_layers": null, "no_rope_layer_interval": 4, "attention_chunk_size": 8192, "attn_temperature_tuning": true,
  "floor_scale": 8192, "attn_scale": 0.1, "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3",
  "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}})";
constexpr const char* gpt_oss = R"({"model_type": "gpt_oss", "head_dim": 64, "hidden_size": 2880,
  "num_attention_heads": 64, "num_key_value_heads": 8, "num_hidden_layers": 24, "max_position_embeddings": 131072,
  "rope_theta": 150000, "sliding_window": 128, "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
  "beta_slow": 1.0, "original_max_position_embeddings": 4096, "truncate": false}})";

void summary(const char* name, const char* json) {
  const auto cfg = posenc::load_hf_layered(posenc::parse_config_json(json, name));
  std::printf("%s: %zu layers%s\n", name, cfg.layers.size(), cfg.attention_sinks ? ", attention sinks" : "");
  for (std::size_t i = 0; i < cfg.layers.size() && i < 6; ++i) {
    const auto& l = cfg.layers[i];
    std::printf("  layer %zu  %-17s  ", i, posenc::layer_type_name(l.attention));
    if (l.rope)
      std::printf("%s theta %g", l.rope_source.c_str(), l.rope->theta);
    else
      std::printf("NoPE");
    if (l.temperature) std::printf("  + query temperature");
    std::printf("\n");
  }
}

}  // namespace

int main() {
  // ---- 1. Qwen2.5-VL ----
  const auto vl = posenc::load_hf_layered(posenc::parse_config_json(qwen25_vl, "qwen2.5-vl"));
  constexpr std::int64_t VS = 151652, IM = 151655, VE = 151653;
  const std::vector<std::int64_t> ids = {9707, 11, VS, IM, IM, IM, IM, IM, IM, VE, 3838, 374};
  const std::vector<std::array<std::int64_t, 3>> grid = {{1, 4, 6}};  // 1 frame, 4x6 patches -> 2x3 tokens
  auto table = posenc::mrope_rope_index(
      {.model = posenc::mrope_index_model::qwen2_5_vl},
      {.batch = 1, .seq = static_cast<std::ptrdiff_t>(ids.size()), .input_ids = ids, .image_grid_thw = grid});
  std::printf("Qwen2.5-VL position ids (t / h / w):\n");
  for (int s = 0; s < 3; ++s) {
    std::printf("  ");
    for (std::size_t c = 0; c < ids.size(); ++c)
      std::printf("%2lld ", static_cast<long long>(table.ids[s * ids.size() + c]));
    std::printf("\n");
  }
  // The encoder of layer 0 is mRoPE; binding the table makes its positions cache positions.
  const posenc::layer_encoder layer0 = posenc::make_layer_encoder(vl, 0);
  const auto enc = std::get<posenc::mrope>(layer0).bind(table);
  constexpr std::ptrdiff_t H = 2, D = 128, N = 14;  // the prompt and two decoded tokens
  std::vector<double> q(N * H * D), k(q.size()), v(q.size()), full(q.size()), step(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.37 * double(i) + 0.1);
    k[i] = std::cos(0.23 * double(i) + 0.3);
    v[i] = std::sin(0.05 * double(i));
  }
  std::vector<std::int64_t> pos(N);
  for (std::ptrdiff_t t = 0; t < N; ++t) pos[t] = t;
  using cview = posenc::tensor_view<const double>;
  posenc::sdpa(cview::thd(q.data(), N, H, D), cview::thd(k.data(), N, H, D), cview::thd(v.data(), N, H, D),
               posenc::tensor_view<double>::thd(full.data(), N, H, D), enc, {.causal = true});
  posenc::kv_cache<double> cache({.kv_heads = H, .head_dim = D});
  for (std::ptrdiff_t t = 0; t < N; ++t) {
    const auto p = std::span<const std::int64_t>(pos).subspan(t, 1);
    (void)cache.append(enc, cview::thd(k.data() + t * H * D, 1, H, D), cview::thd(v.data() + t * H * D, 1, H, D), p);
    cache.attend(enc, cview::thd(q.data() + t * H * D, 1, H, D),
                 posenc::tensor_view<double>::thd(step.data() + t * H * D, 1, H, D), p, {.causal = true});
  }
  double worst = 0;
  for (std::size_t i = 0; i < full.size(); ++i) worst = std::fmax(worst, std::fabs(full[i] - step[i]));
  std::printf("cached decode vs full attention (mRoPE, text + image + 2 decoded tokens): max |diff| = %.3g\n\n", worst);

  // ---- 2. per-layer schedules ----
  summary("Gemma 3 4B", gemma3);
  summary("Llama 4 Scout", llama4);
  summary("gpt-oss-20b", gpt_oss);
  return worst < 1e-12 ? 0 : 1;
}
