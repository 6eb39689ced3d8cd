// tests/attention/fast_plan_test.cpp — stage 1 of posenc::attention on its own: the plan
// (fast/plan.hpp) as a pure function of shapes, layouts, options and hook facts. Every expected
// value is the planning rule worked by hand (docs/attention.md, "The driver in stages"), so a
// change of the rule fails here before it shows as a speed or rounding change elsewhere.
#include <cstddef>
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/fast/plan.hpp>
#include <posenc/core/parallel.hpp>

namespace {

namespace fd = posenc::detail;
using fd::kv_path;

fd::plan_input shape(std::ptrdiff_t B, std::ptrdiff_t Sq, std::ptrdiff_t Sk, std::ptrdiff_t Hq, std::ptrdiff_t Hkv,
                     std::ptrdiff_t D = 128) {
  return {.B = B, .Sq = Sq, .Sk = Sk, .Hq = Hq, .Hkv = Hkv, .D = D, .Dv = D};
}

fd::plan plan_of(const fd::plan_input& in, const posenc::attention_options& o = {},
                 const posenc::fast_attention_options& f = {}, const fd::hook_facts& hk = {}) {
  return fd::make_plan(in, hk, o, f);
}

// Key tiles visited over all work items.
std::ptrdiff_t visited_tiles(const fd::plan& p) {
  std::ptrdiff_t n = 0;
  for (std::ptrdiff_t i = 0; i < p.work_items(); ++i) {
    const auto [a, b] = p.key_tiles(p.item(i));
    n += b - a;
  }
  return n;
}

}  // namespace

TEST_CASE("plan: prefill packs K/V tiles, one kv head per item", "[attention][fast][plan]") {
  const fd::plan p = plan_of(shape(1, 4096, 4096, 1, 1));
  CHECK(p.path == kv_path::prefill);
  CHECK(p.TQ == 64);
  CHECK(p.TK == 64);
  CHECK(p.nqt == 64);
  CHECK(p.nkt == 64);
  CHECK(p.gpi == 1);
  CHECK(p.ngs == 1);
  CHECK(p.items == 64);
  CHECK(p.chunks == 1);
  CHECK(p.work_items() == 64);
  CHECK(p.rows_max == 64);
  CHECK(p.dvp == 128);
  // key_tile applies to the prefill path only
  CHECK(plan_of(shape(1, 4096, 4096, 1, 1), {}, {.key_tile = 128}).TK == 128);
}

TEST_CASE("plan: decode reads K/V in place, every kv head per item, keys cut into chunks", "[attention][fast][plan]") {
  // Llama-style GQA decode step: 32 query heads over 8 kv heads, one token, 32768 cached keys.
  const fd::plan p = plan_of(shape(1, 1, 32768, 32, 8));
  CHECK(p.path == kv_path::decode);
  CHECK(p.G == 4);
  CHECK(p.TQ == 16);  // 64 / G
  CHECK(p.TK == 64);  // fixed on the decode path
  CHECK(p.gpi == 8);  // token-major keys: all kv heads together
  CHECK(p.ngs == 1);
  CHECK(p.items == 1);
  CHECK(p.nkt == 512);
  CHECK(p.chunk_tiles == 32);  // split_keys 2048 / 64
  CHECK(p.chunks == 16);
  CHECK(p.work_items() == 16);
  CHECK(p.rows_max == 32);  // 8 kv heads x 4 query heads x 1 token
  CHECK(plan_of(shape(1, 1, 32768, 32, 8), {}, {.key_tile = 256}).TK == 64);

  // Head-major keys: one kv head per item; 8 items are enough work, so no chunks.
  fd::plan_input hm = shape(1, 1, 32768, 32, 8);
  hm.k_head_major = true;
  const fd::plan h = plan_of(hm);
  CHECK(h.path == kv_path::decode);
  CHECK(h.gpi == 1);
  CHECK(h.ngs == 8);
  CHECK(h.items == 8);
  CHECK(h.chunks == 1);
  CHECK(h.TK == 64);  // kernels that read a tile as one run only
  CHECK(h.runs == 1);

  // Kernels that read a tile as four runs side by side: tiles of 256 keys, or of the largest divisor
  // of split_keys up to 256 (key chunks keep their size); never on paged blocks or dot-product records.
  hm.side_by_side = true;
  const fd::plan r = plan_of(hm);
  CHECK(r.TK == 256);
  CHECK(r.runs == 4);
  CHECK(r.nkt == 128);
  CHECK(plan_of(hm, {}, {.split_keys = 192}).TK == 64);
  CHECK(plan_of(hm, {}, {.split_keys = 384}).TK == 128);
  hm.Sk = 8192;  // one kv head: chunks of split_keys keys, whole tiles each
  hm.Hq = 4;
  hm.Hkv = 1;
  const fd::plan c = plan_of(hm, {}, {.split_keys = 1024});
  CHECK(c.chunks == 8);
  CHECK(c.chunk_tiles == 4);
  fd::plan_input paged = hm;
  paged.paged = true;
  CHECK(plan_of(paged).runs == 1);
  CHECK(plan_of(paged).TK == 64);
  fd::plan_input tm = hm;
  tm.k_head_major = false;
  CHECK(plan_of(tm).runs == 1);
  fd::plan_input dot = hm;
  dot.k_bf16 = dot.v_bf16 = dot.bf16_dot_kernels = true;
  CHECK(plan_of(dot).runs == 1);
  CHECK(plan_of(dot, {}, {.bf16_dot_products = false}).runs == 4);
}

