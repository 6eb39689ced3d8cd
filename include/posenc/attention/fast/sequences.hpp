// posenc/attention/fast/sequences.hpp — many sequences in one posenc::attention call: the ragged
// batches (attention/ragged.hpp) and the paged caches (attention/paged.hpp) run here.
//
// Each sequence is planned and tabled exactly as a call of its own (B = 1, its own query and key
// counts, default positions bottom-right within the sequence), so its rows are bit-identical to
// that call's. Only stage 3 is shared: the work items of every sequence go to the executor in one
// list, longest first (rows x key tiles visited), so a long sequence's items start at once and
// the short ones fill in around them. Not here: per-sequence masks in the options (positions,
// key lengths, key masks, segments: the sequences carry their own lengths).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include <posenc/attention/fast/forward.hpp>

namespace posenc::inline v0::detail {

/// The encoders a multi-sequence call takes, checked at compile time: every hook the fused attention
/// computes except the two that need the whole padded sequence, hook 5 (DeBERTa's p2c) and hook 6
/// (CoPE's contextual positions). Those calls serve decoders.
template <class E>
consteval void require_serving_encoder() {
  static_assert(fused_attention_supports<E>,
                "posenc::attention does not compute every hook of this encoder (fused_attention_supports); "
                "use posenc::sdpa");
  static_assert(!contextual_position_encoding<E>,
                "paged and ragged posenc::attention serve decoders and do not take hook 6 (contextual "
                "positions: CoPE); call posenc::attention on the padded batch");
  static_assert(!relative_query_encoding<E>,
                "paged and ragged posenc::attention serve decoders and do not take hook 5 (relative_query: "
                "DeBERTa's position-to-content term); call posenc::attention on the encoder's padded batch");
}

/// The options fields a multi-sequence call refuses: the sequences give their own lengths and
/// positions (`what`: "a ragged batch", "a paged cache").
inline void require_no_per_call_masks(const attention_options& o, const char* what) {
  const std::string why = std::string("empty for ") + what + " (each sequence takes default positions)";
  detail::require(o.query_positions.empty() && o.key_positions.empty(), "attention.query_positions", "given", why);
  detail::require(o.key_lengths.empty(), "attention.key_lengths", "given", why);
  detail::require(o.key_mask.empty(), "attention.key_mask", "given", why);
  detail::require(o.query_segments.empty() && o.key_segments.empty(), "attention.query_segments", "given", why);
}

/// Stages 1 and 2 per sequence, then every sequence's work items in one list (stage 3).
template <class E, class TK, class TV>
void run_sequences(std::span<const forward_operands<TK, TV>> seqs, const E& enc, const attention_options& o,
                   const fast_attention_options& f, attention_workspace& ws, float scale) {
  const kernels::attention_kernels& kern = kernels::active_attention_kernels();
  const std::size_t n = seqs.size();
  std::vector<plan> plans(n);
  for (std::size_t s = 0; s < n; ++s) {
    const forward_operands<TK, TV>& x = seqs[s];
    plans[s] = make_plan(plan_input_of(x.q, x.k, x.v, x.Sk, kern), hook_facts_of(enc, call_distances(*x.mask)), o, f);
  }
  std::vector<forward_call<E, TK, TV>> calls;
  calls.reserve(n);
  for (std::size_t s = 0; s < n; ++s)
    calls.push_back(forward_call_of(plans[s], kern, enc, o, seqs[s], scale, nullptr, ws.sequence(s)));
  const std::vector<sequence_item> order = longest_first(plans);
  run_parallel(f.executor, static_cast<std::ptrdiff_t>(order.size()), [&](std::ptrdiff_t i) {
    const sequence_item& e = order[static_cast<std::size_t>(i)];
    const forward_call<E, TK, TV>& c = calls[e.s];
    scratch_slot slot(ws);
    if (c.p.path == kv_path::prefill)
      prefill_item(c, slot.get(), c.p.item(e.n));
    else
      decode_item(c, slot.get(), c.p.item(e.n));
  });
  std::vector<std::pair<std::size_t, std::ptrdiff_t>> merges;
  for (std::size_t s = 0; s < n; ++s)
    if (plans[s].chunks > 1)
      for (std::ptrdiff_t i = 0; i < plans[s].items; ++i) merges.emplace_back(s, i);
  run_parallel(f.executor, static_cast<std::ptrdiff_t>(merges.size()), [&](std::ptrdiff_t i) {
    const auto [s, it] = merges[static_cast<std::size_t>(i)];
    scratch_slot slot(ws);
    merge_item(calls[s], slot.get(), plans[s].item(it * plans[s].chunks));
  });
}

/// Batch b of a view as a [1, tokens, heads, dim] view.
template <class T>
[[nodiscard]] tensor_view<T> batch_of(tensor_view<T> x, std::ptrdiff_t b) {
  return tensor_view<T>::strided(x.data() + b * x.stride(axis::batch), {1, x.tokens(), x.heads(), x.dim()},
                                 x.strides());
}

}  // namespace posenc::inline v0::detail
