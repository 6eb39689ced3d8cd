// posenc/kernels/angles.hpp — cos/sin rows for a list of positions from double frequencies.
//
// Row t holds M * cos(p_t * w_k) and M * sin(p_t * w_k) for k < pairs, rounded once to C from a
// double computation with exact range reduction (kernels/angle_math.hpp), so float rows are within
// half an ulp (+1e-16) of the exact value at any position. This is what tables are built from.
// The entry dispatches to the best kernel (kernels/isa.hpp); kernels/scalar/angles.hpp is the oracle.
#pragma once

#include <cstddef>
#include <cstdint>

#include <posenc/kernels/arm/neon.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/scalar/angles.hpp>
#include <posenc/kernels/x86/avx2.hpp>
#include <posenc/kernels/x86/avx512.hpp>

namespace posenc::inline v0::kernels {

/// Largest pair count the on-the-fly entries (rotate_positions, rotate_qk with positions) accept:
/// their per-token cos/sin row lives on the stack.
inline constexpr int max_on_the_fly_pairs = 1024;

inline namespace POSENC_KERNELS_ABI {

/// The angle kernel family (kernel_table, kernels/isa.hpp) for angle type C (float or double).
template <class C>
struct angle_kernels {
  void (*table)(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept = nullptr;
  void (*row)(const double* inv_freq, int pairs, std::int64_t position, double magnitude, C* cos,
              C* sin) noexcept = nullptr;
};

template <class C>
struct kernel_family<angle_kernels<C>> {
  template <isa I>
  static consteval angle_kernels<C> make() {
#if POSENC_HAS_X86_KERNELS
    if constexpr (I == isa::avx512)
      return {&avx512::compute_angles<C>, &avx512::row_angles<C>};
    else if constexpr (I == isa::avx2)
      return {&avx2::compute_angles<C>, &avx2::row_angles<C>};
    else
#endif
#if POSENC_HAS_NEON_KERNELS
        if constexpr (I == isa::neon)
      return {&neon::compute_angles<C>, &neon::row_angles<C>};
    else
#endif
      return {&scalar::compute_angles<C>, &scalar::row_angles<C>};
  }
};

namespace detail {
template <class C>
inline void compute_angles_on(isa which, const double* inv_freq, int pairs, const std::int64_t* positions,
                              std::ptrdiff_t count, double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  kernel_table<angle_kernels<C>>(which).table(inv_freq, pairs, positions, count, magnitude, cos, sin, stride);
}
template <class C>
inline void row_angles_on(isa which, const double* inv_freq, int pairs, std::int64_t position, double magnitude, C* cos,
                          C* sin) noexcept {
  kernel_table<angle_kernels<C>>(which).row(inv_freq, pairs, position, magnitude, cos, sin);
}
}  // namespace detail

/// cos/sin rows for `count` positions: row t at cos + t * stride (and sin + t * stride), `pairs`
/// values each, magnitude M applied. C is float or double. Vectorised; agrees with
/// kernels::scalar::compute_angles to within one rounding of C (and is usually identical).
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  detail::compute_angles_on(active_isa(), inv_freq, pairs, positions, count, magnitude, cos, sin, stride);
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
