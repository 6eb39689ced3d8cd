// posenc/kernels/ops/begin_avx2_vnni.inl — opens an AVX2+FMA+F16C+AVX-VNNI target region (no include
// guard), for the one kernel that uses the VEX-encoded vpdpbusd (fast/x86/avx2_vnni.hpp) and runs only
// after a CPUID check. A region of its own, so that the AVX2 region never lets the compiler emit AVX-VNNI
// for code that runs on CPUs without it. See begin_avx2.inl; close with end_target.inl.
#if defined(POSENC_OPS_REGION_OPEN_)
#error "posenc: target regions do not nest"
#endif
#define POSENC_OPS_REGION_OPEN_ 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni,tune=generic")
#endif
