// posenc/attention/fast/prefetch.hpp — which cache levels the decode kernels' software prefetches
// fill, chosen once per process from the CPU. A tuning choice: no result depends on it.
//
// The in-place decode kernels (fast/tile-inl.hpp: qk_by_token, pv_direct_block; fast/q8_0-inl.hpp)
// ask for K/V rows ahead of their use. On AMD Zen 5 (family 1Ah) decode from DRAM reads faster with
// prefetcht0, into L1 and L2, than with prefetcht1 (about 1.2x head-major, even token-major); on
// Zen 4 prefetcht0 is much slower. Other CPUs keep prefetcht1, the hint their kernels were tuned
// with. The same choice for every ISA's kernel table (docs/performance.md, "What limits decode").
#pragma once

#include <posenc/core/platform.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cpuid.h>
#endif

namespace posenc::inline v0::detail {

/// True on the CPUs whose decode runs faster with prefetches into L1 too: AMD, family 1Ah or later.
[[nodiscard]] inline bool cpu_prefers_l1_prefetch() noexcept {
#if POSENC_HAS_X86_KERNELS
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "AuthenticAMD"
  if (!amd || __get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  unsigned family = (a >> 8) & 0xfu;
  if (family == 0xfu) family += (a >> 20) & 0xffu;  // extended family
  return family >= 0x1au;
#else
  return false;
#endif
}

/// cpu_prefers_l1_prefetch(), read once. Forced inline: the kernels that call it are compiled in target
/// regions with their own tuning (kernels/ops/begin_avx2.inl), across which GCC inlines nothing else.
[[nodiscard]] POSENC_FORCE_INLINE bool decode_prefetch_l1() noexcept {
  static const bool l1 = cpu_prefers_l1_prefetch();
  return l1;
}

}  // namespace posenc::inline v0::detail
