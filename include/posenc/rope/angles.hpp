// posenc/rope/angles.hpp — the angle p * w and its sine and cosine for the RoPE layer (docs/design.md §5,
// docs/spec.md §1.3): the exact reduction lives in the kernel layer (kernels/angle_math.hpp, where its
// accuracy at every int64 position is documented) and is re-exported here; the Hugging Face float32
// arithmetic (reference_fp32) is defined here. Scalar only.
#pragma once

#include <cmath>
#include <cstdint>

#include <posenc/kernels/angle_math.hpp>

namespace posenc::inline v0 {

/// How angles are formed. `exact` (default): double, range-reduced (error ~1e-16 rad at any
/// position below 2^31 / w; see kernels/angle_math.hpp beyond). `reference_fp32`: float(position) *
/// float(inv_freq) in float32 and float32 cos/sin, as Hugging Face computes them, for matching a
/// trained model's exact numbers.
enum class angle_mode : unsigned char { exact, reference_fp32 };

namespace detail {

using kernels::angle_constants::inv_two_pi;
using kernels::angle_constants::two_pi;
using kernels::angle_constants::two_pi_c1;
using kernels::angle_constants::two_pi_c2;
using kernels::angle_constants::two_pi_c3;
using kernels::exact::reduced_angle;
using kernels::exact::sincos_exact;

/// Hugging Face fp32 arithmetic: angle = float(p) * float(w) rounded to float, then float cos/sin.
/// A product alone (nothing to contract it with), so the result does not depend on TU flags.
inline void sincos_reference_fp32(std::int64_t p, float w, float& s, float& c) noexcept {
  const float angle = static_cast<float>(p) * w;
  s = std::sin(angle);
  c = std::cos(angle);
}

}  // namespace detail
}  // namespace posenc::inline v0
