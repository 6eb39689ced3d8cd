// posenc/rope/config.hpp — configuration aggregates for RoPE and each of its frequency scalings.
//
// Plain structs with defaults taken from the references (docs/spec.md §7-8), meant for designated
// initialisers:
//
//   posenc::rope_config cfg{.head_dim = 128, .theta = 500000,
//                           .scaling = posenc::llama3_scaling{.factor = 8, .original_max_position = 8192}};
//
// "Absent" is std::optional / 0-free: an explicit 0 is a value (and usually invalid), never a
// stand-in for "use the default" (the references' truthiness bugs are not reproduced). Validation
// happens when an encoder or schedule is constructed from the config (rope/schedule.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include <posenc/core/pairing.hpp>
#include <posenc/rope/angles.hpp>

namespace posenc::inline v0 {

/// No scaling: w_k = theta^(-2k/R), M = 1 (HF rope_type "default").
struct default_scaling {
  friend bool operator==(const default_scaling&, const default_scaling&) = default;
};

/// Position interpolation (HF "linear"): w'_k = w_k / factor.
struct linear_scaling {
  double factor = 1;
  friend bool operator==(const linear_scaling&, const linear_scaling&) = default;
};

/// Static NTK-aware base change (bloc97; vLLM/Hunyuan `alpha`): theta' = theta * alpha^(R/(R-2)).
struct ntk_scaling {
  double alpha = 1;
  friend bool operator==(const ntk_scaling&, const ntk_scaling&) = default;
};

/// Where dynamic NTK takes the sequence length L from (docs/spec.md §8.4).
enum class dynamic_length_source : unsigned char {
  max_position_in_call,  ///< HF: L = max(positions in this call) + 1
  fixed_max,             ///< vLLM: L = original_max_position * factor, once (a static NTK base)
};

/// Dynamic NTK (HF "dynamic"): theta' = theta * ((factor * L / L0) - (factor - 1))^(R/(R-2)) with
/// L = max(seq_len, L0) and L0 = original_max_position (HF uses max_position_embeddings here).
struct dynamic_ntk_scaling {
  double factor = 1;
  std::int64_t original_max_position = 0;  ///< L0 (required, > 0)
  dynamic_length_source length_source = dynamic_length_source::max_position_in_call;
  friend bool operator==(const dynamic_ntk_scaling&, const dynamic_ntk_scaling&) = default;
};

/// YaRN (Peng et al. 2023; HF "yarn"), including DeepSeek's mscale / mscale_all_dim.
struct yarn_scaling {
  double factor = 1;                       ///< s (required)
  std::int64_t original_max_position = 0;  ///< L0 (required, > 0)
  double beta_fast = 32;
  double beta_slow = 1;
  std::optional<double> attention_factor{};  ///< explicit M; overrides the mscale rules
  std::optional<double> mscale{};            ///< DeepSeek: M = get_mscale(s, mscale) / get_mscale(s, mscale_all_dim)
  std::optional<double> mscale_all_dim{};    ///< DeepSeek: softmax scale *= get_mscale(s, mscale_all_dim)^2
  bool truncate = true;                      ///< floor/ceil the correction range (gpt-oss ships false)
  double extrapolation_factor = 1;           ///< vLLM / original YaRN; 1 in every HF config
  friend bool operator==(const yarn_scaling&, const yarn_scaling&) = default;
};

/// Llama 3.1 wavelength bands (HF "llama3").
struct llama3_scaling {
  double factor = 8;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  std::int64_t original_max_position = 8192;
  friend bool operator==(const llama3_scaling&, const llama3_scaling&) = default;
};

/// When LongRoPE uses its long factors (docs/spec.md §8.7).
enum class longrope_switch : unsigned char {
  per_call_max_position,  ///< HF: long iff max(positions in this call) + 1 > L0
  fixed_by_capacity,      ///< vLLM / llama.cpp: long iff `capacity` > L0, fixed for the encoder's life
  always_long,            ///< MLX-LM
};

/// LongRoPE / Phi-3 "su" (HF "longrope"): w'_k = w_k / f_k with f = short_factor or long_factor.
struct longrope_scaling {
  std::vector<double> short_factor;          ///< R/2 entries
  std::vector<double> long_factor;           ///< R/2 entries
  std::int64_t original_max_position = 0;    ///< L0 (required, > 0)
  std::optional<double> factor{};            ///< s; absent: max_position / L0
  std::int64_t max_position = 0;             ///< max_position_embeddings, used only when factor is absent
  std::optional<double> attention_factor{};  ///< M; absent: sqrt(1 + ln(s) / ln(L0)) for s > 1, else 1
  longrope_switch switch_policy = longrope_switch::per_call_max_position;
  std::int64_t capacity = 0;  ///< context capacity for fixed_by_capacity
  friend bool operator==(const longrope_scaling&, const longrope_scaling&) = default;
};

/// Generic per-pair divisors (ggml `freq_factors`, llama.cpp `rope_freqs`): w'_k = w_k / factors[k].
struct frequency_factors {
  std::vector<double> factors;  ///< R/2 entries, each > 0
  double attention_factor = 1;
  friend bool operator==(const frequency_factors&, const frequency_factors&) = default;
};

/// Frequencies given outright (e.g. read from a checkpoint or a reference dump).
struct explicit_frequencies {
  std::vector<double> inv_freq;  ///< R/2 entries, each finite and >= 0
  double attention_factor = 1;
  friend bool operator==(const explicit_frequencies&, const explicit_frequencies&) = default;
};

/// One of the scalings above.
using rope_scaling = std::variant<default_scaling, linear_scaling, ntk_scaling, dynamic_ntk_scaling, yarn_scaling,
                                  llama3_scaling, longrope_scaling, frequency_factors, explicit_frequencies>;

/// The context-extension factor of a scaling that has one (linear, dynamic NTK, YaRN, Llama 3,
/// LongRoPE); absent for the others.
[[nodiscard]] inline std::optional<double> scaling_factor(const rope_scaling& s) noexcept {
  if (const auto* v = std::get_if<linear_scaling>(&s)) return v->factor;
  if (const auto* v = std::get_if<dynamic_ntk_scaling>(&s)) return v->factor;
  if (const auto* v = std::get_if<yarn_scaling>(&s)) return v->factor;
  if (const auto* v = std::get_if<llama3_scaling>(&s)) return v->factor;
  if (const auto* v = std::get_if<longrope_scaling>(&s)) return v->factor;
  return std::nullopt;
}

/// The two partial-rotary conventions (docs/spec.md §7.4).
enum class partial_rotary_mode : unsigned char {
  prefix,        ///< rotate R dims with denominator R, pass the rest through (NeoX, GPT-J, HF default)
  proportional,  ///< pairs over the full head with denominator D; pairs >= R/2 get frequency 0 (HF v5, MLX-LM)
};

/// Everything that defines a RoPE encoder.
struct rope_config {
  std::ptrdiff_t head_dim = 0;                    ///< D (required)
  std::optional<std::ptrdiff_t> rotary_dim{};     ///< R; absent: floor(D * partial_rotary_factor), or D - rotary_offset
  std::optional<double> partial_rotary_factor{};  ///< in (0, 1]; must agree with rotary_dim when both given
  partial_rotary_mode partial_mode = partial_rotary_mode::prefix;
  std::ptrdiff_t rotary_offset = 0;  ///< first rotated element inside the head (DeepSeek nope-first, ggml n_offs)
  double theta = 10000;              ///< base (rope_theta)
  pairing layout = pairing::half_split;
  rope_scaling scaling = default_scaling{};
  angle_mode angles = angle_mode::exact;
  bool allow_compression = false;  ///< permit factor < 1 (frequencies go up)
  friend bool operator==(const rope_config&, const rope_config&) = default;
};

}  // namespace posenc::inline v0
