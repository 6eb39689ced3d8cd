// posenc/attention/fast/plan.hpp — stage 1 of posenc::attention: the plan of a call, a pure function of
// its shapes, layouts, options and encoder hook facts (docs/attention.md, "The driver in stages").
//
// The plan fixes the tile sizes, the K/V path (prefill: K/V tiles packed once for every row of a
// work item; decode: the kernels read K/V rows in place), whether the keys are cut into chunks
// merged by log-sum-exp, the list of work items and the key tiles each one visits, and which path
// each encoder hook takes (distance table or general bias, Shaw and p2c tables, soft-capping). It
// allocates nothing, reads no tensor element and calls no kernel; it never sees the thread count, so
// the work, and with it every rounding, is the same on any number of threads.
// Not here: the tables themselves (stage 2, fast/tables.hpp) and the tile loop (stage 3,
// fast/forward.hpp; the backward's in fast/backward.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <posenc/attention/fast/encoder_paths.hpp>
#include <posenc/attention/fast/options.hpp>
#include <posenc/attention/options.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/checked.hpp>

namespace posenc::inline v0::detail {

/// The operand facts a plan depends on: shapes and layouts, never element values.
struct plan_input {
  std::ptrdiff_t B = 1, Sq = 1, Sk = 1, Hq = 1, Hkv = 1, D = 0, Dv = 0;
  bool k_dim_unit = true, v_dim_unit = true;  // unit dim stride of k / v
  bool k_head_major = false;                  // k's head stride exceeds its token stride ([B, H, S, D])
  bool paged = false;                         // k and v are blocks of a paged cache
  bool k_bf16 = false, v_bf16 = false;        // bfloat16 storage of k / v
  bool bf16_dot_kernels = false;              // the active kernels have AVX512_BF16 forms (this CPU)
  bool k_q8 = false;                          // q8_0 storage of k
  bool q8_dot_kernels = false;                // the active kernels have a vpdpbusd q8_0 key form
  bool side_by_side = false;                  // k's and v's records read decode tiles as runs side by side
  bool backward = false;                      // the plan of a backward: packed tiles, no key chunks
};

enum class kv_path : unsigned char {
  prefill,  // K^T and V tiles packed (converted to float) once per work item, for all its rows
  decode,   // the kernels read K and V rows in place, every kv head of a token together
};

/// One work item: sequence b, kv-head set gs (kv heads [gs gpi, (gs + 1) gpi)), query tile qt,
/// key chunk ch.
struct work_item {
  std::ptrdiff_t b = 0, gs = 0, qt = 0, ch = 0;
  bool operator==(const work_item&) const = default;
};

/// The plan of one call (make_plan).
struct plan {
  std::ptrdiff_t B = 0, Sq = 0, Sk = 0, Hq = 0, Hkv = 0, G = 1, D = 0, Dv = 0;
  std::ptrdiff_t dvp = 0;  // Dv padded to 64 (output rows, packed V rows)
  int TQ = 1, TK = 64;     // query tokens, keys per tile
  int runs = 1;            // decode: a tile's keys read as this many runs side by side (1 or 4)
  std::ptrdiff_t nqt = 0, nkt = 0;
  kv_path path = kv_path::prefill;
  std::ptrdiff_t gpi = 1, ngs = 0;  // kv heads per work item, kv-head sets
  std::ptrdiff_t items = 0;         // B ngs nqt (query-side items; times chunks work items)
  std::ptrdiff_t chunks = 1, chunk_tiles = 0;
  std::ptrdiff_t rows_max = 0;  // rows of the largest item: gpi G min(TQ, Sq)
  bool causal_bound = false;    // causal with default positions: tiles past a tile's last query left out
  // bfloat16: AVX512_BF16 dot products for QK^T / PV (decode: in place; prefill: on pair tiles); q rows
  // prepared for the key kernel (pair order or rounded: decode once per call, prefill once per work
  // item); decode's o rows put back from pair order after the last tile.
  bool dot_qk = false, dot_pv = false, prep_q = false, merge_o = false;
  // q8_0 keys on the decode path: vpdpbusd integer dot products on q rows quantised once per call
  bool dot_q8 = false;
  // logit soft-capping: cap tanh(s inv_cap) on the content logits, before the biases and the mask
  bool softcap = false;
  float cap = 1, inv_cap = 1;
  // distance-bias leaves: one table per head over trange (tn distances), else the general path
  bool use_table = false;
  distance_range trange{};
  std::ptrdiff_t tn = 0;
  // Shaw: aK / aV over srange (sn distances, rows padded to sld = a multiple of 64); p2c: DeBERTa's
  // aQ over the same distances, k . aQ formed per key tile over the distances the pair can see
  bool shaw = false, shaw_value = false, p2c = false;
  distance_range srange{};
  std::ptrdiff_t sn = 0, sld = 0;
  // CoPE: gates and positions per key tile, the key tiles of an item walked last to first (positions
  // are sums over the keys at or after each key); q . e(n) over cn table rows (sld-like cld) per item
  bool cope = false, cope_values = false, cope_scaled = true;
  std::ptrdiff_t cn = 0, cld = 0;

