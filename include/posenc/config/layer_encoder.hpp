// posenc/config/layer_encoder.hpp — the encoder of one layer of a layered_config, ready for sdpa and
// the KV cache.
//
// A layer is NoPE, RoPE or mRoPE, optionally followed by a query temperature (combined<>: RoPE
// first, then the scale, as Mistral 3 applies it; the two commute up to rounding). The result is a
// std::variant; std::visit it to call sdpa / kv_cache with the concrete encoder type, so the
// attention stays a template without virtual calls:
//
//   const auto enc = posenc::make_layer_encoder(cfg, layer);
//   std::visit([&](const auto& e) { posenc::sdpa(q, k, v, out, e, opts); }, enc);
//
// mRoPE layers get the plain-concept mrope (each position used on all three streams); bind a
// position table (mrope::bind) for multimodal prompts. Options (sliding window, sinks) are the
// caller's: layer_options() fills scale, window, chunk and soft-cap from the layer_spec. DeBERTa's
// layers are refused here: their encoder needs the model's projected relative tables
// (layered_config::deberta gives its configuration).
#pragma once

#include <cstddef>
#include <optional>
#include <variant>

#include <posenc/attention/options.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/rope.hpp>

namespace posenc::inline v0 {

/// Every encoder a layer of today's models can have.
using layer_encoder = std::variant<no_position, rope, mrope, attention_temperature,
                                   combined<rope, attention_temperature>, combined<mrope, attention_temperature>>;

/// Builds layer `layer`'s encoder (validating its configs: config_error naming the parameter).
[[nodiscard]] inline layer_encoder make_layer_encoder(const layered_config& cfg, std::size_t layer) {
  detail::require(layer < cfg.layers.size(), "layer", layer, "< the layer count " + std::to_string(cfg.layers.size()));
  const layer_spec& s = cfg.layers[layer];
  if (cfg.deberta)
    throw config_error("layer", std::to_string(layer),
                       "a layer whose encoder the configuration alone gives (DeBERTa's relative terms need the "
                       "model's projected tables: build posenc::deberta_relative(cfg.deberta->relative, K_r, Q_r))");
  std::optional<attention_temperature> temp;
  if (s.temperature) temp.emplace(*s.temperature);
  if (!s.rope) {
    if (temp) return *temp;
    return no_position{};
  }
  if (cfg.mrope) {
    mrope m(mrope_config{.rope = *s.rope, .section = cfg.mrope->section, .layout = cfg.mrope->layout});
    if (temp) return combine(std::move(m), *temp);
    return m;
  }
  rope r(*s.rope);
  if (temp) return combine(std::move(r), *temp);
  return r;
}

/// The attention options of a layer: causal (except T5's encoder layers), the layer's softmax scale (without the
/// encoder's own multiplier, which the attention applies), its sliding window or chunk, and its logit soft-cap. A
/// hybrid model's mixer layer (mamba, conv, linear attention, MLP-only) is not softmax attention: config_error.
[[nodiscard]] inline attention_options layer_options(const layer_spec& s) {
  if (!is_softmax(s.attention))
    throw config_error("layer.attention", layer_type_name(s.attention),
                       "a softmax-attention layer (a hybrid model's mixer layers take no attention options)");
  attention_options o{.causal = s.causal};
  if (s.base_scale > 0) o.scale = s.base_scale;
  if (s.attention == layer_attention::sliding) o.sliding_window = s.window;
  if (s.attention == layer_attention::chunked) o.attention_chunk = s.chunk_size;
  o.logit_softcap = s.logit_softcap;
  return o;
}

}  // namespace posenc::inline v0
