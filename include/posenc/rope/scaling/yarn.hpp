// posenc/rope/scaling/yarn.hpp — YaRN frequencies and magnitude (Peng et al. 2023, §3.2-3.4; HF "yarn",
// llama.cpp rope.scaling.type yarn).
//
// Blends interpolated (w/s) and original frequencies with a linear ramp between the correction
// dimensions of beta_fast and beta_slow, and picks the magnitude by the precedence of docs/spec.md §8.5
// (attention_factor > DeepSeek mscale ratio > get_mscale(s, 1)). GGUF files carry DeepSeek's
// mscale_all_dim as yarn_log_multiplier = 0.1 * mscale_all_dim, and ggml multiplies attn_factor into
// its own 1 + 0.1 ln s: the descriptor reads both back into Hugging Face's terms.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <posenc/rope/scaling/descriptor.hpp>
#include <posenc/rope/scaling/dynamic_ntk.hpp>
#include <posenc/rope/scaling/linear.hpp>

namespace posenc::inline v0 {

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

/// get_mscale(s, m) = 1 for s <= 1, else 0.1 * m * ln(s) + 1 (YaRN eq. 22 with DeepSeek's m).
[[nodiscard]] inline double yarn_get_mscale(double s, double m = 1) noexcept {
  return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1.0;
}

/// The fractional pair index whose wavelength is L0 / beta:
/// corr(beta) = dims * ln(L0 / (2 pi beta)) / (2 ln theta).
[[nodiscard]] inline double yarn_correction_dim(double beta, double dims, double theta,
                                                double original_max_position) noexcept {
  return dims * std::log(original_max_position / (beta * 2 * std::numbers::pi)) / (2 * std::log(theta));
}

/// [low, high] = [corr(beta_fast), corr(beta_slow)], floored/ceiled when `truncate`, then clamped to
/// low >= 0 and high <= dims - 1 (dims, not dims/2, as HF and vLLM do). `dims` is the frequency
/// denominator (R for prefix rotary).
[[nodiscard]] inline std::pair<double, double> yarn_correction_range(double beta_fast, double beta_slow, int dims,
                                                                     double theta, double original_max_position,
                                                                     bool truncate = true) noexcept {
  const auto d = static_cast<double>(dims);
  double low = yarn_correction_dim(beta_fast, d, theta, original_max_position);
  double high = yarn_correction_dim(beta_slow, d, theta, original_max_position);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  return {std::max(low, 0.0), std::min(high, d - 1)};
}

/// The rotary magnitude M of a YaRN config (docs/spec.md §8.5): attention_factor when given; else the
/// DeepSeek ratio get_mscale(s, mscale) / get_mscale(s, mscale_all_dim) when both are given and
/// both non-zero; else get_mscale(s, 1). The zero rule is explicit: HF tests the two values for
/// truthiness, so a zero in either one selects get_mscale(s, 1); we reproduce that result by rule.
[[nodiscard]] inline double yarn_attention_factor(const yarn_scaling& y) noexcept {
  if (y.attention_factor) return *y.attention_factor;
  if (y.mscale && y.mscale_all_dim && *y.mscale != 0 && *y.mscale_all_dim != 0)
    return yarn_get_mscale(y.factor, *y.mscale) / yarn_get_mscale(y.factor, *y.mscale_all_dim);
  return yarn_get_mscale(y.factor, 1);
}

/// DeepSeek's softmax-scale multiplier get_mscale(s, mscale_all_dim)^2 when mscale_all_dim is given
/// and non-zero, else 1 (HF DeepSeek-V2/V3 attention).
[[nodiscard]] inline double yarn_softmax_scale_multiplier(const yarn_scaling& y) noexcept {
  if (!y.mscale_all_dim || *y.mscale_all_dim == 0) return 1.0;
  const double m = yarn_get_mscale(y.factor, *y.mscale_all_dim);
  return m * m;
}

namespace detail {

/// Rewrites `w` (base frequencies w_k = theta^(-2k/dims)) into YaRN frequencies:
/// ramp_k = clamp((k - low) / (high - low), 0, 1) (high += 0.001 when low == high),
/// e_k = (1 - ramp_k) * extrapolation_factor, w'_k = (w_k / s) * (1 - e_k) + w_k * e_k.
inline void apply_yarn(std::span<double> w, const yarn_scaling& y, int dims, double theta) {
  auto [low, high] = yarn_correction_range(y.beta_fast, y.beta_slow, dims, theta,
                                           static_cast<double>(y.original_max_position), y.truncate);
  if (low == high) high += 0.001;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double ramp = std::clamp((static_cast<double>(k) - low) / (high - low), 0.0, 1.0);
    const double e = (1.0 - ramp) * y.extrapolation_factor;
    // HF: interpolation = 1 / (s * theta^(2k/dims)); the same value as w_k / s up to one rounding.
    const double interp = w[k] / y.factor;
    w[k] = interp * (1.0 - e) + w[k] * e;
  }
}

/// The YaRN factor of a config.json: `factor`, else (Hugging Face, DeepSeek-V3 style) the ratio of the
/// lengths with a warning; never re-derived when given (HF #38224).
template <class Keys>
double yarn_factor(const Keys& k, std::int64_t L0, bool L0_given) {
  if (auto f = k.number("factor")) return *f;
  const auto max_pos = k.max_position();
  if (k.gguf() || !L0_given || !max_pos)
    throw config_error(k.name("factor"), "absent", "a scaling factor for rope_type yarn");
  if (L0 == 0)
    throw config_error(k.name("original_max_position_embeddings"), "0",
                       "> 0 (the YaRN factor is derived as max_position_embeddings / it)");
  const double f = static_cast<double>(*max_pos) / static_cast<double>(L0);
  k.warn("yarn: factor absent; derived as max_position_embeddings / original_max_position_embeddings = " + to_text(f));
  return f;
}

/// GGUF: DeepSeek-2's yarn_log_multiplier (0.1 * mscale_all_dim) and ggml's attn_factor, in HF's terms.
template <class Keys>
void yarn_from_ggml(const Keys& k, yarn_scaling& y) {
  if (auto ylm = k.number("yarn_log_multiplier")) {
    // llama.cpp's net rotary magnitude is 1 and the softmax scale gets (1 + ylm * ln s)^2, which is
    // HF's mscale = mscale_all_dim.
    if (*ylm > 0) {
      y.mscale = *ylm / 0.1;
      y.mscale_all_dim = *ylm / 0.1;
    } else {
      y.attention_factor = 1.0;
      k.warn(k.name("yarn_log_multiplier") + " = " + to_text(*ylm) + ": no softmax correction, rotary magnitude 1");
    }
  }
  if (auto attn = k.number("ggml_attn_factor"); attn && *attn != 1.0) {
    // ggml multiplies attn_factor into its own 1 + 0.1 ln(s) (docs/spec.md §8.5).
    const double m = (y.factor > 1 ? 0.1 * std::log(y.factor) + 1.0 : 1.0) * *attn;
    if (y.attention_factor && *y.attention_factor != m)
      throw config_error(k.name("ggml_attn_factor"), "contradicts yarn_log_multiplier = 0");
    y.attention_factor = m;
    k.warn(k.name("ggml_attn_factor") + " = " + to_text(*attn) +
           " read as ggml does: attention_factor = attn_factor * (1 + 0.1 ln factor)");
  }
}

}  // namespace detail

