// posenc/attention/fast/kernels.hpp — the attention tile kernels as a kernel family (kernels/isa.hpp:
// kernel_family / kernel_table, the mechanism the rotation kernels use too) and its per-ISA choice
// (kernels::active_isa(): detected once, POSENC_ISA / set_isa override).
//
// Each ISA's operations live in fast/ops/<isa>.hpp, which opens a target region and an ABI-tagged
// namespace and includes the one algorithm, fast/tile-inl.hpp (docs/design.md §7). This header only
// says which namespace fills the table for which ISA; it computes nothing itself.
#pragma once

#include <cstddef>

#include <posenc/attention/fast/ops/avx2.hpp>
#include <posenc/attention/fast/ops/avx2_vnni.hpp>
#include <posenc/attention/fast/ops/avx512.hpp>
#include <posenc/attention/fast/ops/avx512_bf16.hpp>
#include <posenc/attention/fast/ops/avx512_vnni.hpp>
#include <posenc/attention/fast/ops/neon.hpp>
#include <posenc/attention/fast/ops/scalar.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {

template <>
struct kernel_family<::posenc::detail::tile_kernels> {
  template <isa I>
  static consteval ::posenc::detail::tile_kernels make() {
    namespace ak = ::posenc::detail;
#if POSENC_HAS_X86_KERNELS
    if constexpr (I == isa::avx512) {
      // The AVX512_BF16 and AVX512_VNNI forms sit in the AVX-512 table; tile_kernels_for removes them on
      // CPUs without the instruction (a run-time fact the constant table cannot know).
      ak::tile_kernels t = ak::avx512::make_tile_kernels();
      t.qk_heads_bf16_dot = &ak::avx512_bf16::qk_heads;
      t.pv_heads_bf16_dot = &ak::avx512_bf16::pv_heads;
      t.round_q_bf16_dot = &ak::avx512_bf16::round_q;
      t.qk_heads_q8_dot = &ak::avx512_vnni::qk_heads;
      t.prep_q_q8_dot = &ak::avx512_vnni::prep_q;
      t.q8_dot_floats = &ak::avx512_vnni::prepared_floats;
      return t;
    } else if constexpr (I == isa::avx2) {
      // The AVX-VNNI form sits in the AVX2 table; tile_kernels_for removes it on CPUs without it.
      ak::tile_kernels t = ak::avx2::make_tile_kernels();
      t.qk_heads_q8_dot = &ak::avx2_vnni::qk_heads;
      t.prep_q_q8_dot = &ak::avx2_vnni::prep_q;
      t.q8_dot_floats = &ak::avx2_vnni::prepared_floats;
      return t;
    } else
#endif
#if POSENC_HAS_NEON_KERNELS
        if constexpr (I == isa::neon) {
      return ak::neon::make_tile_kernels();
    } else
#endif
    {
      return ak::scalar::make_tile_kernels();
    }
  }
};

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

namespace posenc::inline v0::detail {
inline namespace POSENC_KERNELS_ABI {

/// The kernels of ISA `which` (scalar when this build has none for it). The AVX512_BF16 and AVX512_VNNI
/// dot-product kernels are null unless `which` is avx512 and this CPU has the instruction, the AVX-VNNI
/// one unless `which` is avx2 and this CPU has AVX-VNNI.
[[nodiscard]] inline tile_kernels tile_kernels_for(kernels::isa which) noexcept {
  tile_kernels t = kernels::kernel_table<tile_kernels>(which);
#if POSENC_HAS_X86_KERNELS
  const bool bf16 = t.qk_heads_bf16_dot != nullptr && avx512_bf16::cpu_has();
  const bool vnni =
      t.qk_heads_q8_dot != nullptr && (which == kernels::isa::avx512 ? avx512_vnni::cpu_has() : avx2_vnni::cpu_has());
#else
  constexpr bool bf16 = false, vnni = false;
#endif
  if (!bf16) {
    t.qk_heads_bf16_dot = nullptr;
    t.pv_heads_bf16_dot = nullptr;
    t.round_q_bf16_dot = nullptr;
  }
  if (!vnni) {
    t.qk_heads_q8_dot = nullptr;
    t.prep_q_q8_dot = nullptr;
    t.q8_dot_floats = nullptr;
  }
  return t;
}

/// The kernels of the active ISA (kernels::active_isa(): detected once, POSENC_ISA / set_isa override).
[[nodiscard]] inline tile_kernels active_tile_kernels() noexcept {
  return tile_kernels_for(kernels::active_isa());
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::detail
