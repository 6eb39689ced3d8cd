// posenc/attention/fast/kernels.hpp — the table of attention tile microkernels and its per-ISA
// choice (the same run-time choice as the rotation kernels: kernels::active_isa()).
//
// Each ISA's operations live in fast/ops/<isa>.hpp, which opens a target region and an ABI-tagged
// namespace and includes the one algorithm, fast/tile-inl.hpp (docs/design.md §7). This header only
// declares the table and picks an entry; it computes nothing itself.
#pragma once

#include <cstddef>

#include <posenc/attention/fast/ops/avx2.hpp>
#include <posenc/attention/fast/ops/avx512.hpp>
#include <posenc/attention/fast/ops/avx512_bf16.hpp>
#include <posenc/attention/fast/ops/neon.hpp>
#include <posenc/attention/fast/ops/scalar.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::attention_kernels {
inline namespace POSENC_KERNELS_ABI {

/// The kernels of ISA `which` (scalar when this build has none for it).
[[nodiscard]] inline tile_kernels tile_kernels_for(kernels::isa which) noexcept {
  switch (which) {
#if POSENC_HAS_X86_KERNELS
    case kernels::isa::avx512: {
      tile_kernels t = avx512::make_tile_kernels();
      if (avx512_bf16::cpu_has()) {
        t.qk_heads_bf16_dot = &avx512_bf16::qk_heads;
        t.pv_heads_bf16_dot = &avx512_bf16::pv_heads;
        t.round_q_bf16_dot = &avx512_bf16::round_q;
      }
      return t;
    }
    case kernels::isa::avx2:
      return avx2::make_tile_kernels();
#endif
#if POSENC_HAS_NEON_KERNELS
    case kernels::isa::neon:
      return neon::make_tile_kernels();
#endif
    default:
      return scalar::make_tile_kernels();
  }
}

/// The kernels of the active ISA (kernels::active_isa(): detected once, POSENC_ISA / set_isa override).
[[nodiscard]] inline tile_kernels active_tile_kernels() noexcept {
  return tile_kernels_for(kernels::active_isa());
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::attention_kernels
