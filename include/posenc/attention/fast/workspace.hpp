// posenc/attention/fast/workspace.hpp — scratch memory of posenc::attention, reusable across calls.
//
// Per call: the transformed q / k copies, q rows prepared for decode's key kernel, distance tables,
// tile summaries and decode partials (one such set per sequence of a multi-sequence call). Per work
// item: one scratch slot (O(tile x head_dim) floats, the prefill's prepared q rows among them) taken
// from a free list and given back, so as many slots exist as work items ever ran at once (the thread
// count), and a call that is not larger than an earlier one allocates nothing.
// posenc::attention_backward keeps its per-call buffers here too (q / k copies, tile summaries, the
// distance table, and its own below). Not for concurrent calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

namespace posenc::inline v0 {

namespace detail {
/// Grows v to at least n elements (never shrinks) and returns its data.
template <class T>
T* grow(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

/// Scratch whose every element a call writes before it reads it: grown without value-initialising
/// (no zero-filling pass on one thread; the pages are first touched by the code that fills them) and
/// without keeping the old contents.
template <class T>
class overwrite_buffer {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>);

 public:
  /// At least n elements (never shrinks), their values unspecified.
  T* grow(std::size_t n) {
    if (size_ < n) {
      data_.reset();  // free first: the peak holds one buffer, not two
      data_ = std::make_unique_for_overwrite<T[]>(n);
      size_ = n;
    }
    return data_.get();
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
};
template <class T>
T* grow(overwrite_buffer<T>& b, std::size_t n) {
  return b.grow(n);
}

/// Per-tile summaries (positions, padding, segments) from which a (query tile, key tile) pair is
/// classified without touching its elements. Conservative: "full" and "skip" are exact claims.
struct tile_summary {
  std::int64_t pmin, pmax;  // positions
  std::int64_t smin, smax;  // segment ids (0 when no packing)
  std::int64_t visible;     // keys not removed by padding / negative segments (query tiles: tokens)
  std::int64_t count;       // tokens in the tile
  std::int64_t contiguous;  // positions are p0, p0 + 1, ... (keys: distance rows are table slices)
};
/// The scratch of one running work item.
struct attention_scratch {
  std::vector<float> f;
  std::vector<const float*> rows;
  std::vector<std::uint8_t> mask;
  std::vector<std::byte> k_stage, v_stage;  // a paged K / V tile spanning blocks, copied for the kernels
  std::vector<float> p2c;                   // DeBERTa's products of one (query tile, key tile) pair over its distances
  std::vector<float> relative;              // the backward's per-item sums of DeBERTa's table gradients
  std::vector<float> cope;                  // CoPE: per-row q . e(n), gates, terms, a V^T tile; gradient sums
  std::vector<double> carry;                // CoPE: per-row running gate sums
  overwrite_buffer<float> qk_q;             // prefill: the item's q rows prepared for the key record
};
}  // namespace detail

/// Reusable scratch for posenc::attention (fast_attention_options::workspace).
class attention_workspace {
 public:
  attention_workspace() = default;
  attention_workspace(const attention_workspace&) = delete;
  attention_workspace& operator=(const attention_workspace&) = delete;

  // ---- used by the attention driver ----
  detail::overwrite_buffer<float> q, k;  // hook-2 copies of q and k (every element written)
  std::vector<float> bias, shaw_key, shaw_value, shaw_query, shaw_rows, partial;
  std::vector<float> cope;               // CoPE's embedding rows (transposed and as rows); the backward's carries
  detail::overwrite_buffer<float> qk_q;  // decode: q rows prepared for the in-place key kernel
  std::vector<double> query_bias;
  std::vector<detail::tile_summary> tiles;

  // ---- used by posenc::attention_backward ----
  std::vector<float> backward;              // packed q / dout rows, offsets, D_i, dK, dV, dQ partials
  std::vector<std::uint8_t> backward_live;  // which dQ partials a work item wrote
  std::vector<double> cope_carry;           // CoPE: per row and key tile, the gate sums after it, the dp sums before it
  std::vector<double> parameter_grads;      // per work item

  /// The per-call buffers of sequence s of a multi-sequence call (ragged batch, paged cache):
  /// created on first need and kept, so a call no larger than an earlier one allocates nothing.
  attention_workspace& sequence(std::size_t s) {
    while (sequences_.size() <= s) sequences_.push_back(std::make_unique<attention_workspace>());
    return *sequences_[s];
  }

  /// A scratch slot for one work item (created on first need, then reused).
  detail::attention_scratch* acquire() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      all_.push_back(std::make_unique<detail::attention_scratch>());
      return all_.back().get();
    }
    detail::attention_scratch* s = free_.back();
    free_.pop_back();
    return s;
  }
  void release(detail::attention_scratch* s) {
    std::lock_guard lock(mutex_);
    free_.push_back(s);
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<detail::attention_scratch>> all_;
  std::vector<detail::attention_scratch*> free_;
  std::vector<std::unique_ptr<attention_workspace>> sequences_;
};

}  // namespace posenc::inline v0
