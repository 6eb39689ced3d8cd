// posenc/kernels/isa.hpp — instruction sets, CPU detection, and the choice of kernel.
//
// The best kernel the CPU supports is chosen once at run time and cached; set_isa / scoped_isa or
// the environment variable POSENC_ISA=scalar|avx2|avx512|neon override it, and defining
// POSENC_FORCE_ISA_SCALAR / _AVX2 / _AVX512 / _NEON before including posenc makes the choice at
// compile time (no detection, no override, direct calls). No -march flag is ever needed. Every
// kernel family (rotation, angles, attention tiles) is reached through kernel_table below.
//
// The ODR trap (an inline function compiled in two TUs with different -m flags has two bodies under
// one symbol, and the linker keeps either one) is avoided twice over: every ISA's kernels live in
// their own namespace (kernels::avx2, ::avx512, ...) and carry a function target attribute, so
// their bodies do not depend on the TU's flags; and every kernel, including the scalar reference
// and the dispatching entries, sits in an inline namespace named after the TU's own baseline and
// forced ISA (POSENC_KERNELS_ABI), so a TU built with -mavx512f never lends its bodies to one
// built for plain x86-64. Only the cached choice itself (an atomic, no ISA-dependent code) is one
// object shared by every TU.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <posenc/core/platform.hpp>
#include <posenc/kernels/types.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cpuid.h>
#endif

// ---- compile-time choice --------------------------------------------------------------------
#if defined(POSENC_FORCE_ISA_SCALAR)
#define POSENC_FORCED_ISA_TAG force_scalar
#elif defined(POSENC_FORCE_ISA_AVX2)
#define POSENC_FORCED_ISA_TAG force_avx2
#elif defined(POSENC_FORCE_ISA_AVX512)
#define POSENC_FORCED_ISA_TAG force_avx512
#elif defined(POSENC_FORCE_ISA_NEON)
#define POSENC_FORCED_ISA_TAG force_neon
#else
#define POSENC_FORCED_ISA_TAG dispatch
#endif

#if defined(POSENC_FORCE_ISA_AVX2) && !POSENC_HAS_X86_KERNELS
#error "POSENC_FORCE_ISA_AVX2 needs GCC or Clang on x86-64"
#endif
#if defined(POSENC_FORCE_ISA_AVX512) && !POSENC_HAS_X86_KERNELS
#error "POSENC_FORCE_ISA_AVX512 needs GCC or Clang on x86-64"
#endif
#if defined(POSENC_FORCE_ISA_NEON) && !POSENC_HAS_NEON_KERNELS
#error "POSENC_FORCE_ISA_NEON needs AArch64 with NEON"
#endif

// The TU's own baseline: what the compiler may use in code without a target attribute.
#if defined(__AVX512F__)
#define POSENC_BASELINE_TAG avx512
#elif defined(__AVX2__)
#define POSENC_BASELINE_TAG avx2
#elif defined(__AVX__)
#define POSENC_BASELINE_TAG avx
#elif defined(__ARM_NEON)
#define POSENC_BASELINE_TAG neon
#else
#define POSENC_BASELINE_TAG base
#endif

// Operations a TU forced to their generic fallback (ops/generic.hpp) change kernel bodies too.
#if defined(POSENC_KERNELS_GENERIC_BF16)
#define POSENC_OPS_VARIANT_TAG gbf16
#else
#define POSENC_OPS_VARIANT_TAG v0
#endif

#define POSENC_KERNELS_CAT3_(a, b, c) abi_##a##_##b##_##c
#define POSENC_KERNELS_CAT3(a, b, c) POSENC_KERNELS_CAT3_(a, b, c)
/// Inline namespace that holds every kernel; its name records the TU's baseline, forced ISA and
/// forced generic operations.
#define POSENC_KERNELS_ABI POSENC_KERNELS_CAT3(POSENC_BASELINE_TAG, POSENC_FORCED_ISA_TAG, POSENC_OPS_VARIANT_TAG)

namespace posenc::inline v0::detail {
// The cached choice: -1 = not chosen yet, else the isa value. A function-local static of a type
// with constant initialisation: one object for the whole program and no ISA-dependent code.
inline std::atomic<int>& isa_slot() noexcept {
  static std::atomic<int> slot{-1};
  return slot;
}
// Output bytes above which out-of-place kernels use non-temporal stores (default 8 MiB: larger
// than the L2 and a fair share of a typical L3).
inline std::atomic<std::size_t>& stream_threshold_slot() noexcept {
  static std::atomic<std::size_t> bytes{std::size_t{8} << 20};
  return bytes;
}
// The arithmetic (kernels/types.hpp) of the SIMD kernels: 0 exact (default), 1 fused.
POSENC_FORCE_INLINE std::atomic<unsigned char>& arithmetic_slot() noexcept {
  static std::atomic<unsigned char> mode{0};
  return mode;
}
}  // namespace posenc::inline v0::detail

