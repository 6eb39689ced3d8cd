// posenc/attention/fast/tile_kernels.hpp — the attention's tile kernels as records: one record of
// the products and row operations on float tiles, and one record per K/V storage type with every
// operation that reads rows of that type (as ggml groups a type's operations in type_traits_cpu).
// Each target fills one table of them (attention_kernels) in fast/tile-inl.hpp; fast/kernels.hpp
// picks the table of the active ISA.
//
// A storage record (storage_kernels<T>): the prefill loads (a K tile transposed and a V tile
// widened to float, once per work item), the decode products read in place (QK^T and PV over every
// kv head of a key tile), and the two adapters of a record whose products read rows in another
// order or form: prep_q (the q rows its QK^T reads, prepared once per call) and finish_o (an output
// row its PV accumulated, put in order after the last tile). The records are float, bfloat16,
// float16 and q8_0 blocks, and two forms a CPU extension offers: bfloat16 on vdpbf16ps
// (AVX512_BF16) and q8_0 keys on vpdpbusd (AVX512_VNNI, AVX-VNNI), present where the target has
// code for them and usable where the CPU has the extension (storage_kernels::usable).
// A new K/V type is a new record; a new form of an existing type (fp16 products on AVX512_FP16,
// say) is a record beside its type's, chosen by the plan as the bfloat16 dot form is.
#pragma once

#include <cstddef>
#include <type_traits>

#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/kernels/isa.hpp>