TEST_CASE("plan: the prefill / decode threshold is 16 rows sharing a K/V tile", "[attention][fast][plan]") {
  CHECK(plan_of(shape(1, 1, 1024, 15, 1)).path == kv_path::decode);   // 15 rows
  CHECK(plan_of(shape(1, 1, 1024, 16, 1)).path == kv_path::prefill);  // MQA, 16 heads: 16 rows
  CHECK(plan_of(shape(1, 15, 1024, 1, 1)).path == kv_path::decode);
  CHECK(plan_of(shape(1, 16, 1024, 1, 1)).path == kv_path::prefill);
  CHECK(plan_of(shape(1, 16, 1024, 1, 1), {}, {.query_tile = 8}).path == kv_path::decode);
  // strided K or V dims are always packed
  fd::plan_input s = shape(1, 1, 1024, 1, 1);
  s.v_dim_unit = false;
  CHECK(plan_of(s).path == kv_path::prefill);
  s.v_dim_unit = true;
  s.k_dim_unit = false;
  CHECK(plan_of(s).path == kv_path::prefill);
}

TEST_CASE("plan: chunk counts", "[attention][fast][plan]") {
  // Sk not a multiple of the tile: 5000 keys = 79 tiles (the last one 8 keys), chunks of 32 tiles.
  const fd::plan p = plan_of(shape(1, 1, 5000, 1, 1));
  CHECK(p.nkt == 79);
  CHECK(p.chunks == 3);
  CHECK(p.key_tiles(p.item(0)) == std::pair<std::ptrdiff_t, std::ptrdiff_t>{0, 32});
  CHECK(p.key_tiles(p.item(1)) == std::pair<std::ptrdiff_t, std::ptrdiff_t>{32, 64});
  CHECK(p.key_tiles(p.item(2)) == std::pair<std::ptrdiff_t, std::ptrdiff_t>{64, 79});
  // below twice split_keys: one chunk
  CHECK(plan_of(shape(1, 1, 4095, 1, 1)).chunks == 1);
  CHECK(plan_of(shape(1, 1, 4096, 1, 1)).chunks == 2);
  CHECK(plan_of(shape(1, 1, 32768, 1, 1), {}, {.split_keys = 4096}).chunks == 8);
  // 8 query-side items or more: no chunks, whatever Sk
  CHECK(plan_of(shape(7, 1, 32768, 8, 8)).chunks == 512 / 32);
  CHECK(plan_of(shape(8, 1, 32768, 8, 8)).chunks == 1);
  // prefill of a long cache with one query tile: chunked too (the rule is on items, not on the path)
  const fd::plan q = plan_of(shape(1, 64, 8192, 1, 1));
  CHECK(q.path == kv_path::prefill);
  CHECK(q.chunks == 4);
}

