// posenc/core/platform.hpp — compiler and architecture detection, function-target macros.
//
// ISA kernels are compiled through a per-function target attribute (POSENC_TARGET_AVX2, ...), so a
// consumer never needs -march flags and two translation units with different flags never disagree
// about a kernel's body (each ISA has its own namespace). This header defines macros only.
#pragma once

#if defined(__x86_64__) || defined(_M_X64)
#define POSENC_ARCH_X86_64 1
#else
#define POSENC_ARCH_X86_64 0
#endif

#if defined(__aarch64__) || defined(_M_ARM64)
#define POSENC_ARCH_AARCH64 1
#else
#define POSENC_ARCH_AARCH64 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define POSENC_FORCE_INLINE inline __attribute__((always_inline))
#define POSENC_RESTRICT __restrict__
#define POSENC_LIKELY(x) __builtin_expect(!!(x), 1)
#define POSENC_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define POSENC_FORCE_INLINE inline
#define POSENC_RESTRICT
#define POSENC_LIKELY(x) (x)
#define POSENC_UNLIKELY(x) (x)
#endif

// Function-level ISA targets. Only GCC and Clang on x86-64 get them; elsewhere the x86 kernels are
// not compiled at all (see kernels/isa.hpp).
#if POSENC_ARCH_X86_64 && (defined(__GNUC__) || defined(__clang__))
#define POSENC_HAS_X86_KERNELS 1
#define POSENC_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define POSENC_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")))
#else
#define POSENC_HAS_X86_KERNELS 0
#define POSENC_TARGET_AVX2
#define POSENC_TARGET_AVX512
#endif

#if POSENC_ARCH_AARCH64 && defined(__ARM_NEON)
#define POSENC_HAS_NEON_KERNELS 1
#else
#define POSENC_HAS_NEON_KERNELS 0
#endif
