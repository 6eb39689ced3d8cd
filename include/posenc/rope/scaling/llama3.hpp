// posenc/rope/scaling/llama3.hpp — Llama 3.1 wavelength-band scaling (HF "llama3", docs/spec.md §8.6).
//
// Pairs whose wavelength is shorter than L0/high_freq_factor keep w_k, longer than
// L0/low_freq_factor are divided by the factor, and the band between is blended smoothly. Both
// boundaries belong to the blended band (inclusive, as HF; MLX-LM is exclusive). M = 1.
#pragma once

#include <cmath>
#include <numbers>
#include <vector>

#include <posenc/rope/config.hpp>

namespace posenc::inline v0::detail {

/// Rewrites base frequencies `w` into Llama-3 frequencies (in place).
inline void apply_llama3(std::vector<double>& w, const llama3_scaling& l) {
  const auto L0 = static_cast<double>(l.original_max_position);
  const double lambda_lo = L0 / l.low_freq_factor;   // longer wavelengths: divided by the factor
  const double lambda_hi = L0 / l.high_freq_factor;  // shorter wavelengths: kept
  for (double& wk : w) {
    const double lambda = 2 * std::numbers::pi / wk;
    if (lambda < lambda_hi) continue;
    if (lambda > lambda_lo) {
      wk /= l.factor;
      continue;
    }
    // low == high (Llama 4 Scout): only a wavelength exactly on the one boundary gets here; g = 0
    // (divided, as vLLM), where HF would divide 0 by 0.
    const double band = l.high_freq_factor - l.low_freq_factor;
    const double g = band > 0 ? (L0 / lambda - l.low_freq_factor) / band : 0.0;
    wk = (1 - g) * wk / l.factor + g * wk;
  }
}

}  // namespace posenc::inline v0::detail