TEST_CASE("plan: causal tile counts under default positions", "[attention][fast][plan]") {
  const posenc::attention_options causal{.causal = true};
  // 4096 x 4096 in 64-tiles: query tile t sees key tiles 0..t, 64 x 65 / 2 in all.
  const fd::plan p = plan_of(shape(1, 4096, 4096, 1, 1), causal);
  CHECK(p.causal_bound);
  CHECK(visited_tiles(p) == 2080);
  CHECK(visited_tiles(plan_of(shape(1, 4096, 4096, 1, 1))) == 4096);  // no mask: every tile
  // Explicit positions: the plan cannot bound the tiles (classification skips them at run time).
  const std::vector<std::int64_t> pos(4096);
  posenc::attention_options explicit_pos{.causal = true};
  explicit_pos.query_positions = pos;
  explicit_pos.key_positions = pos;
  const fd::plan e = plan_of(shape(1, 4096, 4096, 1, 1), explicit_pos);
  CHECK_FALSE(e.causal_bound);
  CHECK(visited_tiles(e) == 4096);
  // Bottom-right alignment, Sq < Sk: queries at 872..999 see keys up to their position.
  const fd::plan br = plan_of(shape(1, 128, 1000, 1, 1), causal);
  CHECK(br.nkt == 16);
  CHECK(br.key_tiles({0, 0, 0, 0}).second == 15);  // last query 935: tile 14
  CHECK(br.key_tiles({0, 0, 1, 0}).second == 16);  // last query 999
  // Sq > Sk: the first queries sit at negative positions and see nothing.
  const fd::plan neg = plan_of(shape(1, 200, 10, 1, 1), causal);
  CHECK(neg.nqt == 4);
  CHECK(neg.key_tiles({0, 0, 0, 0}).second == 0);
  CHECK(neg.key_tiles({0, 0, 1, 0}).second == 0);
  CHECK(neg.key_tiles({0, 0, 2, 0}).second == 1);  // query 191 at position 1
  CHECK(neg.key_tiles({0, 0, 3, 0}).second == 1);
  CHECK(visited_tiles(neg) == 2);
  // causal decode with chunks: the bound cuts nothing (the query is the last key)
  const fd::plan d = plan_of(shape(1, 1, 5000, 1, 1), causal);
  CHECK(visited_tiles(d) == 79);
}

TEST_CASE("plan: GQA groups the query heads of a kv head into one item", "[attention][fast][plan]") {
  const fd::plan p = plan_of(shape(2, 4096, 4096, 32, 8));
  CHECK(p.G == 4);
  CHECK(p.TQ == 16);
  CHECK(p.rows_max == 64);
  CHECK(p.path == kv_path::prefill);
  CHECK(p.ngs == 8);
  CHECK(p.nqt == 256);
  CHECK(p.items == 2 * 8 * 256);
  // 128 query heads on one kv head: one query token per tile, 128 rows
  const fd::plan m = plan_of(shape(1, 10, 10, 128, 1));
  CHECK(m.TQ == 1);
  CHECK(m.rows_max == 128);
  CHECK(m.nqt == 10);
}

TEST_CASE("plan: work items do not depend on the thread count and cover each item once", "[attention][fast][plan]") {
  posenc::thread_pool one(1), two(2);
  posenc::fast_attention_options f1, f2;
  f1.executor = [&](std::ptrdiff_t n, posenc::task_ref t) { one.run(n, t); };
  f2.executor = [&](std::ptrdiff_t n, posenc::task_ref t) { two.run(n, t); };
  for (const auto& in : {shape(2, 4096, 4096, 32, 8), shape(1, 1, 32768, 32, 8), shape(3, 77, 5000, 6, 2)}) {
    const fd::plan a = plan_of(in, {.causal = true}, f1), b = plan_of(in, {.causal = true}, f2);
    CHECK(a == b);
    std::set<std::tuple<std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t>> seen;
    for (std::ptrdiff_t n = 0; n < a.work_items(); ++n) {
      const fd::work_item w = a.item(n);
      CHECK(w == b.item(n));
      seen.insert({w.b, w.gs, w.qt, w.ch});
    }
    CHECK(static_cast<std::ptrdiff_t>(seen.size()) == a.work_items());
    CHECK(a.item(0).qt == a.nqt - 1);  // the longest causal items first
  }
}