  /// Work items run: items x chunks, numbered as item() maps them.
  [[nodiscard]] std::ptrdiff_t work_items() const noexcept { return items * chunks; }

  /// Work item n. Last query tiles first: under a causal mask they see the most keys, so the items
  /// left when a thread runs out of work are the short ones (the pool hands out items in index order).
  [[nodiscard]] work_item item(std::ptrdiff_t n) const noexcept {
    const std::ptrdiff_t it = n / chunks;
    return {it / (nqt * ngs), (it / nqt) % ngs, nqt - 1 - it % nqt, n % chunks};
  }

  /// Index of w's query side (b, gs, qt) among the items: where its chunk partials live.
  [[nodiscard]] std::ptrdiff_t item_index(const work_item& w) const noexcept { return (w.b * ngs + w.gs) * nqt + w.qt; }

  /// Query tokens of query tile qt.
  [[nodiscard]] std::ptrdiff_t tile_queries(std::ptrdiff_t qt) const noexcept {
    return std::min<std::ptrdiff_t>(TQ, Sq - qt * TQ);
  }

  /// Key tiles [first, second) that item w visits: its chunk, and under causal_bound none past the
  /// last key its last query can see (those would all be skipped: same result, no loop over them).
  [[nodiscard]] std::pair<std::ptrdiff_t, std::ptrdiff_t> key_tiles(const work_item& w) const noexcept {
    const std::ptrdiff_t kt0 = w.ch * chunk_tiles;
    std::ptrdiff_t kt1 = std::min(nkt, kt0 + chunk_tiles);
    if (causal_bound) {  // query i sits at Sk - Sq + i, key j at j
      const std::ptrdiff_t last_key = Sk - Sq + w.qt * TQ + tile_queries(w.qt) - 1;
      kt1 = std::min(kt1, last_key < 0 ? 0 : last_key / TK + 1);
    }
    return {kt0, std::max(kt0, kt1)};
  }

