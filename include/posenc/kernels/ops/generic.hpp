// posenc/kernels/ops/generic.hpp — what every per-ISA operations file shares: the inline macro, the
// switches that force a generic operation, and the scalar helpers the generic fallbacks use.
//
// The operations layer (ops/avx2.hpp, ops/avx512.hpp, ops/neon.hpp) gives each ISA, in its own
// ABI-tagged namespace (kernels::avx2, ...), one vocabulary that the drivers (kernels/drivers/*.inl)
// and the attention tiles are written over once:
//
//   types      vec<T> (T = float/double; 16-bit storage loads into vec<float>), lanes<T>,
//              vector_bytes, vector_registers, has_stream, ivec (int32 lanes of a vec<float>)
//   arithmetic add sub mul fma(a,b,c)=a*b+c fms(a,b,c)=a*b-c fnma(a,b,c)=c-a*b max set(x)
//              hsum hmax; mul_rounded (a product never fused into an FMA: the bit-exact modes);
//              in_register(v) (v stays one register: a load used twice is not folded twice)
//   signs      flip(x, m) (xor), sign_mask(V, on), even_sign(V) (-0 in even lanes)
//   pairs      swap_pairs (x1 x0 x3 x2 ...), dup_lo / dup_hi (c0 c0 c1 c1 ... of each half)
//   memory     load/store (unaligned; bfloat16/float16 widen to and round from fp32, RNE exactly as
//              bfloat16/float16::from_float), load_n/store_n (first n lanes, nothing touched past
//              them), stream (non-temporal, vector_bytes-aligned) + fence(), prefetch
//   aligned    only where has_realign (AVX-512, AVX2: a split-line store costs): load/store_aligned,
//              load/store_lanes_from / _below (lanes [k, L) / [0, k) of an aligned vector),
//              realign(lo, hi, realign_index(V, k)) (the vector k lanes before hi), blend_from
//   angles     nearest, far_lanes, narrow, quadrants, by_quadrant, store_narrow (kernels/drivers/angles.inl)
//
// An ISA defines what it does well and includes ops/generic.inl last, which fills in the rest from
// the ISA's own operations or through memory (e.g. bfloat16 conversion lane by lane). Defining
// POSENC_KERNELS_GENERIC_BF16 before including posenc makes every ISA take the generic bfloat16
// conversion (tests/kernels/generic_ops_test.cpp checks it stays bit-exact); such a TU gets its own
// ABI namespace (kernels/isa.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include <posenc/core/element.hpp>
#include <posenc/core/platform.hpp>
#include <posenc/kernels/isa.hpp>

#define POSENC_OPS_INLINE POSENC_FORCE_INLINE
#if defined(__GNUC__) || defined(__clang__)
#define POSENC_OPS_LAMBDA_INLINE __attribute__((always_inline))
#else
#define POSENC_OPS_LAMBDA_INLINE
#endif
