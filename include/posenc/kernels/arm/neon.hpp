// posenc/kernels/arm/neon.hpp — the NEON kernels: the rotation and angle drivers (kernels/drivers/*.inl)
// instantiated over ops/neon.hpp in the NEON target region and ABI-tagged namespace kernels::neon.
//
// This file and ops/neon.hpp are all an ISA costs; the dispatcher (kernels/isa.hpp) adds one case.
#pragma once

#include <posenc/kernels/angle_math.hpp>
#include <posenc/kernels/ops/neon.hpp>
#include <posenc/kernels/types.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <posenc/kernels/ops/begin_neon.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace neon {
#include <posenc/kernels/drivers/angles.inl>
#include <posenc/kernels/drivers/rotate.inl>
}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_NEON_KERNELS
