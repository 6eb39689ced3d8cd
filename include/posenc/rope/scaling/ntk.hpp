// posenc/rope/scaling/ntk.hpp — NTK-aware base changes: static alpha (bloc97) and dynamic NTK (HF "dynamic").
//
// Both rescale the base: theta' = theta * alpha^(dims/(dims-2)) (static) and
// theta' = theta * (s * L / L0 - (s - 1))^(dims/(dims-2)) with L = max(seq_len, L0) (dynamic,
// docs/spec.md §8.3-8.4); frequencies are then theta'^(-2k/dims) and M = 1. vLLM's different `ntk`
// ("fixed and mixed NTK") is not this formula and is not implemented here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace posenc::inline v0 {

/// Static NTK-aware base: theta * alpha^(dims / (dims - 2)). Requires dims > 2.
[[nodiscard]] inline double ntk_static_theta(double theta, double alpha, int dims) noexcept {
  const auto d = static_cast<double>(dims);
  return theta * std::pow(alpha, d / (d - 2));
}

/// Dynamic NTK base for a sequence of length `seq_len` (HF `_compute_dynamic_ntk_parameters`):
/// L = max(seq_len, L0); theta * ((s * L / L0) - (s - 1))^(dims / (dims - 2)). Equals theta for L <= L0.
[[nodiscard]] inline double dynamic_ntk_theta(double theta, double factor, std::int64_t original_max_position,
                                              std::int64_t seq_len, int dims) noexcept {
  const auto L = static_cast<double>(std::max(seq_len, original_max_position));
  const auto L0 = static_cast<double>(original_max_position);
  const auto d = static_cast<double>(dims);
  return theta * std::pow((factor * L / L0) - (factor - 1), d / (d - 2));
}

}  // namespace posenc::inline v0