  bool operator==(const plan&) const = default;
};

/// The plan of a call. Inputs validated beforehand (validate_call); Hq a multiple of Hkv > 0.
[[nodiscard]] inline plan make_plan(const plan_input& in, const hook_facts& hk, const attention_options& o,
                                    const fast_attention_options& f) noexcept {
  plan p;
  p.B = in.B, p.Sq = in.Sq, p.Sk = in.Sk, p.Hq = in.Hq, p.Hkv = in.Hkv, p.D = in.D, p.Dv = in.Dv;
  p.G = in.Hq / in.Hkv;
  p.dvp = (in.Dv + 63) / 64 * 64;
  if (o.logit_softcap) {
    // fp32 cap and 1 / cap, the cap clamped to [2^-100, 2^100]: outside, the capped logits change
    // only by 2^-99 (a tiny cap) or only where |logit| > 2^88 (a huge one), where the documented
    // bound exceeds the range of the outputs.
    const double cap = std::clamp(*o.logit_softcap, 0x1p-100, 0x1p100);
    p.softcap = true;
    p.cap = static_cast<float>(cap);
    p.inv_cap = static_cast<float>(1.0 / cap);
  }
  // About 64 rows per work item whatever the GQA group size.
  p.TQ = f.query_tile > 0 ? f.query_tile : static_cast<int>(std::max<std::ptrdiff_t>(1, 64 / p.G));
  // Packing a K/V tile pays off once 16 rows share it; strided dims are packed whatever the rows; the
  // backward packs every tile (its products read K, V and K^T as packed matrices).
  // DeBERTa's p2c term reads the packed K tile (k . aQ per key tile): always packed.
  // CoPE reads packed tiles too, and one item walks all its keys (no key chunks).
  const bool prefill = in.backward || hk.relative_query || hk.contextual ||
                       p.G * std::min<std::ptrdiff_t>(p.TQ, p.Sq) >= 16 || !in.k_dim_unit || !in.v_dim_unit;
  p.path = prefill ? kv_path::prefill : kv_path::decode;
  // Decode with token-major keys: one item takes every kv head, so a key tile's rows (all heads of a
  // token are adjacent) are read together rather than one head's rows Hkv rows apart. Head-major
  // keys take one head per item: its K and V rows are two contiguous runs, and the kernels'
  // prefetches (rows of the tile's tokens, ahead) ask for that head's rows. With every head per item
  // they asked for head 0's rows only, and the other heads ran on the hardware prefetcher: 0.6x the
  // one-core rate from DRAM.
  p.gpi = prefill || in.k_head_major ? 1 : p.Hkv;
  // bfloat16 on vdpbf16ps: in place (decode) or on pair tiles (prefill, unit dim strides; never the
  // backward; keys stay float tiles where DeBERTa's p2c term reads the packed K tile)
  const bool dot = !in.backward && in.bf16_dot_kernels && f.bf16_dot_products;
  p.dot_qk = dot && in.k_bf16 && p.D % 32 == 0 && in.k_dim_unit && !hk.relative_query && !hk.contextual;
  p.dot_pv = dot && in.v_bf16 && p.Dv % 32 == 0 && in.v_dim_unit;
  p.dot_q8 = !prefill && in.q8_dot_kernels && f.q8_0_int8_dot_products && in.k_q8 && p.D % 32 == 0;
  p.prep_q = prefill ? p.dot_qk : in.k_bf16 || p.dot_q8;
  // The pair tiles' products take half the time of the float ones: about 128 rows per work item share
  // each packed tile instead of 64, so the packing stays a small part of them.
  if (prefill && (p.dot_qk || p.dot_pv) && f.query_tile == 0)
    p.TQ = static_cast<int>(std::max<std::ptrdiff_t>(1, 128 / p.G));
  p.nqt = (p.Sq + p.TQ - 1) / p.TQ;
  p.merge_o = !prefill && in.v_bf16 && !p.dot_pv;
  // Decode: V rows prefetched during QK^T stay in L2 for PV at 64 keys (16 / 32 / 128: no faster).
  p.TK = prefill ? f.key_tile : 64;
  // Head-major decode: one head's K (then V) rows are one run per tile; read as four runs side by side,
  // a tile of 256 keys, the kernels keep four prefetch streams going (1.2x the one-core rate from DRAM;
  // 128, 512 and 1024 keys: no faster). The tile divides split_keys, so key chunks keep their size.
  // Not on paged blocks (read block by block, in the order and tiles of a contiguous token-major
  // cache: bit for bit its result) nor on the dot-product records.
  if (!prefill && in.k_head_major && !in.paged && in.side_by_side && !p.dot_qk && !p.dot_pv && !p.dot_q8) {
    p.TK = static_cast<int>(std::gcd<std::ptrdiff_t>(256, f.split_keys));
    p.runs = 4;
  }
  p.nkt = (p.Sk + p.TK - 1) / p.TK;
  p.ngs = p.Hkv / p.gpi;
  p.rows_max = p.gpi * p.G * std::min<std::ptrdiff_t>(p.TQ, p.Sq);
  p.items = p.B * p.ngs * p.nqt;
  // Few items over many keys (decode): key chunks as extra work items, so every thread has work (the
  // backward splits its keys into lanes instead: backward_plan).
  p.chunk_tiles = p.nkt;
  if (!in.backward && !hk.contextual && p.items < 8 && p.Sk >= 2 * f.split_keys) {
    p.chunk_tiles = f.split_keys / p.TK;
    p.chunks = (p.nkt + p.chunk_tiles - 1) / p.chunk_tiles;
  }
  p.chunk_tiles = std::max<std::ptrdiff_t>(p.chunk_tiles, 1);
  p.causal_bound = o.causal && o.query_positions.empty() && o.key_positions.empty();

  if (hk.distance_bias) {
    p.trange = clip_range(hk.call_range, hk.bias_range);
    const std::int64_t span = saturating_difference(p.trange.hi, p.trange.lo);
    if (span < INT64_MAX && span + 1 <= f.max_bias_table / std::max<std::ptrdiff_t>(p.Hq, 1)) {
      p.use_table = true;
      p.tn = static_cast<std::ptrdiff_t>(span + 1);
    }
  }
  if (hk.relative_kv || hk.relative_query) {
    p.shaw = hk.relative_kv;
    p.shaw_value = hk.kv_value;
    p.p2c = hk.relative_query;
    const distance_range r = !hk.relative_kv      ? hk.query_range
                             : !hk.relative_query ? hk.kv_range
                                                  : distance_range{std::min(hk.kv_range.lo, hk.query_range.lo),
                                                                   std::max(hk.kv_range.hi, hk.query_range.hi)};
    p.srange = clip_range(hk.call_range, r);
    p.sn = static_cast<std::ptrdiff_t>(p.srange.hi - p.srange.lo + 1);
    p.sld = (p.sn + 63) / 64 * 64;
  }
  if (hk.contextual) {  // positions reach at most min(npos - 1, Sk): ceil of a sum of Sk gates <= 1
    p.cope = true;
    p.cope_values = hk.contextual_values;
    p.cope_scaled = hk.contextual_scaled;
    p.cn = static_cast<std::ptrdiff_t>(std::min<std::int64_t>(hk.contextual_rows, p.Sk + 1));
    p.cld = (p.cn + 63) / 64 * 64;
  }
  return p;
}

/// One work item of the backward: sequence b, kv head g, and the key tiles lane, lane + lanes, ...
struct backward_item {
  std::ptrdiff_t b = 0, g = 0, lane = 0;
};

/// The plan of a backward call: the forward's plan of the same call (make_plan with
/// plan_input::backward: packed tiles of key_tile keys, one kv head per item, no key chunks; the hook
/// paths, and so the tables, of the forward) and the backward's own work. Each (sequence, kv head) is cut into
/// `lanes` items, lane l owning the key tiles l, l + lanes, ... (the interleave balances a causal
/// mask), so the dK and dV rows of a key tile have one writer; lanes gives enough items for the
/// threads a machine has and depends on the shape alone.
struct backward_plan : plan {
  std::ptrdiff_t lanes = 1;

