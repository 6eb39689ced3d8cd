// posenc/attention/fast/options.hpp — the knobs of posenc::attention that sdpa does not have: who
// runs the work items, where the scratch lives, and the tile sizes.
//
// Passed as the optional trailing argument, so code written against sdpa switches by renaming the
// call. Nothing here changes the result except through rounding; results never depend on the
// thread count (the work is cut by shape only).
#pragma once

#include <cstddef>
#include <span>

#include <posenc/core/parallel.hpp>

namespace posenc::inline v0 {

class attention_workspace;

/// Execution options of posenc::attention (attention/attention.hpp).
struct fast_attention_options {
  /// Runs the work items (query tiles x key/value heads, plus key chunks for decode). Empty: the
  /// process-wide default_pool() (created once; POSENC_NUM_THREADS sets its size).
  parallel_for executor{};
  /// Scratch held across calls (no allocation once it has grown to the largest call). Null: the
  /// call allocates its scratch once and frees it on return. Not shared by concurrent calls.
  attention_workspace* workspace = nullptr;
  /// Query tokens per tile; 0 = max(1, 64 / (q.heads / k.heads)), i.e. about 64 rows per work item
  /// whatever the GQA group size.
  int query_tile = 0;
  /// Keys per tile, a multiple of 64 (config_error otherwise).
  int key_tile = 64;
  /// Decode split: when batch x kv heads x query tiles < 8 and there are at least twice this many
  /// keys, the keys are cut into chunks of this size (a multiple of key_tile), computed as separate
  /// work items and merged by log-sum-exp in a fixed order, so one token over a long cache uses
  /// every thread and the result still does not depend on the thread count.
  std::ptrdiff_t split_keys = 2048;
  /// Largest per-head distance table (heads x distances) the distance-bias path builds; a call that
  /// sees a wider distance range evaluates such biases through the general per-tile path.
  std::ptrdiff_t max_bias_table = std::ptrdiff_t{1} << 22;
  /// bfloat16 K/V: use the CPU's bf16 dot product (AVX512_BF16 vdpbf16ps) where it has one, with D / Dv
  /// multiples of 32, on the decode-shaped (in-place) path and on the prefill (packed) path (K and V
  /// rows with a unit dim stride; never in the backward). On by default there: q and the
  /// probabilities are rounded to bfloat16 before the products, so the bound is
  /// |out - sdpa| <= 2^-8 (1 + A) max |v| instead of 5e-7 (1 + A) max |v| (fast/x86/avx512_bf16-inl.hpp),
  /// the same order as the bfloat16 rounding the keys and values already carry (2^-9), and the result
  /// differs between CPUs with and without the instruction by up to that bound (never between thread
  /// counts). In exchange a decode step takes about half the instructions per cached byte (measured
  /// 1.2x at DRAM size, 1.2-1.45x in cache on Zen 4) and a prefill score about half the product
  /// instructions (docs/performance.md). false: the exact path everywhere (bf16 widened to float, fp32
  /// products: the 5e-7 bound, the same answer on every ISA). Ignored (the exact kernels run) where the
  /// CPU lacks the instruction and for float/float16 storage.
  bool bf16_dot_products = true;
  /// q8_0 keys on the decode-shaped (in-place) path: integer dot products (vpdpbusd: AVX512_VNNI on the
  /// AVX-512 kernels, AVX-VNNI on the AVX2 ones) where the CPU has them, with D a multiple of 32. On by default there:
  /// each query row is quantised once per call to int8 with one scale (max |q| / 127), so a logit moves by at most
  /// delta = scale (max |q| / 254) sum |k| <= scale D max|q| max|k| / 254, and
  /// |out - sdpa| <= (exp(2 delta) - 1) max |v| plus the float bound (fast/x86/avx512_vnni-inl.hpp).
  /// In exchange the key pass takes about a third of the vector instructions (docs/performance.md).
  /// false: q stays fp32 (the q8_0 call gives the float call's bits on the dequantised values). A query
  /// row holding Inf or NaN gives a NaN output row on the int8 path. Ignored where the CPU lacks the
  /// instruction, for other key types, and on the packed (prefill) path; values are never affected.
  bool q8_0_int8_dot_products = true;
  /// Optional output for training: the natural log of each row's softmax denominator over its
  /// logits and sink, [B, Hq, Sq] row-major (-inf for a row that attends to nothing), what
  /// posenc::attention_backward recomputes the weights from (docs/training.md). Empty: not written.
  std::span<float> log_sum_exp{};
};

}  // namespace posenc::inline v0