TEST_CASE("plan: edge shapes", "[attention][fast][plan]") {
  const fd::plan one = plan_of(shape(1, 1, 1, 1, 1, 32));
  CHECK(one.path == kv_path::decode);
  CHECK(one.nqt == 1);
  CHECK(one.nkt == 1);
  CHECK(one.chunks == 1);
  CHECK(one.work_items() == 1);
  CHECK(one.key_tiles(one.item(0)) == std::pair<std::ptrdiff_t, std::ptrdiff_t>{0, 1});
  CHECK(one.dvp == 64);
  // Sk = 1 under a long prefill; Sq = 1 under a short cache
  const fd::plan sk1 = plan_of(shape(1, 100, 1, 1, 1), {.causal = true});
  CHECK(sk1.nkt == 1);
  CHECK(sk1.nqt == 2);
  CHECK(visited_tiles(sk1) == 1);  // queries 0..63 sit at negative positions
  const fd::plan sq1 = plan_of(shape(1, 1, 65, 1, 1));
  CHECK(sq1.nkt == 2);
  CHECK(sq1.tile_queries(0) == 1);
  // the last query tile is partial
  const fd::plan part = plan_of(shape(1, 100, 100, 1, 1));
  CHECK(part.tile_queries(1) == 36);
}

TEST_CASE("plan: hook paths", "[attention][fast][plan]") {
  // ALiBi-like distance biases over every distance <= 0, a call seeing distances [-4095, 4095]
  fd::hook_facts alibi{.distance_bias = true, .bias_range = {INT64_MIN, 0}, .call_range = {-4095, 4095}};
  const fd::plan p = plan_of(shape(1, 4096, 4096, 8, 8), {}, {}, alibi);
  CHECK(p.use_table);
  CHECK(p.trange.lo == -4095);
  CHECK(p.trange.hi == 0);
  CHECK(p.tn == 4096);
  // table larger than max_bias_table / Hq: the general path
  CHECK_FALSE(plan_of(shape(1, 4096, 4096, 8, 8), {}, {.max_bias_table = 8 * 4095}, alibi).use_table);
  CHECK(plan_of(shape(1, 4096, 4096, 8, 8), {}, {.max_bias_table = 8 * 4096}, alibi).use_table);
  // saturated range spanning all of int64: never a table
  fd::hook_facts wide{
      .distance_bias = true, .bias_range = {INT64_MIN, INT64_MAX}, .call_range = {INT64_MIN, INT64_MAX}};
  CHECK_FALSE(plan_of(shape(1, 4, 4, 1, 1), {}, {}, wide).use_table);
  // Shaw clipped at +-16, rows padded to 64
  fd::hook_facts shaw{.relative_kv = true, .kv_range = {-16, 16}, .kv_value = true, .call_range = {-100, 100}};
  const fd::plan s = plan_of(shape(1, 128, 128, 2, 2), {}, {}, shaw);
  CHECK(s.shaw);
  CHECK(s.shaw_value);
  CHECK(s.srange.lo == -16);
  CHECK(s.srange.hi == 16);
  CHECK(s.sn == 33);
  CHECK(s.sld == 64);
  CHECK_FALSE(s.use_table);
  // soft-capping: cap and 1 / cap in fp32, the cap clamped to [2^-100, 2^100]
  const fd::plan c = plan_of(shape(1, 1, 1, 1, 1), {.logit_softcap = 50.0});
  CHECK(c.softcap);
  CHECK(c.cap == 50.0f);
  CHECK(c.inv_cap == static_cast<float>(1.0 / 50.0));
  CHECK(plan_of(shape(1, 1, 1, 1, 1), {.logit_softcap = 1e-40}).cap == 0x1p-100f);
  CHECK_FALSE(plan_of(shape(1, 1, 1, 1, 1)).softcap);
}

