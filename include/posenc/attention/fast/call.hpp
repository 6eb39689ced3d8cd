// posenc/attention/fast/call.hpp — one fused attention call as both directions see it: the plan, the
// encoder and options, the operands as the kernels read them, the kernel records, the positions, the
// softmax scale and the per-call tables (docs/attention.md, "The driver in stages").
//
// The forward (fast/forward.hpp) adds its outputs to this description, the backward
// (fast/backward.hpp) its inputs from the forward, its gradients, its work items and its reductions,
// as FlashAttention's Flash_bwd_params extends Flash_fwd_params. K and V are read through kv_rows (a
// strided view, or a sequence's blocks of a paged cache) and their storage type's kernel record.
// Not here: how the call is planned (fast/plan.hpp), how the tables are built (fast/tables.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/kv_q8_0.hpp>
#include <posenc/attention/fast/plan.hpp>
#include <posenc/attention/fast/workspace.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

/// K or V rows as the work items read them: a strided view, or one sequence's blocks of a paged
/// cache (attention/paged.hpp: the pool is a view [blocks, block_size, heads, dim], key j of the
/// sequence is slot j % block_size of block blocks[j / block_size]; b is then 0).
template <class T>
struct kv_rows {
  tensor_view<const T> view;
  const std::int32_t* blocks = nullptr;  // paged: the sequence's block ids; null: view is the operand
  std::ptrdiff_t block_size = 0;
  std::ptrdiff_t nblocks = 0;  // paged: the ids the sequence's keys use (ceil(keys / block_size))

  [[nodiscard]] const T* row(std::ptrdiff_t b, std::ptrdiff_t j, std::ptrdiff_t h) const noexcept {
    if (blocks == nullptr) return view.row(b, j, h);
    return view.row(blocks[j / block_size], j % block_size, h);
  }
  [[nodiscard]] std::ptrdiff_t stride(axis a) const noexcept { return view.stride(a); }
  /// Keys from j on that lie one token stride apart: all for a view; if paged, the rest of j's block
  /// and of the blocks after it that follow it in the pool (ids x, x + 1, ... of a pool that stores
  /// its blocks back to back, as a fresh pool hands them out), up to max_run keys.
  static constexpr std::ptrdiff_t max_run = 512;
  [[nodiscard]] std::ptrdiff_t run(std::ptrdiff_t j) const noexcept {
    if (blocks == nullptr) return std::numeric_limits<std::ptrdiff_t>::max();
    std::ptrdiff_t x = j / block_size, n = block_size - j % block_size;
    if (view.stride(axis::batch) == block_size * view.stride(axis::token))
      for (; n < max_run && x + 1 < nblocks && blocks[x + 1] == blocks[x] + 1; ++x) n += block_size;
    return n;
  }
  /// Keys j .. j + keys - 1 of kv heads g, g + 1, .. read in place (they lie one token stride apart).
  [[nodiscard]] kernels::tile_rows<T> tile(std::ptrdiff_t b, std::ptrdiff_t j, std::ptrdiff_t g,
                                           int keys) const noexcept {
    return {row(b, j, g), stride(axis::token), stride(axis::head), keys};
  }
  /// Bytes from key j's row to key j + 1's.
  [[nodiscard]] std::ptrdiff_t token_bytes() const noexcept {
    return stride(axis::token) * static_cast<std::ptrdiff_t>(sizeof(T));
  }
};

/// f(a, e) for each run [a, e) of keys j0 + a .. j0 + e - 1 inside one block (the whole tile for a view).
template <class T, class F>
void for_block_runs(const kv_rows<T>& x, std::ptrdiff_t j0, int nk, F&& f) {
  for (int a = 0; a < nk;) {
    const int e = a + static_cast<int>(std::min<std::ptrdiff_t>(nk - a, x.run(j0 + a)));
    f(a, e);
    a = e;
  }
}

