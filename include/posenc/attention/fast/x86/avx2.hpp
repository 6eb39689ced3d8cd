// posenc/attention/fast/x86/avx2.hpp — the AVX2 target's attention kernels: fast/tile-inl.hpp over
// the AVX2+FMA operations (kernels/ops/avx2.hpp, 8 floats per vector) in the AVX2 target region and
// namespace kernels::avx2, plus the q8_0 key record on AVX-VNNI vpdpbusd where the CPU has it
// (fast/x86/avx2_vnni.hpp: the kernel object in its own region, driven by the AVX2 traversal).
#pragma once

#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/fast/tile_kernels.hpp>
#include <posenc/attention/fast/x86/avx2_vnni.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/ops/avx2.hpp>

#if POSENC_HAS_X86_KERNELS
#include <cstddef>
#include <cstdint>
#include <immintrin.h>
#include <type_traits>

#include <posenc/kernels/ops/begin_avx2.inl>
namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {
namespace avx2 {

static constexpr int qk_block_rows = 2;  // 2 rows x 4 vectors = 8 accumulators + 4 key vectors of 16 registers
static constexpr int pv_block_rows = 2;
static constexpr void dot_forms(attention_kernels& t);

#define POSENC_ATTENTION_OPS_REGION 1
#include <posenc/attention/fast/tile-inl.hpp>
#undef POSENC_ATTENTION_OPS_REGION

// The q8_0 record's QK^T on vpdpbusd: the AVX2 traversal over avx2_vnni's kernel object, whose methods
// are AVX-VNNI code (called, not inlined: no AVX2 code may contain the instruction).
static inline void qk_heads_q8_dot(const qk_in_place& a, const tile_rows<block_q8_0>& k) {
  qk_by_token(avx2_vnni::qk_dot_q8{a.q.rows, a.q.dim, a.scale}, a, k);
}

static constexpr void dot_forms(attention_kernels& t) {
  t.q8_0_dot = t.q8_0;  // values keep the widening kernel: the probabilities are not quantised
  t.q8_0_dot.qk = &qk_heads_q8_dot;
  t.q8_0_dot.prep_q = &avx2_vnni::prep_q;
  t.q8_0_dot.prep_floats = &avx2_vnni::prepared_floats;
  t.q8_0_dot.needs = extension::avx_vnni;
}

}  // namespace avx2
}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
#include <posenc/kernels/ops/end_target.inl>
#endif  // POSENC_HAS_X86_KERNELS