TEST_CASE("plan: bfloat16 in-place kernels", "[attention][fast][plan]") {
  fd::plan_input in = shape(1, 1, 4096, 8, 8);
  in.k_bf16 = in.v_bf16 = true;
  in.bf16_dot_kernels = true;
  const fd::plan p = plan_of(in);
  CHECK(p.dot_qk);
  CHECK(p.dot_pv);
  CHECK(p.prep_q);
  CHECK_FALSE(p.merge_o);
  const fd::plan exact = plan_of(in, {}, {.bf16_dot_products = false});
  CHECK_FALSE(exact.dot_qk);
  CHECK(exact.prep_q);   // split_q pair order
  CHECK(exact.merge_o);  // o rows back from pair order
  in.bf16_dot_kernels = false;
  CHECK_FALSE(plan_of(in).dot_qk);
  in.bf16_dot_kernels = true;
  in.D = in.Dv = 48;  // not a multiple of 32
  CHECK_FALSE(plan_of(in).dot_qk);
  CHECK_FALSE(plan_of(in).dot_pv);
  in = shape(1, 64, 4096, 8, 2);  // prefill: pair tiles, q rows rounded once per call
  in.k_bf16 = in.v_bf16 = in.bf16_dot_kernels = true;
  const fd::plan pre = plan_of(in);
  CHECK(pre.path == fd::kv_path::prefill);
  CHECK(pre.dot_qk);
  CHECK(pre.dot_pv);
  CHECK(pre.prep_q);
  CHECK_FALSE(pre.merge_o);
  CHECK(pre.TQ == 32);  // 128 rows per item (G = 4)
  CHECK(pre.TK == 64);
  const fd::plan pre_exact = plan_of(in, {}, {.bf16_dot_products = false});
  CHECK_FALSE(pre_exact.dot_qk);
  CHECK_FALSE(pre_exact.prep_q);  // float tiles: q read as it is
  CHECK(pre_exact.TQ == 16);
  CHECK(pre_exact.TK == 64);
  in.v_dim_unit = false;  // strided values: widened to float tiles, keys still in pairs
  CHECK_FALSE(plan_of(in).dot_pv);
  CHECK(plan_of(in).dot_qk);
  in.backward = true;  // the backward's products read float tiles
  CHECK_FALSE(plan_of(in).dot_qk);
}

TEST_CASE("plan: a multi-sequence call hands out its work items longest first", "[attention][fast][plan]") {
  // a serving step: a causal prefill of 512 tokens and 7 decode steps over 2048 cached tokens
  std::vector<fd::plan> plans{plan_of(shape(1, 512, 512, 32, 8), {.causal = true})};
  for (int s = 0; s < 7; ++s) plans.push_back(plan_of(shape(1, 1, 2048, 32, 8), {.causal = true}));
  const std::vector<fd::sequence_item> order = fd::longest_first(plans);
  const auto cost = [&](const fd::sequence_item& e) {  // rows x keys visited by the item itself
    const fd::plan& p = plans[e.s];
    const fd::work_item w = p.item(e.n);
    const auto [kt0, kt1] = p.key_tiles(w);
    return (kt1 - kt0) * p.TK * p.gpi * p.G * p.tile_queries(w.qt);
  };
  std::ptrdiff_t total = 0;
  for (const fd::plan& p : plans) total += p.work_items();
  CHECK(static_cast<std::ptrdiff_t>(order.size()) == total);
  CHECK(total == 8 * 32 + 7);
  std::set<std::pair<std::size_t, std::ptrdiff_t>> seen;
  for (std::size_t i = 0; i < order.size(); ++i) {
    seen.insert({order[i].s, order[i].n});
    if (i > 0) CHECK(order[i - 1].cost >= order[i].cost);
  }
  CHECK(static_cast<std::ptrdiff_t>(seen.size()) == total);
  // a decode item (32 rows x 2048 keys) outweighs the prefill's longest (64 rows x 512 keys)
  for (std::size_t i = 0; i < 7; ++i) {
    CHECK(order[i].s == i + 1);
    CHECK(cost(order[i]) == 32 * 2048);
  }
  // the prefill's items follow in its plan's order: per kv head group, last query tile (longest) first,
  // so the items of one group, which read the same K/V, run one after the other
  const fd::plan& pre = plans[0];
  for (std::size_t i = 7; i < order.size(); ++i) {
    CHECK(order[i].s == 0);
    CHECK(order[i].n == static_cast<std::ptrdiff_t>(i - 7));
    CHECK(order[i].cost == 64 * 512);
    if (i > 7 && pre.item(order[i].n).gs == pre.item(order[i - 1].n).gs) CHECK(cost(order[i - 1]) >= cost(order[i]));
  }
  CHECK(cost(order[7]) == 64 * 512);
  CHECK(cost(order.back()) == 64 * 64);  // the first query tile sees one key tile
  // a shorter sequence's runs come after a longer one's, whatever their order in the call
  std::vector<fd::plan> two{plan_of(shape(1, 128, 128, 32, 8), {.causal = true}), pre};
  const std::vector<fd::sequence_item> o2 = fd::longest_first(two);
  for (std::size_t i = 0; i < o2.size(); ++i)
    CHECK(o2[i].s == (i < static_cast<std::size_t>(pre.work_items()) ? 1u : 0u));
}