/// The K/V tile load of the decode path: keys j0 .. j0 + nk - 1 of kv heads g .. g + heads - 1 in
/// place when they lie one token stride apart (a view; a tile inside one block of a paged cache),
/// else copied into `stage` as [nk][heads][dim] (a tile spanning blocks). The kernels read the same
/// values either way, so the result does not depend on where the tile lives.
template <class T>
kernels::tile_rows<T> decode_tile(const kv_rows<T>& x, std::ptrdiff_t b, std::ptrdiff_t j0, int nk, std::ptrdiff_t g,
                                  std::ptrdiff_t heads, std::ptrdiff_t dim, std::vector<std::byte>& stage) {
  if (x.run(j0) >= nk) return x.tile(b, j0, g, nk);
  const std::ptrdiff_t n = dim / values_per_element<T>;  // elements of a row (q8_0: blocks)
  const auto row_bytes = static_cast<std::size_t>(n) * sizeof(T);
  std::byte* buf = detail::grow(stage, static_cast<std::size_t>(nk * heads) * row_bytes);
  for (int j = 0; j < nk; ++j)
    for (std::ptrdiff_t gi = 0; gi < heads; ++gi)
      std::memcpy(buf + static_cast<std::size_t>(j * heads + gi) * row_bytes, x.row(b, j0 + j, g + gi), row_bytes);
  return {reinterpret_cast<const T*>(buf), heads * n, n, nk};
}

/// Keys j0 .. j0 + nk - 1 of kv head g converted to float: transposed, kt[d ld + j] = x_j[d] (the
/// record's pack_kt), or as rows, vt[j ld + d] = x_j[d] (pack_v), d < dim; on runs of keys one token
/// stride apart, value by value where the dim stride is not 1. Other entries are left as they are.
template <bool Transposed, class T>
void pack_tile(const kernels::storage_kernels<T>& ops, const kv_rows<T>& x, std::ptrdiff_t b, std::ptrdiff_t g,
               std::ptrdiff_t j0, int nk, std::ptrdiff_t dim, float* out, std::ptrdiff_t ld) {
  const std::ptrdiff_t ds = x.stride(axis::dim), js = Transposed ? 1 : ld, es = Transposed ? ld : 1;
  for (int a = 0, e = 0; a < nk; a = e) {
    e = static_cast<int>(std::min<std::ptrdiff_t>(nk, a + x.run(j0 + a)));
    if (ds == 1)
      (Transposed ? ops.pack_kt : ops.pack_v)(x.tile(b, j0 + a, g, e - a), static_cast<int>(dim), out + a * js, ld);
    else
      for (int j = a; j < e; ++j) {
        const T* row = x.row(b, j0 + j, g);
        for (std::ptrdiff_t d = 0; d < dim; ++d) out[j * js + d * es] = kv_value(row, d, ds);
      }
  }
}

/// Zeros into every element of x.
inline void zero_view(tensor_view<float> x) {
  for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
    for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
      for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
        for (std::ptrdiff_t d = 0; d < x.dim(); ++d) x(b, t, h, d) = 0.0f;
}

/// The per-call tables of stage 2 (fast/tables.hpp: build_tables): what the work items read besides
/// the operands.
struct call_tables {
  const tile_summary *qsum = nullptr, *ksum = nullptr;  // [B][nqt], [B][nkt]
  const float* table = nullptr;                         // distance table [Hq][tn]
  std::ptrdiff_t shaw_heads = 1;                        // Shaw tables per head (Hq) or shared (1)
  const float *ak = nullptr, *av = nullptr;             // [shaw_heads][D][sld] (transposed), [shaw_heads][sn][dvp]
  const float* aq = nullptr;  // DeBERTa's p2c aQ, transposed [Hq][D][sld] and 64 floats of slack
  // DeBERTa (the backward's products): aK and aQ as rows, [shaw_heads or Hq][sld + 64][D padded to 64]
  const float *akr = nullptr, *aqr = nullptr;
  // decode: q rows as the key record's qk reads them (its prep_q, once per call), row (b, i, h) at
  // qk_q + ((b Sq + i) Hq + h) qk_q_stride; null: the kernel reads q rows, or (prefill with
  // plan::prep_q) each work item prepares its rows, qk_q_stride floats each
  const float* qk_q = nullptr;
  std::ptrdiff_t qk_q_stride = 0;
  float* partial = nullptr;  // key-chunk partials [items][chunks][rows_max][2 + dvp]
  // CoPE: the embedding rows transposed, [cope_heads][D][cld] (zero past cn), and as rows,
  // [cope_heads][cn + 64][D padded to 64]; the gate sigmoid(cope_gate x); positions capped at cope_cap
  std::ptrdiff_t cope_heads = 1;
  const float *ce = nullptr, *cr = nullptr;
  float cope_gate = 1;
  double cope_cap = 0;

