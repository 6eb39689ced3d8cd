// posenc/attention/fast/scalar.hpp — the scalar target's attention kernels: fast/tile-inl.hpp over
// the portable operations (kernels/ops/scalar.hpp) in namespace kernels::scalar, the reference
// kernels every SIMD target is tested against (same algorithm, same exp and tanh polynomials). No
// target attribute, no dot-product forms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/ops/scalar.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace scalar {

static constexpr int qk_block_rows = 4;  // query rows per register block of the packed products
static constexpr int pv_block_rows = 4;
static constexpr void dot_forms(attention_kernels&) {}  // none

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

}  // namespace scalar
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