  [[nodiscard]] std::ptrdiff_t backward_items() const noexcept { return B * Hkv * lanes; }
  [[nodiscard]] backward_item backward_work(std::ptrdiff_t n) const noexcept {
    return {n / (lanes * Hkv), (n / lanes) % Hkv, n % lanes};
  }
};

/// The plan of a backward call (see backward_plan). Inputs validated beforehand, Sk > 0.
[[nodiscard]] inline backward_plan make_backward_plan(plan_input in, const hook_facts& hk, const attention_options& o,
                                                      const fast_attention_options& f) noexcept {
  in.backward = true;
  backward_plan bp{make_plan(in, hk, o, f)};
  bp.lanes = std::clamp<std::ptrdiff_t>(16 / std::max<std::ptrdiff_t>(1, bp.B * bp.Hkv), 1, bp.nkt);
  return bp;
}

/// A work item of a multi-sequence call: item n of sequence s's plan, and the cost it is ordered by
/// (the rows x keys visited of the longest item of its run, see longest_first).
struct sequence_item {
  std::size_t s = 0;
  std::ptrdiff_t n = 0, cost = 0;
};

/// Every work item of the sequences' plans in the order the executor hands them out. Items come in
/// runs, one per sequence and kv head group, each in its plan's order (last query tiles first, as a
/// call of its own runs them: the run's items read the same K/V, which stays in L2 from one to the
/// next); runs go longest first by their longest item (rows x keys visited; ties: sequence order,
/// then group order), so a long sequence's items start at once, the short ones fill in around them
/// and no thread waits on one long item at the end. (Ordered by item cost alone, one sequence's
/// items would alternate kv heads and find nothing in L2: docs/performance.md, paged caches.)
[[nodiscard]] inline std::vector<sequence_item> longest_first(std::span<const plan> plans) {
  std::vector<sequence_item> order;
  for (std::size_t s = 0; s < plans.size(); ++s) {
    const plan& p = plans[s];
    const std::size_t first = order.size();
    for (std::ptrdiff_t i = 0; i < p.work_items(); ++i) {
      const work_item w = p.item(i);
      const auto [kt0, kt1] = p.key_tiles(w);
      order.push_back({s, i, (kt1 - kt0) * p.TK * p.gpi * p.G * p.tile_queries(w.qt)});
    }
    // items of one (batch, group) are contiguous in plan order: nqt x chunks of them
    const std::size_t run = static_cast<std::size_t>(std::max<std::ptrdiff_t>(p.nqt * p.chunks, 1));
    for (std::size_t a = first; a < order.size(); a += run) {
      const std::size_t e = std::min(order.size(), a + run);
      std::ptrdiff_t longest = 0;
      for (std::size_t x = a; x < e; ++x) longest = std::max(longest, order[x].cost);
      for (std::size_t x = a; x < e; ++x) order[x].cost = longest;
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const sequence_item& a, const sequence_item& b) { return a.cost > b.cost; });
  return order;
}

}  // namespace posenc::inline v0::detail
