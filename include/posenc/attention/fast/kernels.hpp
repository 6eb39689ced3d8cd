// posenc/attention/fast/kernels.hpp — the attention's kernel table of each target as a kernel family
// (kernels/isa.hpp: kernel_family / kernel_table, the mechanism the rotation kernels use too) and the
// table of the active ISA (kernels::active_isa(): detected once, POSENC_ISA / set_isa override).
//
// Each target's header (fast/scalar.hpp, fast/x86/avx2.hpp, fast/x86/avx512.hpp, fast/arm/neon.hpp)
// includes the one algorithm, fast/tile-inl.hpp, in its region and namespace kernels::<target>, where
// make_attention_kernels() fills the table (docs/kernels.md). This header only says which target
// fills the table of which ISA; the records say themselves which CPU extension they need.
#pragma once

#include <posenc/attention/fast/arm/neon.hpp>
#include <posenc/attention/fast/scalar.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/attention/fast/x86/avx2.hpp>
#include <posenc/attention/fast/x86/avx512.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {

template <>
struct kernel_family<attention_kernels> {
  template <isa I>
  static consteval attention_kernels make() {
#if POSENC_HAS_X86_KERNELS
    if constexpr (I == isa::avx512)
      return avx512::make_attention_kernels();
    else if constexpr (I == isa::avx2)
      return avx2::make_attention_kernels();
    else
#endif
#if POSENC_HAS_NEON_KERNELS
        if constexpr (I == isa::neon)
      return neon::make_attention_kernels();
    else
#endif
      return scalar::make_attention_kernels();
  }
};

/// The attention kernels of ISA `which` (scalar's where this build has none for it). The dot-product
/// records are there whenever the target has code for them; storage_kernels::usable() says whether
/// this CPU runs them.
[[nodiscard]] inline const attention_kernels& attention_kernels_for(isa which) noexcept {
  return kernel_table<attention_kernels>(which);
}

/// The attention kernels of the active ISA.
[[nodiscard]] inline const attention_kernels& active_attention_kernels() noexcept {
  return attention_kernels_for(active_isa());
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
