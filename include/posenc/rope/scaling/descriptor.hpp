// posenc/rope/scaling/descriptor.hpp — what every RoPE frequency scaling declares about itself.
//
// A scaling is one struct (its parameters) and one `scaling_descriptor<S>` specialisation next to it
// (rope/scaling/<name>.hpp): its name, the `rope_type` values and keys it has in a Hugging Face
// config.json, its GGUF spellings, how it is parsed from those keys, validated, turned into
// frequencies and described. The variant of every scaling is rope_config's `rope_scaling`
// (rope/config.hpp); rope/scaling/dispatch.hpp visits it. The primary template below is declared
// and never defined: a scaling in the variant without a descriptor fails to compile at every
// visit, so no place can forget one (validation, frequencies, loaders, the CLI's report).
//
// Descriptors parse from a `Keys` object (a template parameter, so this layer needs no config
// types), which the loaders implement (config/scaling_keys.hpp):
//   std::optional<double> number(key); std::optional<std::int64_t> length(key);
//   std::optional<bool> boolean(key); std::optional<std::vector<double>> numbers(key);
//   bool has(key); std::string name(key)   // the key as spelled in the file, for messages
//   std::optional<std::int64_t> max_position(); bool gguf(); void warn(std::string)
// where `key` is the logical (Hugging Face) name; a GGUF reader maps the descriptor's gguf_keys
// onto those names first. Parse errors are config_error naming the key as spelled in the file.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <posenc/core/errors.hpp>
#include <posenc/rope/angles.hpp>

namespace posenc::inline v0 {

/// What a scaling's validation and frequency function see of the RoPE configuration.
struct scaling_context {
  double theta = 10000;   ///< the base (rope_theta)
  int denominator = 0;    ///< the "dims" of every frequency formula: R, or D - offset when proportional
  int rotated_pairs = 0;  ///< pairs with a frequency (R / 2); the frequency span has this many entries
  bool allow_compression = false;
  angle_mode angles = angle_mode::exact;
};

/// The magnitudes a scaling contributes besides its frequencies.
struct scaling_magnitudes {
  double attention_scaling = 1;         ///< M: multiplies cos and sin
  double softmax_scale_multiplier = 1;  ///< multiplies the attention's softmax scale (DeepSeek YaRN)
};

/// One GGUF spelling of a scaling key: metadata `{arch}.<gguf>` (or, with the prefix "tensor:", a
/// tensor of that name) carries the logical key `key`.
struct gguf_spelling {
  std::string_view gguf;
  std::string_view key;
};

/// Declared for every alternative of rope_scaling, never defined in general (see the banner).
template <class S>
struct scaling_descriptor;

namespace detail {

/// out[k] = 1 / theta^(2k / denominator) (the unscaled frequencies, evaluated as HF does).
inline void fill_default(double theta, int denominator, std::span<double> out) noexcept {
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = 1.0 / std::pow(theta, static_cast<double>(2 * static_cast<int>(k)) / static_cast<double>(denominator));
}

/// A required key of a scaling: its value, or config_error naming it ("absent", what it is for).
template <class Keys>
double required_number(const Keys& k, std::string_view key, std::string_view what) {
  const auto v = k.number(key);
  if (!v) throw config_error(k.name(key), "absent", std::string(what));
  return *v;
}

/// The pre-training length L0 of a scaling: original_max_position_embeddings, else (as Hugging Face's
/// config classes set it) max_position_embeddings with a warning; config_error when neither is given.
template <class Keys>
std::int64_t original_length(const Keys& k, std::string_view scaling) {
  if (auto v = k.length("original_max_position_embeddings")) return *v;
  if (auto m = k.max_position()) {
    k.warn(std::string(scaling) + ": " + k.name("original_max_position_embeddings") +
           " absent; L0 = " + k.name("max_position_embeddings") + " = " + std::to_string(*m));
    return *m;
  }
  throw config_error(k.name("original_max_position_embeddings"), "absent", "the pre-training context length L0");
}

}  // namespace detail
}  // namespace posenc::inline v0
