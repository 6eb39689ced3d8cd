// posenc/config/model_config.hpp — what a model configuration says about positions, in posenc terms.
//
// The result of loading a Hugging Face config.json (config/hf.hpp) or GGUF metadata
// (config/gguf.hpp): a rope_config ready for rope_schedule / rope (docs/spec.md §7-8), the T5 bucket and
// ALiBi parameters when the model uses those, and the warnings collected while reading (unknown or
// ignored keys). Key names and their meaning: docs/spec.md §11. This header only declares the result and
// the typed readers the loaders share; it parses nothing.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

/// Everything position-related a model configuration specifies.
struct model_config {
  std::string format;      ///< "hf" (config.json) or "gguf"
  std::string model_type;  ///< HF `model_type` or GGUF `general.architecture` ("" when absent)
  /// Normalised RoPE scaling name ("default", "linear", "ntk", "dynamic", "yarn", "llama3",
  /// "longrope", "frequency_factors", "proportional"); "" when the model has no RoPE.
  std::string rope_type;
  std::optional<rope_config> rope;  ///< absent for models without rotary embeddings

  std::optional<std::int64_t> max_position_embeddings;  ///< as written (meaning varies by model, docs/spec.md §11)
  std::optional<int> num_attention_heads;
  std::optional<int> num_key_value_heads;

  /// T5 relative-position buckets (HF relative_attention_num_buckets / _max_distance).
  struct t5_params {
    std::ptrdiff_t num_buckets = 32;
    std::ptrdiff_t max_distance = 128;
    friend bool operator==(const t5_params&, const t5_params&) = default;
  };
  std::optional<t5_params> t5;

  /// ALiBi (BLOOM, MPT, Falcon `alibi`, GGUF attention.max_alibi_bias): the slopes of alibi_slopes(heads,
  /// max_bias) times slope_scale (Falcon adds the bias before its 1/sqrt(head_dim): slope_scale = that).
  struct alibi_params {
    double max_bias = 8;
    double slope_scale = 1;
    friend bool operator==(const alibi_params&, const alibi_params&) = default;
  };
  std::optional<alibi_params> alibi;

  /// Learned absolute positions: the embedding row of position 0 (OPT 2, RoBERTa pad_token_id + 1); absent
  /// for other positional families.
  std::optional<std::int64_t> learned_offset{};

  /// Keys that were present but not used (unknown rope keys, keys another rope_type needs, ...).
  /// Each entry names the key and says why it was ignored.
  std::vector<std::string> warnings;
};

/// The name of the scaling alternative held by `s` (matches model_config::rope_type).
[[nodiscard]] inline const char* scaling_type_name(const rope_scaling& s) noexcept {
  return scaling_name(s).data();  // the descriptors' names are string literals
}

/// How the loaders treat a model family the architecture table does not know.
struct load_options {
  /// false (default): an unknown HF model_type or GGUF architecture is a config_error naming it and the
  /// nearest known names. true: the keys are read at face value (layer_types, sliding_window_pattern,
  /// no_rope_layers, rope_local_base_freq, ...) and every guess is listed in `warnings`.
  bool generic = false;
};

namespace detail {

/// Typed access to optional keys. Every reader treats a missing key and JSON null as absent and
/// throws config_error naming the key when the value has the wrong type or range.
struct key_reader {
  const config_value* object = nullptr;  ///< may be null (then every key is absent)
  std::string prefix;                    ///< prepended to key names in messages, e.g. "rope_scaling."
  /// How keys are spelled in the file, when `object` holds them under other (logical) names.
  const std::map<std::string, std::string, std::less<>>* spelling = nullptr;

  [[nodiscard]] const config_value* get(std::string_view key) const noexcept {
    if (!object || !object->is_object()) return nullptr;
    const config_value* v = object->find(key);
    return (v && !v->is_null()) ? v : nullptr;
  }
  [[nodiscard]] bool has(std::string_view key) const noexcept { return get(key) != nullptr; }
  [[nodiscard]] std::string name(std::string_view key) const {
    if (spelling)
      if (const auto it = spelling->find(key); it != spelling->end()) return it->second;
    return prefix + std::string(key);
  }

  [[nodiscard]] std::optional<double> number(std::string_view key) const {
    const config_value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw config_error(name(key), v->to_text(), "a number");
    return v->as_number();
  }

  [[nodiscard]] std::optional<std::int64_t> integer(std::string_view key, std::int64_t lo = 0,
                                                    std::int64_t hi = std::numeric_limits<int>::max()) const {
    const config_value* v = get(key);
    if (!v) return std::nullopt;
    std::int64_t i = 0;
    if (v->is_integer()) {
      i = v->as_integer();
    } else if (v->is_number() && std::isfinite(v->as_number()) && v->as_number() == std::floor(v->as_number()) &&
               std::fabs(v->as_number()) < 9.0e15) {
      i = static_cast<std::int64_t>(v->as_number());
    } else {
      throw config_error(name(key), v->to_text(), "an integer");
    }
    if (i < lo || i > hi)
      throw config_error(name(key), v->to_text(),
                         "an integer in [" + detail::to_text(lo) + ", " + detail::to_text(hi) + "]");
    return i;
  }

  [[nodiscard]] std::optional<int> int32(std::string_view key, int lo = 0) const {
    auto i = integer(key, lo, std::numeric_limits<int>::max());
    return i ? std::optional<int>(static_cast<int>(*i)) : std::nullopt;
  }

  [[nodiscard]] std::optional<bool> boolean(std::string_view key) const {
    const config_value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_bool()) throw config_error(name(key), v->to_text(), "true or false");
    return v->as_bool();
  }

  [[nodiscard]] std::optional<std::string> string(std::string_view key) const {
    const config_value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw config_error(name(key), v->to_text(), "a string");
    return v->as_string();
  }

  [[nodiscard]] std::optional<std::vector<double>> numbers(std::string_view key) const {
    const config_value* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_list()) throw config_error(name(key), v->to_text(), "a list of numbers");
    std::vector<double> out;
    out.reserve(v->items().size());
    for (const auto& e : v->items()) {
      if (!e.is_number()) throw config_error(name(key), v->to_text(), "a list of numbers");
      out.push_back(e.as_number());
    }
    return out;
  }
};

/// Two optional sources for one setting (e.g. top-level rope_theta and rope_parameters.rope_theta):
/// equal or one-sided is fine, different values are a contradiction naming `second_name`.
template <class T>
std::optional<T> merge_same(const std::optional<T>& first, std::string_view first_name, const std::optional<T>& second,
                            std::string_view second_name) {
  if (first && second && !(*first == *second)) {
    throw config_error(second_name, "contradicts " + std::string(first_name) + " (" + detail::to_text(*first) + " vs " +
                                        detail::to_text(*second) + ")");
  }
  return first ? first : second;
}

}  // namespace detail
}  // namespace posenc::inline v0