namespace posenc::inline v0::kernels {

/// Instruction sets with a kernel. Ordered: a larger value is preferred when supported.
enum class isa : unsigned char { scalar = 0, avx2 = 1, avx512 = 2, neon = 3 };

[[nodiscard]] constexpr std::string_view isa_name(isa i) noexcept {
  switch (i) {
    case isa::avx2:
      return "avx2";
    case isa::avx512:
      return "avx512";
    case isa::neon:
      return "neon";
    default:
      return "scalar";
  }
}

/// Parses "scalar", "avx2", "avx512" or "neon"; false for anything else.
[[nodiscard]] constexpr bool parse_isa(std::string_view s, isa& out) noexcept {
  for (isa i : {isa::scalar, isa::avx2, isa::avx512, isa::neon}) {
    if (s == isa_name(i)) {
      out = i;
      return true;
    }
  }
  return false;
}

inline namespace POSENC_KERNELS_ABI {

#if POSENC_HAS_X86_KERNELS
namespace detail {
// F16C through CPUID leaf 1 (Clang 14's __builtin_cpu_supports does not know "f16c"); every CPU
// with AVX2 has it in practice, but check rather than assume.
inline bool has_f16c() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
// AVX512_BF16 (VCVTNE2PS2BF16, VDPBF16PS) through CPUID leaf 7 sub-leaf 1, EAX bit 5; the caller has
// checked AVX-512 itself. Used by the bfloat16 stores of the rotation kernels and the fast
// attention's bf16 dot products (its default for bfloat16 K/V where the CPU has them).
inline bool has_avx512bf16() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
}
// AVX-VNNI (the VEX-encoded VPDPBUSD on 256-bit vectors) through CPUID leaf 7 sub-leaf 1, EAX bit 4:
// Intel since Alder Lake (also without AVX-512), AMD since Zen 5. Used by the AVX2 q8_0 key products.
inline bool has_avx_vnni() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
}
// AVX512_VNNI (VPDPBUSD) through CPUID leaf 7 sub-leaf 0, ECX bit 11; the caller has checked AVX-512
// itself. Used by the fast attention's q8_0 key products.
inline bool has_avx512vnni() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (c & (1u << 11)) != 0;
}
}  // namespace detail
#endif

/// CPU extensions that some kernels have a form for beyond their ISA's baseline: the attention's
/// bfloat16 dot products (AVX512_BF16 vdpbf16ps) and int8 key products (vpdpbusd: AVX512_VNNI on the
/// AVX-512 kernels, AVX-VNNI on the AVX2 ones). A kernel record names the one it needs.
enum class extension : unsigned char { none, avx512_bf16, avx512_vnni, avx_vnni };

/// True when this CPU has extension `e` (none: always), the caller having checked the ISA the
/// extension extends. Asked once per process: CPUID traps to the hypervisor in a VM (asked per call,
/// two of them cost ~14 us, 10 % of a 512-token decode step).
[[nodiscard]] inline bool has_extension(extension e) noexcept {
#if POSENC_HAS_X86_KERNELS
  static const bool bf16 = detail::has_avx512bf16(), vnni512 = detail::has_avx512vnni(), vnni = detail::has_avx_vnni();
  switch (e) {
    case extension::avx512_bf16:
      return bf16;
    case extension::avx512_vnni:
      return vnni512;
    case extension::avx_vnni:
      return vnni;
    default:
      break;
  }
#endif
  return e == extension::none;
}

/// True when this CPU (and this build) can run kernels of `i`.
[[nodiscard]] inline bool isa_supported(isa i) noexcept {
  switch (i) {
    case isa::scalar:
      return true;
#if POSENC_HAS_X86_KERNELS
    case isa::avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && detail::has_f16c();
    case isa::avx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma") && detail::has_f16c();
#endif
#if POSENC_HAS_NEON_KERNELS
    case isa::neon:
      return true;  // NEON is baseline on AArch64
#endif
    default:
      return false;
  }
}

/// The best ISA this CPU supports, ignoring overrides.
[[nodiscard]] inline isa best_supported_isa() noexcept {
  for (isa i : {isa::avx512, isa::neon, isa::avx2}) {
    if (isa_supported(i)) return i;
  }
  return isa::scalar;
}

