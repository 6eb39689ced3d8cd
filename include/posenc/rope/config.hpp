// posenc/rope/config.hpp — the RoPE configuration aggregate and the variant of its frequency scalings.
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
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <posenc/core/pairing.hpp>
#include <posenc/rope/angles.hpp>
#include <posenc/rope/scaling/default.hpp>
#include <posenc/rope/scaling/dynamic_alpha.hpp>
#include <posenc/rope/scaling/dynamic_ntk.hpp>
#include <posenc/rope/scaling/explicit.hpp>
#include <posenc/rope/scaling/frequency_factors.hpp>
#include <posenc/rope/scaling/linear.hpp>
#include <posenc/rope/scaling/llama3.hpp>
#include <posenc/rope/scaling/longrope.hpp>
#include <posenc/rope/scaling/ntk.hpp>
#include <posenc/rope/scaling/yarn.hpp>

namespace posenc::inline v0 {

/// One of the scalings (each is a struct and its scaling_descriptor, rope/scaling/<name>.hpp). Every
/// visit goes through visit_scaling / for_each_scaling below, which need a descriptor for each
/// alternative: adding a scaling is its header and one entry here.
using rope_scaling =
    std::variant<default_scaling, linear_scaling, ntk_scaling, dynamic_ntk_scaling, yarn_scaling, llama3_scaling,
                 longrope_scaling, frequency_factors, explicit_frequencies, dynamic_alpha_scaling>;

/// f(descriptor, scaling) with the descriptor of the alternative `s` holds (an empty tag object whose
/// static members are the scaling's name, keys, parse, validate, frequencies and describe).
template <class F>
decltype(auto) visit_scaling(const rope_scaling& s, F&& f) {
  return std::visit(
      [&](const auto& v) -> decltype(auto) { return f(scaling_descriptor<std::decay_t<decltype(v)>>{}, v); }, s);
}

/// f(scaling_descriptor<S>{}) for every alternative S of rope_scaling, in order.
template <class F>
void for_each_scaling(F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(scaling_descriptor<std::variant_alternative_t<I, rope_scaling>>{}), ...);
  }
  (std::make_index_sequence<std::variant_size_v<rope_scaling>>{});
}

/// The name of the scaling `s` holds ("default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope",
/// "frequency_factors", "explicit").
[[nodiscard]] inline std::string_view scaling_name(const rope_scaling& s) noexcept {
  return visit_scaling(s, [](auto d, const auto&) { return decltype(d)::name; });
}

/// The scaling's parameters in words ("factor 8, original_max_position 8192, ..."; "" for none).
[[nodiscard]] inline std::string describe_scaling(const rope_scaling& s) {
  return visit_scaling(s, [](auto d, const auto& v) { return decltype(d)::describe(v); });
}

/// The context-extension factor of a scaling that has one (linear, dynamic NTK, YaRN, Llama 3,
/// LongRoPE); absent for the others.
[[nodiscard]] inline std::optional<double> scaling_factor(const rope_scaling& s) noexcept {
  return visit_scaling(s, [](auto d, const auto& v) { return decltype(d)::factor(v); });
}

/// The pre-training length L0 of a scaling that has one; absent for the others.
[[nodiscard]] inline std::optional<std::int64_t> scaling_original_length(const rope_scaling& s) noexcept {
  return visit_scaling(s, [](auto d, const auto& v) { return decltype(d)::original_length(v); });
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