template <>
struct scaling_descriptor<yarn_scaling> {
  static constexpr std::string_view name = "yarn";
  static constexpr std::array<std::string_view, 2> hf_names{"yarn", "deepseek_yarn"};
  static constexpr std::array<std::string_view, 11> keys{"factor",
                                                         "original_max_position_embeddings",
                                                         "beta_fast",
                                                         "beta_slow",
                                                         "mscale",
                                                         "mscale_all_dim",
                                                         "attention_factor",
                                                         "truncate",
                                                         "extrapolation_factor",
                                                         "yarn_log_multiplier",
                                                         "ggml_attn_factor"};
  static constexpr std::string_view gguf_name = "yarn";
  static constexpr std::array<gguf_spelling, 8> gguf_keys{
      {{"rope.scaling.factor", "factor"},
       {"rope.scale_linear", "factor"},
       {"rope.scaling.original_context_length", "original_max_position_embeddings"},
       {"rope.scaling.yarn_beta_fast", "beta_fast"},
       {"rope.scaling.yarn_beta_slow", "beta_slow"},
       {"rope.scaling.yarn_ext_factor", "extrapolation_factor"},
       {"rope.scaling.yarn_log_multiplier", "yarn_log_multiplier"},
       {"rope.scaling.attn_factor", "ggml_attn_factor"}}};