namespace posenc::inline v0::kernels {

/// Rows of a K or V tile read in place: key j of kv head gi at p + j token_stride + gi head_stride
/// (strides in elements: blocks for q8_0), `keys` of them.
template <class T>
struct tile_rows {
  const T* p = nullptr;
  std::ptrdiff_t token_stride = 0, head_stride = 0;
  int keys = 0;
};

/// Float rows: row r at p + r stride (scores, probabilities, outputs).
template <class F>
struct float_rows {
  F* p = nullptr;
  std::ptrdiff_t stride = 0;
};

/// The query rows of a decode work item: per_head rows for each of `heads` kv heads, row r of head gi
/// at rows[gi per_head + r] (as the key record's prep_q left them), `dim` values each.
struct query_rows {
  const float* const* rows = nullptr;
  int per_head = 0, heads = 0, dim = 0;
};

/// In-place QK^T: s[gi per_head + r][j] = scale q_{gi per_head + r} . k_{j, gi} for every key j of
/// the tile. The V rows of the tile's tokens (v: base of key 0, head 0, or null; strides in bytes,
/// v_row_bytes per row) are asked for into L2 beside their keys, and K rows up to k_more keys past
/// the tile (the rest of its run) ahead of them. runs 4 (a record with side_by_side): the tile's keys
/// may be read as four equal runs side by side; the scores are the same.
struct qk_in_place {
  query_rows q{};
  float scale = 1;
  float_rows<float> s{};
  const void* v = nullptr;
  std::ptrdiff_t v_token_bytes = 0, v_head_bytes = 0, v_row_bytes = 0;
  int k_more = 0;
  int runs = 1;
};

/// In-place PV: o[gi per_head + r][c] += sum_j p[gi per_head + r][j] v_{j, gi}[c], c < dim. The next
/// key tile's K rows (k_next_bytes bytes from k_next, or none) are asked for into L2 meanwhile.
/// runs 4 (a record with side_by_side): the keys may be summed as four equal runs side by side (key
/// m of each run, then m + 1), a different order of the same sum.
struct pv_in_place {
  float_rows<const float> p{};
  int per_head = 0, heads = 0, dim = 0;
  float_rows<float> o{};
  const void* k_next = nullptr;
  std::ptrdiff_t k_next_bytes = 0;
  int runs = 1;
};

/// QK^T on a packed key tile: s[r][j] = scale q_r . kt[.][j] for j < kt.stride (a multiple of 64;
/// the tile is zero-padded, so padded columns score 0), kt = K^T as [dim][kt.stride].
struct packed_qk {
  const float* const* q = nullptr;
  int rows = 0, dim = 0;
  float scale = 1;
  float_rows<const float> kt{};
  float_rows<float> s{};
};

/// PV on a packed value tile: o[r][c] (+)= sum_{j < keys} p[r row_stride + j key_stride] vt[first + j][c]
/// for c < cols (a multiple of 64), o overwritten unless `accumulate`. key_stride 1 is the forward's
/// layout; row_stride 1 reads p transposed (the backward's P^T dO and dS^T Q). vt is the whole tile and
/// p points at key `first` (a run of keys of a tile; the forward's rows with masked non-finite values).
struct packed_pv {
  const float* p = nullptr;
  std::ptrdiff_t row_stride = 0, key_stride = 1;
  int rows = 0, keys = 0;
  float_rows<const float> vt{};
  int cols = 0;
  float_rows<float> o{};
  bool accumulate = true;
  int first = 0;
};

/// The operations on float tiles, whatever the storage: the packed products and the row operations
/// of the softmax and the hooks (fast/tile-inl.hpp has their contracts).
struct float_tile_kernels {
  void (*qk_packed)(const packed_qk&) = nullptr;
  void (*pv_packed)(const packed_pv&) = nullptr;
  float (*row_max)(const float* x, int n) = nullptr;                         // NaN when the row holds one
  float (*exp_sum)(float* x, int n, float m) = nullptr;                      // x = exp(x - m), returns the sum
  float (*row_max_add)(const float* x, const float* t, int n) = nullptr;     // row_max of x + t
  float (*exp_sum_add)(float* x, const float* t, int n, float m) = nullptr;  // x = exp(x + t - m), the sum
  void (*scale_row)(float* x, int n, float f) = nullptr;                     // x *= f
  void (*add_row)(float* x, const float* t, int n) = nullptr;                // x += t
  void (*add_const)(float* x, float c, int n) = nullptr;                     // x += c
  void (*softcap)(float* x, int n, float cap, float inv_cap) = nullptr;      // x = cap tanh(x inv_cap)
  void (*exp)(const float* x, float* y, int n) = nullptr;                    // the vectorised exp alone
  void (*tanh)(const float* x, float* y, int n) = nullptr;                   // the vectorised tanh alone
  int lanes = 1;
};

/// The operations that read K/V rows stored as T (see the banner).
template <class T>
struct storage_kernels {
  // prefill: keys [0, k.keys) of head 0 of the tile, kt[d ld + j] = k_j[d] / vt[j ld + d] = v_j[d]
  // (float tiles), or the tile form of the record's qk_tile / pv_tile where it has them
  void (*pack_kt)(const tile_rows<T>& k, int dim, float* kt, std::ptrdiff_t ld) = nullptr;
  void (*pack_v)(const tile_rows<T>& v, int dim, float* vt, std::ptrdiff_t ld) = nullptr;
  // prefill products on the record's own packed tiles (packed_qk / packed_pv's contracts, q rows from
  // prep_q, PV in the forward's layout); null: the float tile record's qk_packed / pv_packed
  void (*qk_tile)(const packed_qk&) = nullptr;
  void (*pv_tile)(const packed_pv&) = nullptr;
  // decode: the products read in place
  void (*qk)(const qk_in_place&, const tile_rows<T>& k) = nullptr;
  void (*pv)(const pv_in_place&, const tile_rows<T>& v) = nullptr;
  // q row (dim values) as this record's qk reads it, prep_floats(dim) floats (dim when null); null:
  // qk reads q rows as they are
  void (*prep_q)(const float* q, int dim, float* out) = nullptr;
  int (*prep_floats)(int dim) = nullptr;
  // an o row pv accumulated, put in order (dim values); null: pv leaves it in order
  void (*finish_o)(float* o, int dim) = nullptr;
  // the CPU extension the record's code needs beyond its target (none: the target's own)
  extension needs = extension::none;
  // qk and pv take runs = 4 (qk_in_place, pv_in_place); others read every tile as one run
  bool side_by_side = false;

  /// The record has code here and this CPU runs it.
  [[nodiscard]] bool usable() const noexcept { return qk != nullptr && has_extension(needs); }
};

/// One target's attention kernels (fast/tile-inl.hpp: make_attention_kernels).
struct attention_kernels {
  float_tile_kernels tiles{};
  storage_kernels<float> f32{};
  storage_kernels<bfloat16> bf16{};
  storage_kernels<float16> f16{};
  storage_kernels<block_q8_0> q8_0{};
  storage_kernels<bfloat16> bf16_dot{};    // vdpbf16ps products: q and p rounded to bfloat16
  storage_kernels<block_q8_0> q8_0_dot{};  // vpdpbusd key products: q quantised to int8 per row

  /// The record of storage T: its dot-product form when `dot` (the plan takes it only when usable).
  template <class T>
  [[nodiscard]] const storage_kernels<T>& storage(bool dot = false) const noexcept {
    if constexpr (std::is_same_v<T, bfloat16>)
      return dot ? bf16_dot : bf16;
    else if constexpr (std::is_same_v<T, float16>)
      return f16;
    else if constexpr (std::is_same_v<T, block_q8_0>)
      return dot ? q8_0_dot : q8_0;
    else
      return f32;
  }
};

}  // namespace posenc::inline v0::kernels