  /// Shaw's aK value d of head h at table column x, and aV's row of head h at column x.
  [[nodiscard]] float shaw_key(std::ptrdiff_t h, std::ptrdiff_t d, std::ptrdiff_t x, const plan& p) const noexcept {
    return ak[((shaw_heads == 1 ? 0 : h) * p.D + d) * p.sld + x];
  }
  /// The p2c aQ value d of head h at table column x.
  [[nodiscard]] float p2c_query(std::ptrdiff_t h, std::ptrdiff_t d, std::ptrdiff_t x, const plan& p) const noexcept {
    return aq[(h * p.D + d) * p.sld + x];
  }
  [[nodiscard]] const float* shaw_value(std::ptrdiff_t h, std::ptrdiff_t x, const plan& p) const noexcept {
    return av + ((shaw_heads == 1 ? 0 : h) * p.sn + x) * p.dvp;
  }
};

/// One call as both directions see it (see the banner); built once per call with named fields.
template <class E, class TK, class TV>
struct call {
  const plan& p;
  const E& enc;
  const attention_options& o;
  const attention_mask& mask;
  const kernels::float_tile_kernels& tiles;
  const kernels::storage_kernels<TK>& k_ops;  // K's record: its dot-product form where the plan takes it
  const kernels::storage_kernels<TV>& v_ops;
  tensor_view<const float> q;  // after hook 2 (fast/tables.hpp: kernel_queries)
  kv_rows<TK> k;               // after hook 2 when the encoder transforms keys (then float)
  kv_rows<TV> v;
  std::span<const std::int64_t> pq, pk;
  float scale = 1;
  call_tables t;
};

/// The kernel records of storage TK / TV under plan p: K's dot-product form when the plan takes it
/// (bfloat16 on vdpbf16ps, q8_0 on vpdpbusd), V's when it takes the bfloat16 one.
template <class TK>
[[nodiscard]] const kernels::storage_kernels<TK>& key_records(const kernels::attention_kernels& kern,
                                                              const plan& p) noexcept {
  return kern.storage<TK>(std::is_same_v<TK, bfloat16> ? p.dot_qk : p.dot_q8);
}
template <class TV>
[[nodiscard]] const kernels::storage_kernels<TV>& value_records(const kernels::attention_kernels& kern,
                                                                const plan& p) noexcept {
  return kern.storage<TV>(std::is_same_v<TV, bfloat16> && p.dot_pv);
}

/// The plan facts of operands q, k, v over Sk keys (k, v: a view or a paged sequence), on kernels `kern`.
template <class TK, class TV>
[[nodiscard]] plan_input plan_input_of(tensor_view<const float> q, const kv_rows<TK>& k, const kv_rows<TV>& v,
                                       std::ptrdiff_t Sk, const kernels::attention_kernels& kern) noexcept {
  return {.B = q.batch(),
          .Sq = q.tokens(),
          .Sk = Sk,
          .Hq = q.heads(),
          .Hkv = k.view.heads(),
          .D = q.dim(),
          .Dv = kv_dim(v.view),
          .k_dim_unit = k.view.dim_contiguous(),
          .v_dim_unit = v.view.dim_contiguous(),
          .k_head_major = k.stride(axis::head) > k.stride(axis::token),
          .paged = k.block_size > 0,
          .k_bf16 = std::is_same_v<TK, bfloat16>,
          .v_bf16 = std::is_same_v<TV, bfloat16>,
          .bf16_dot_kernels = kern.bf16_dot.usable(),
          .k_q8 = is_q8_0<TK>,
          .q8_dot_kernels = kern.q8_0_dot.usable(),
          .side_by_side = kern.storage<TK>().side_by_side && kern.storage<TV>().side_by_side};
}

/// A workspace scratch slot for one running work item, given back on scope exit.
class scratch_slot {
 public:
  explicit scratch_slot(attention_workspace& ws) : ws_(ws), s_(ws.acquire()) {}
  ~scratch_slot() { ws_.release(s_); }
  scratch_slot(const scratch_slot&) = delete;
  scratch_slot& operator=(const scratch_slot&) = delete;
  detail::attention_scratch& get() noexcept { return *s_; }

 private:
  attention_workspace& ws_;
  detail::attention_scratch* s_;
};

}  // namespace posenc::inline v0::detail
