// posenc/config/layered_config.hpp — what a loaded model is, layer by layer: the result types of
// load_hf_layered / load_gguf_layered (config/layered.hpp).
//
// A layer is softmax attention (full, sliding or chunked) with its RoPE (or none), window or chunk,
// query temperature, softmax scale, soft-cap, sinks and ALiBi flag — or a hybrid model's mixer
// (mamba, conv, linear attention, MLP-only), on which posenc applies nothing. This header only
// declares; it reads nothing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <posenc/config/architecture.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/vision_rope.hpp>

namespace posenc::inline v0 {

/// What acts on one layer.
struct layer_spec {
  layer_attention attention = layer_attention::full;
  std::optional<std::int64_t> window{};                       ///< sliding window W (sliding layers only)
  std::optional<std::int64_t> chunk_size{};                   ///< chunk C (chunked layers only)
  std::optional<rope_config> rope{};                          ///< absent: NoPE (or not attention)
  std::optional<attention_temperature_config> temperature{};  ///< query temperature of this layer
  std::string rope_source;  ///< where the RoPE came from: "global", "local", "rope_parameters.<type>", "none"
  /// The exact multiplier of q.k in the softmax, corrections included (YaRN mscale² of DeepSeek);
  /// 0 for layers without softmax attention.
  double softmax_scale = 0;
  /// The part of softmax_scale that attention_options::scale carries: the attention multiplies it
  /// by the encoder's softmax_scale_multiplier() itself, so softmax_scale = base_scale * that.
  double base_scale = 0;
  std::optional<double> logit_softcap{};  ///< Gemma 2 attn_logit_softcapping
  bool sinks = false;                     ///< learned per-head sink logits (gpt-oss)
  bool alibi = false;                     ///< ALiBi bias on this layer
  bool causal = true;                     ///< false for bidirectional (encoder) layers: T5's encoder, BERT
  friend bool operator==(const layer_spec&, const layer_spec&) = default;
};

/// mRoPE sections of a multimodal model (rope/mrope.hpp).
struct mrope_spec {
  std::array<int, 3> section{};
  mrope_layout layout = mrope_layout::contiguous;
  friend bool operator==(const mrope_spec&, const mrope_spec&) = default;
};

/// DeBERTa's disentangled attention (encoders/deberta.hpp), the same in every layer. The tables are the
/// caller's: the encoder's relative embeddings (rel_embeddings, 2 span rows; through a LayerNorm when
/// norm_rel_ebd), projected by the layer's own key / query projections when share_att_key, else by its
/// pos_key_proj / pos_query_proj (v1: pos_proj, pos_q_proj).
struct deberta_spec {
  deberta_relative_config relative;  ///< heads, head size, buckets (max_relative_positions resolved), c2p / p2c
  bool share_att_key = false;
  bool norm_rel_ebd = false;           ///< norm_rel_ebd contains "layer_norm"
  bool position_biased_input = false;  ///< learned absolute positions are added to the embeddings too
  friend bool operator==(const deberta_spec& a, const deberta_spec& b) {
    const auto& x = a.relative;
    const auto& y = b.relative;
    return x.head_dim == y.head_dim && x.num_heads == y.num_heads && x.position_buckets == y.position_buckets &&
           x.max_relative_positions == y.max_relative_positions && x.c2p == y.c2p && x.p2c == y.p2c &&
           x.bucket_rule == y.bucket_rule && a.share_att_key == b.share_att_key && a.norm_rel_ebd == b.norm_rel_ebd &&
           a.position_biased_input == b.position_biased_input;
  }
};

/// The rotary vision tower of a multimodal model (its vision_config): the vision_rope configuration its
/// attention rotates with and the shapes the positions come from (rope/vision_positions.hpp). Every
/// vision layer attends bidirectionally within an image / frame (window) with scale head_dim^-0.5.
struct vision_spec {
  std::string tower;        ///< vision_towers row ("Pixtral", "Qwen2.5-VL vision", ...)
  vision_rope_config rope;  ///< head_dim, theta, convention (build posenc::vision_rope from it)
  int depth = 0;            ///< vision layers
  int num_heads = 0;
  int patch_size = 0;
  int patches_per_side = 0;     ///< image_size / patch_size (Pixtral, Llama 4), else 0
  int spatial_merge_size = 1;   ///< Qwen: positions in merge-block order (vision_merged_positions)
  int temporal_patch_size = 1;  ///< Qwen: frames per temporal patch
  int window_size = 0;          ///< Qwen2.5-VL: window attention of window_size pixels (vision_window_index)
  std::vector<int> fullatt_block_indexes{};  ///< Qwen2.5-VL: the layers that attend to the whole image
  int learned_positions = 0;                 ///< Qwen3-VL: num_position_embeddings learned absolute positions added too
  double softmax_scale = 0;                  ///< head_dim^-0.5
  friend bool operator==(const vision_spec& a, const vision_spec& b) {
    return a.tower == b.tower && a.rope.head_dim == b.rope.head_dim && a.rope.theta == b.rope.theta &&
           a.rope.convention == b.rope.convention && a.depth == b.depth && a.num_heads == b.num_heads &&
           a.patch_size == b.patch_size && a.patches_per_side == b.patches_per_side &&
           a.spatial_merge_size == b.spatial_merge_size && a.temporal_patch_size == b.temporal_patch_size &&
           a.window_size == b.window_size && a.fullatt_block_indexes == b.fullatt_block_indexes &&
           a.learned_positions == b.learned_positions && a.softmax_scale == b.softmax_scale;
  }
};

/// A model's positional configuration, layer by layer.
struct layered_config {
  model_config base;               ///< what load_hf_config / load_gguf_config read (the full layers' RoPE)
  std::vector<layer_spec> layers;  ///< one per layer (num_hidden_layers / block_count)
  std::optional<mrope_spec> mrope{};
  std::optional<deberta_spec> deberta{};  ///< DeBERTa with relative_attention (positional deberta_relative)
  std::optional<vision_spec> vision{};  ///< the rotary vision tower of a multimodal config (the text side is `layers`)
  bool attention_sinks = false;         ///< learned per-head sink logits in the softmax (gpt-oss)
  positional_family positional = positional_family::none;
  std::string family;                           ///< the architecture-table row ("" when read generically)
  std::ptrdiff_t head_dim = 0;                  ///< per-head q/k width (0 when the config does not say)
  std::optional<double> final_logit_softcap{};  ///< Gemma 2 final_logit_softcapping (on the LM logits)
  std::vector<std::string> warnings;
};

}  // namespace posenc::inline v0
