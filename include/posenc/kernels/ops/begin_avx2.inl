// posenc/kernels/ops/begin_avx2.inl — opens an AVX2+FMA+F16C target region (no include guard).
//
// Every function declared until ops/end_target.inl is compiled for that target, whatever the TU's
// -m flags (GCC: push_options/target; Clang: attribute push). Include standard headers before it:
// the region would otherwise retarget them too. Pair with one end_target.inl.
#if defined(POSENC_OPS_REGION_OPEN_)
#error "posenc: target regions do not nest"
#endif
#define POSENC_OPS_REGION_OPEN_ 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
