// posenc/attention/fast/arm/neon.hpp — the NEON target's attention kernels: fast/tile-inl.hpp over
// the NEON operations (kernels/ops/neon.hpp, 4 floats per vector, AArch64 baseline) in the NEON target
// region and namespace kernels::neon. No dot-product forms.
#pragma once

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/ops/neon.hpp>

#if POSENC_HAS_NEON_KERNELS
#include <arm_neon.h>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <posenc/kernels/ops/begin_neon.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace neon {

static constexpr int qk_block_rows = 6;  // 24 accumulators of 32 registers
static constexpr int pv_block_rows = 6;
static constexpr void dot_forms(attention_kernels&) {}  // none

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace neon
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_NEON_KERNELS
