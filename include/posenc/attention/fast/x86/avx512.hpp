// posenc/attention/fast/x86/avx512.hpp — the AVX-512 target's attention kernels: fast/tile-inl.hpp
// over the AVX-512 operations (kernels/ops/avx512.hpp, 16 floats per vector) in the AVX-512 target
// region and namespace kernels::avx512, and in the same region the two dot-product forms the records
// offer where the CPU has the extension: bfloat16 on vdpbf16ps (AVX512_BF16,
// fast/x86/avx512_bf16-inl.hpp) and q8_0 keys on vpdpbusd (AVX512_VNNI, fast/x86/avx512_vnni-inl.hpp).
// Zen 4 runs 512-bit FMAs double-pumped: the same FLOP/cycle peak as AVX2, with half the
// instructions and twice the registers.
#pragma once

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/ops/avx512.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <immintrin.h>
#include <limits>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx512.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx512 {

static constexpr int qk_block_rows = 6;  // 6 rows x 4 vectors = 24 accumulators of 32 registers
static constexpr int pv_block_rows = 6;
static constexpr void dot_forms(attention_kernels& t);

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#include <posenc/attention/fast/x86/avx512_bf16-inl.hpp>
#include <posenc/attention/fast/x86/avx512_vnni-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

static constexpr void dot_forms(attention_kernels& t) {
  t.bf16_dot = t.bf16;
  t.bf16_dot.pack_kt = &pack_kt_bf16_dot;  // prefill: pair tiles and their products
  t.bf16_dot.pack_v = &pack_v_bf16_dot;
  t.bf16_dot.qk_tile = &qk_tile_bf16_dot;
  t.bf16_dot.pv_tile = &pv_tile_bf16_dot;
  t.bf16_dot.qk = &qk_heads_bf16_dot;
  t.bf16_dot.pv = &pv_heads_bf16_dot;
  t.bf16_dot.prep_q = &round_q_bf16_dot;
  t.bf16_dot.finish_o = nullptr;  // o rows accumulate in order
  t.bf16_dot.needs = extension::avx512_bf16;
  t.q8_0_dot = t.q8_0;  // values keep the widening kernel: the probabilities are not quantised
  t.q8_0_dot.qk = &qk_heads_q8_dot;
  t.q8_0_dot.prep_q = &prep_q_q8_dot;
  t.q8_0_dot.prep_floats = &q8_dot_floats;
  t.q8_0_dot.needs = extension::avx512_vnni;
}

}  // namespace avx512
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
