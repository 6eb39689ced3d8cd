// posenc/kernels/x86/avx512.hpp — the AVX-512 kernels: the rotation and angle drivers (kernels/drivers/*.inl)
// instantiated over ops/avx512.hpp in the AVX-512 target region and ABI-tagged namespace kernels::avx512.
//
// This file and ops/avx512.hpp are all an ISA costs; the dispatcher (kernels/isa.hpp) adds one case.
#pragma once

#include <posenc/kernels/angle_math.hpp>
#include <posenc/kernels/ops/avx512.hpp>
#include <posenc/kernels/types.hpp>

#if POSENC_HAS_X86_KERNELS
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx512.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx512 {
#include <posenc/kernels/drivers/angles.inl>
#include <posenc/kernels/drivers/rotate.inl>
}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
