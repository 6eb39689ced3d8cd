// posenc/kernels/ops/begin_avx2.inl — opens an AVX2+FMA+F16C target region (no include guard).
//
// Every function declared until ops/end_target.inl is compiled for that target, whatever the TU's
// -m flags (GCC: push_options/target; Clang: attribute push). Include standard headers before it:
// the region would otherwise retarget them too. Pair with one end_target.inl.
//
// GCC: the region also fixes the tuning to `generic`, the one the kernels are measured with. GCC 12.2
// (Debian 12) tunes -march=native for znver3 on Zen 4 and Zen 5 (it knows neither); under that tuning
// the decode kernels' 4x4 products kept q vectors on the stack and reloaded K per FMA, and fp32 decode
// ran at 0.58-0.68x the default build's speed on a Zen 5 (docs/performance.md). GCC inlines into the
// region only the functions defined outside it that are always_inline (none other across a tuning
// change), so the helpers the kernels call are POSENC_FORCE_INLINE (scripts/check-region-calls).
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