/// The ISA the dispatching entries use. First call: POSENC_ISA from the environment if it names a
/// supported ISA (an unsupported or unknown name is ignored), else best_supported_isa(); cached.
[[nodiscard]] inline isa active_isa() noexcept {
#if defined(POSENC_FORCE_ISA_SCALAR)
  return isa::scalar;
#elif defined(POSENC_FORCE_ISA_AVX2)
  return isa::avx2;
#elif defined(POSENC_FORCE_ISA_AVX512)
  return isa::avx512;
#elif defined(POSENC_FORCE_ISA_NEON)
  return isa::neon;
#else
  const int cached = posenc::detail::isa_slot().load(std::memory_order_relaxed);
  if (POSENC_LIKELY(cached >= 0)) return static_cast<isa>(cached);
  isa chosen = best_supported_isa();
  isa from_env;
  if (const char* env = std::getenv("POSENC_ISA"); env && parse_isa(env, from_env) && isa_supported(from_env)) {
    chosen = from_env;
  }
  int expected = -1;  // a concurrent first call computes the same value; keep whichever landed first
  posenc::detail::isa_slot().compare_exchange_strong(expected, static_cast<int>(chosen), std::memory_order_relaxed);
  return static_cast<isa>(posenc::detail::isa_slot().load(std::memory_order_relaxed));
#endif
}

/// Makes the dispatching entries use `i` from now on (whole program). Returns false and changes
/// nothing when the CPU does not support `i`. Has no effect in TUs built with POSENC_FORCE_ISA_*.
inline bool set_isa(isa i) noexcept {
  if (!isa_supported(i)) return false;
  posenc::detail::isa_slot().store(static_cast<int>(i), std::memory_order_relaxed);
  return true;
}

/// Forgets the cached choice: the next call detects again (and reads POSENC_ISA again).
inline void reset_isa() noexcept {
  posenc::detail::isa_slot().store(-1, std::memory_order_relaxed);
}

/// RAII override for tests and benchmarks: uses `i` (if supported) until destruction, then restores
/// the previous choice. Not meant to be used concurrently with kernels on other threads.
class scoped_isa {
 public:
  explicit scoped_isa(isa i) noexcept : previous_(posenc::detail::isa_slot().load(std::memory_order_relaxed)) {
    ok_ = set_isa(i);
  }
  ~scoped_isa() { posenc::detail::isa_slot().store(previous_, std::memory_order_relaxed); }
  scoped_isa(const scoped_isa&) = delete;
  scoped_isa& operator=(const scoped_isa&) = delete;
  /// False when the requested ISA is not supported (the previous choice stays active).
  [[nodiscard]] bool active() const noexcept { return ok_; }

 private:
  int previous_;
  bool ok_ = false;
};

/// Out-of-place calls whose output exceeds this many bytes use non-temporal (streaming) stores.
[[nodiscard]] inline std::size_t stream_threshold() noexcept {
  return posenc::detail::stream_threshold_slot().load(std::memory_order_relaxed);
}
inline void set_stream_threshold(std::size_t bytes) noexcept {
  posenc::detail::stream_threshold_slot().store(bytes, std::memory_order_relaxed);
}

/// exact (default) or fused evaluation in the SIMD kernels from now on (whole program; see
/// kernels::arithmetic for the error bound of fused). Not meant to change while kernels run.
inline void set_arithmetic(arithmetic a) noexcept {
  posenc::detail::arithmetic_slot().store(static_cast<unsigned char>(a), std::memory_order_relaxed);
}
[[nodiscard]] POSENC_FORCE_INLINE arithmetic active_arithmetic() noexcept {
  return static_cast<arithmetic>(posenc::detail::arithmetic_slot().load(std::memory_order_relaxed));
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {

/// The one dispatch mechanism of posenc's kernels (docs/kernels.md, "Dispatch"): a kernel family
/// is a struct of function pointers (rotation: kernels/rotate.hpp, angles: kernels/angles.hpp,
/// attention tiles: attention/fast/kernels.hpp), and a specialisation of kernel_family<Family>
/// says, in one place, which ISA namespace fills it:
///     template <isa I> static consteval Family make();   // I without kernels: scalar's table
/// kernel_table<Family>(which) then returns the table of `which`: one indexed load from a constant
/// array (no guard, no detection), so a call costs one indirect jump, and with POSENC_FORCE_ISA_*
/// the index is a constant and the compiler calls the forced ISA's kernels directly.
template <class Family>
struct kernel_family;

/// The kernels of family `Family` for ISA `which` (an ISA this build or CPU lacks: its make<>()
/// fallback, scalar). Choose `which` with active_isa(), or name one (tests compare ISAs).
template <class Family>
[[nodiscard]] POSENC_FORCE_INLINE const Family& kernel_table(isa which) noexcept {
  static constexpr Family tables[] = {
      kernel_family<Family>::template make<isa::scalar>(), kernel_family<Family>::template make<isa::avx2>(),
      kernel_family<Family>::template make<isa::avx512>(), kernel_family<Family>::template make<isa::neon>()};
#if defined(POSENC_FORCE_ISA_SCALAR) || defined(POSENC_FORCE_ISA_AVX2) || defined(POSENC_FORCE_ISA_AVX512) || \
    defined(POSENC_FORCE_ISA_NEON)
  static_cast<void>(which);
  return tables[static_cast<unsigned>(active_isa())];  // the forced ISA, a constant
#else
  return tables[static_cast<unsigned>(which) & 3u];
#endif
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
