// posenc/rope/scaling/explicit.hpp — frequencies given outright (read from a checkpoint or a reference
// dump), with a fixed magnitude. No configuration format names it; it is built in code.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/longrope.hpp>

namespace posenc::inline v0 {

/// Frequencies given outright (e.g. read from a checkpoint or a reference dump).
struct explicit_frequencies {
  std::vector<double> inv_freq;  ///< R/2 entries, each finite and >= 0
  double attention_factor = 1;
  friend bool operator==(const explicit_frequencies&, const explicit_frequencies&) = default;
};

template <>
struct scaling_descriptor<explicit_frequencies> {
  static constexpr std::string_view name = "explicit";
  static constexpr std::array<std::string_view, 0> hf_names{};
  static constexpr std::array<std::string_view, 1> keys{"inv_freq"};
  static constexpr std::string_view gguf_name = "";
  static constexpr std::array<gguf_spelling, 0> gguf_keys{};

  template <class Keys>
  static explicit_frequencies parse(const Keys& k) {
    auto f = k.numbers("inv_freq");
    if (!f) throw config_error(k.name("inv_freq"), "absent", "a list of rotary_dim/2 frequencies");
    return {std::move(*f), 1.0};
  }
  static void validate(const explicit_frequencies& s, const scaling_context& c) {
    detail::require_per_pair(s.inv_freq, c.rotated_pairs, "explicit_frequencies.inv_freq", true);
    detail::require_attention_factor(s.attention_factor, "explicit_frequencies.attention_factor");
  }
  static scaling_magnitudes frequencies(const explicit_frequencies& s, const scaling_context&, std::int64_t,
                                        std::span<double> w) {
    std::copy(s.inv_freq.begin(), s.inv_freq.end(), w.begin());
    return {s.attention_factor, 1.0};
  }
  static constexpr bool length_dependent(const explicit_frequencies&) noexcept { return false; }
  static constexpr std::int64_t base_length(const explicit_frequencies&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const explicit_frequencies&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const explicit_frequencies&) noexcept { return std::nullopt; }
  static std::optional<std::int64_t> original_length(const explicit_frequencies&) noexcept { return std::nullopt; }
  static std::string describe(const explicit_frequencies& s) {
    return std::to_string(s.inv_freq.size()) + " explicit frequencies";
  }
};

}  // namespace posenc::inline v0
