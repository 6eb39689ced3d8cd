// posenc/kernels/ops/begin_avx512.inl — opens an AVX-512 (F/BW/DQ/VL) + FMA + F16C target region
// (no include guard). See begin_avx2.inl; close with end_target.inl. It also enables AVX512_BF16 and
// AVX512_VNNI for the few kernels that use them (fast/x86/avx512_bf16-inl.hpp, avx512_vnni.hpp), which run
// only after a CPUID check; nothing else in the region is written with them.
#if defined(POSENC_OPS_REGION_OPEN_)
#error "posenc: target regions do not nest"
#endif
#define POSENC_OPS_REGION_OPEN_ 1
#if defined(__clang__)
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,fma,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vnni,fma,f16c,tune=generic")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and trip -W(maybe-)uninitialized once
// inlined (GCC bug 105593); the values are fully defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define POSENC_OPS_REGION_DIAG_ 1
#endif