  template <class Keys>
  static yarn_scaling parse(const Keys& k) {
    yarn_scaling y;
    if (k.gguf() && !k.has("factor"))  // llama.cpp: a YaRN type needs its factor
      throw config_error(k.name("factor"), "absent", "a scaling factor for rope_type yarn");
    const bool L0_given = k.has("original_max_position_embeddings");
    y.original_max_position = detail::original_length(k, "yarn");
    y.factor = detail::yarn_factor(k, y.original_max_position, L0_given);
    if (auto v = k.number("beta_fast")) y.beta_fast = *v;
    if (auto v = k.number("beta_slow")) y.beta_slow = *v;
    if (auto v = k.number("extrapolation_factor"); v && (!k.gguf() || *v >= 0)) y.extrapolation_factor = *v;
    if (k.gguf()) {
      detail::yarn_from_ggml(k, y);
      return y;
    }
    y.attention_factor = k.number("attention_factor");
    y.mscale = k.number("mscale");
    y.mscale_all_dim = k.number("mscale_all_dim");
    if (auto v = k.boolean("truncate")) y.truncate = *v;
    return y;
  }
  static void validate(const yarn_scaling& s, const scaling_context& c) {
    using detail::require;
    detail::require_factor(s.factor, "yarn.factor", c.allow_compression);
    detail::require_original_max_position(s.original_max_position, "yarn.original_max_position");
    require(std::isfinite(s.beta_fast), "yarn.beta_fast", s.beta_fast, "a finite number");
    require(std::isfinite(s.beta_slow), "yarn.beta_slow", s.beta_slow, "a finite number");
    require(s.beta_fast > 0, "yarn.beta_fast", s.beta_fast, "> 0");
    require(s.beta_slow > 0, "yarn.beta_slow", s.beta_slow, "> 0");
    require(s.beta_fast > s.beta_slow, "yarn.beta_fast", s.beta_fast,
            "> yarn.beta_slow = " + detail::to_text(s.beta_slow));
    if (s.attention_factor) {
      require(std::isfinite(*s.attention_factor), "yarn.attention_factor", *s.attention_factor, "a finite number");
      require(*s.attention_factor > 0, "yarn.attention_factor", *s.attention_factor, "> 0");
    }
    for (const auto& [v, n] : {std::pair{s.mscale, "yarn.mscale"}, std::pair{s.mscale_all_dim, "yarn.mscale_all_dim"}})
      if (v) {
        require(std::isfinite(*v), n, *v, "a finite number");
        require(*v >= 0, n, *v, ">= 0");
      }
    require(std::isfinite(s.extrapolation_factor), "yarn.extrapolation_factor", s.extrapolation_factor,
            "a finite number");
    require(s.extrapolation_factor >= 0 && s.extrapolation_factor <= 1, "yarn.extrapolation_factor",
            s.extrapolation_factor, "in [0, 1]");
  }
  static scaling_magnitudes frequencies(const yarn_scaling& s, const scaling_context& c, std::int64_t,
                                        std::span<double> w) {
    detail::fill_default(c.theta, c.denominator, w);
    detail::apply_yarn(w, s, c.denominator, c.theta);
    return {yarn_attention_factor(s), yarn_softmax_scale_multiplier(s)};
  }
  static constexpr bool length_dependent(const yarn_scaling&) noexcept { return false; }
  static constexpr std::int64_t base_length(const yarn_scaling&) noexcept { return 0; }
  static std::optional<std::int64_t> switch_length(const yarn_scaling&) noexcept { return std::nullopt; }
  static std::optional<double> factor(const yarn_scaling& s) noexcept { return s.factor; }
  static std::optional<std::int64_t> original_length(const yarn_scaling& s) noexcept { return s.original_max_position; }
  static std::string describe(const yarn_scaling& s) {
    using detail::to_text;
    std::string o = "factor " + to_text(s.factor) + ", original_max_position " +
                    std::to_string(s.original_max_position) + ", beta_fast " + to_text(s.beta_fast) + ", beta_slow " +
                    to_text(s.beta_slow) + ", truncate " + (s.truncate ? "true" : "false");
    if (s.attention_factor) o += ", attention_factor " + to_text(*s.attention_factor);
    if (s.mscale) o += ", mscale " + to_text(*s.mscale);
    if (s.mscale_all_dim) o += ", mscale_all_dim " + to_text(*s.mscale_all_dim);
    return o;
  }
};

}  // namespace posenc::inline v0
