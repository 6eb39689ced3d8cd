// posenc/config/hf.hpp — Hugging Face config.json keys -> model_config (docs/spec.md §11, §8).
//
// Reads a config_value tree (config/json.hpp makes one from a file; config/read_hf.hpp collects its
// keys) through the family's row of the architecture table, as the family's reference code reads it:
// rope_theta / rope_scaling / rope_parameters (v5), legacy `type`, GPT-NeoX rotary_pct and
// rotary_emb_base, GPT-J rotary_dim, DeepSeek qk_rope_head_dim / rope_interleave, Phi-3's top-level
// original_max_position_embeddings, T5 buckets, ALiBi and learned positions, class defaults of keys
// the config leaves out. Unlike HF it never derives a value the config gives (HF #38224), treats an
// explicit 0 as a value (HF's `x or default` does not), rejects contradictory keys, and reports every
// key it ignores in model_config::warnings. An unknown model_type is refused unless the load is generic.
#pragma once

#include <posenc/config/model_config.hpp>
#include <posenc/config/read_hf.hpp>
#include <posenc/config/rules.hpp>
#include <posenc/config/value.hpp>

namespace posenc::inline v0 {

/// Reads the position-related keys of a Hugging Face config.json tree. Throws config_error naming
/// the key for a wrong type, a contradiction, a missing required key, or an unknown model_type (unless
/// `options.generic`); the returned rope_config is complete but validated only when a schedule or
/// encoder is built from it (rope/schedule.hpp).
[[nodiscard]] inline model_config load_hf_config(const config_value& root, const load_options& options = {}) {
  return detail::rules::load_model(read_hf_view(root), options);
}

}  // namespace posenc::inline v0
