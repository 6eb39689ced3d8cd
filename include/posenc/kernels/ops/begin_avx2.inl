// posenc/kernels/ops/begin_avx2.inl — opens an AVX2+FMA+F16C target region (no include guard).
//
// Every function declared until ops/end_target.inl is compiled for that target, whatever the TU's
// -m flags (GCC: push_options/target; Clang: attribute push). Include standard headers before it:
// the region would otherwise retarget them too. Pair with one end_target.inl.
//
// GCC: the region also fixes the tuning to `generic`, the one the kernels are measured with. A TU's
// -march=native on GCC 12 tunes for znver3 on Zen 4 and Zen 5 (it knows neither), under which the
// decode kernels' 4x4 products keep q vectors on the stack and reload K operands per FMA: decode
// ran 1.7x (token-major) to 2.5x (head-major) slower on a Zen 5 (docs/performance.md). Functions the
// region calls that are defined outside it inline only if always_inline (GCC refuses to inline across
// a tuning change otherwise), so the helpers kernels call are POSENC_FORCE_INLINE.
#if defined(POSENC_OPS_REGION_OPEN_)
#error "posenc: target regions do not nest"
#endif
#define POSENC_OPS_REGION_OPEN_ 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,tune=generic")
#endif
