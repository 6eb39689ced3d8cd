// posenc/attention/attention.hpp — posenc::attention, the fast fused attention beside the sdpa oracle.
//
// Same arguments and semantics as sdpa (attention/sdpa.hpp) for every option — masks on positions
// (causal, sliding window, attention chunks), logit soft-capping, padding, packing, sinks, explicit
// or bottom-right positions, GQA/MQA, scale x the encoder's softmax multiplier,
// transform_queries/keys — computed by a tiled online-softmax kernel
// (attention/fast/forward.hpp) that evaluates every encoder hook inside the tiles and never forms an
// Sq x Sk matrix. Differences from sdpa: fp32 arithmetic (q, out float; k, v float, bfloat16,
// float16 or q8_0 blocks), the `weights` output is declined (config_error), execution knobs in a
// trailing argument. q8_0 K/V (core/q8_0.hpp, ggml's block_q8_0) are views of blocks, dim = D / 32,
// read inside the tiles: bit for bit the float call on the dequantised values (docs/attention.md).
// Paged K/V caches: attention/paged.hpp; ragged batches (cu_seqlens offsets): attention/ragged.hpp
// (both for every K/V type above, q8_0 blocks included).
//
// Accuracy (tests/attention/fast_attention_test.cpp, every case): with A = max |logit| of the
// call (scale * |q.k + q.aK + k.aQ| + |bias|), every output element satisfies
//     |out - sdpa| <= 5e-7 * (1 + A) * max_j (|v_j| + |aV|)
// against sdpa run on the same (rounded) inputs in double. The vectorised exp is within 1.2e-7
// (relative) of exp; float dot products of length D are within D * 2^-24 of the exact ones.
// With logit soft-capping the bound is the same, A still the UNcapped max |logit|: c tanh(l / c) is
// 1-Lipschitz in l, so it only shrinks the dot-product errors, and the vectorised tanh is within
// 2.5e-7 (relative) of tanh (tests/attention/semantics_test.cpp checks the bound on every ISA).
// Except: bfloat16 K/V on AVX512_BF16 CPUs take the bf16 dot products by default, decode and prefill
// (fast_attention_options::bf16_dot_products), which round q and the probabilities to bfloat16: bound
// 2^-8 * (1 + A) * max_j |v_j| + (Sk + 2) * 2^-126 there (subnormals flushed), so such CPUs differ
// from others by up to that much;
// {.bf16_dot_products = false} keeps the bound above everywhere (fast/x86/avx512_bf16-inl.hpp,
// tests/attention/fast_bf16_dot_test.cpp). Subnormal values add an absolute term: fp32 rounds
// sums below 2^-126 to multiples of 2^-149, so the bound is 5e-7 (1 + A) max_j |v_j| + (Sk + 2) 2^-149
// (the bfloat16 dot products flush subnormal inputs and results to 0: see avx512_bf16.hpp).
//
// Non-finite values, as sdpa (tests/attention/fast_robust_test.cpp, fuzz/fuzz_attention.cpp):
// - A masked key (mask, padding, segments, window, causal) contributes nothing whatever its K and V
//   hold (Inf, NaN, stale data); no pass over the cache scrubs them: the tiles leave such keys out.
// - A NaN logit of a visible key makes its row's output NaN; +inf logits share the row's weight
//   equally (an infinite sink takes a share like one of them; alone it takes all: zeros); a row
//   whose visible logits are all -inf gives zeros. NaN sinks are a config_error.
// - A visible key whose value is Inf / NaN gives its row Inf / NaN, except when its weight is 0 or
//   underflows fp32 (a logit ~87 below the row's max): sdpa skips a zero weight, this path may
//   multiply the value by 0 (NaN). Outside that case the same elements are NaN / Inf in both.
// Zero keys (Sk = 0, e.g. an empty KV cache) give zeros, with or without sinks.
#pragma once

#include <concepts>
#include <type_traits>

#include <posenc/attention/fast/forward.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0 {

/// Fused attention: `q` [B, Sq, Hq, D] float, `k` [B, Sk, Hkv, D] and `v` [B, Sk, Hkv, Dv] float,
/// bfloat16 or float16 (any strides; unit dim stride is the fast case) or block_q8_0 ([B, Sk, Hkv,
/// D / 32] blocks; D, Dv multiples of 32, else config_error), `out` [B, Sq, Hq, Dv] float
/// (may share memory with q in any layout and for any Dv, as sdpa: q is then read from a copy unless
/// out is q row for row; never overlap k or v). Throws what sdpa throws, plus config_error for
/// `attention.weights` and invalid `fast_attention.*` fields, before writing anything.
///
///   posenc::attention(q, k, v, out, posenc::combine(rope, alibi), {.causal = true});
///   posenc::attention(q, k, v, out, enc, opts, {.executor = my_pool, .workspace = &ws});
template <maybe_const<float> Q, kv_element K, kv_element V, positional_encoding E>
void attention(tensor_view<Q> q, tensor_view<K> k, tensor_view<V> v, tensor_view<float> out, const E& encoder,
               const attention_options& options = {}, const fast_attention_options& fast = {}) {
  static_assert(fused_attention_supports<E>,
                "posenc::attention does not compute every hook of this encoder (fused_attention_supports: "
                "hook 6 only in table form and not beside hook 4 or 5); use posenc::sdpa");
  using TK = std::remove_const_t<K>;
  using TV = std::remove_const_t<V>;
  detail::fast_attention<TK, TV>(tensor_view<const float>(q), tensor_view<const TK>(k), tensor_view<const TV>(v), out,
                                 encoder, options, fast);
}

}  // namespace posenc::inline v0
