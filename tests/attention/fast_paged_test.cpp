// tests/attention/fast_paged_test.cpp — posenc::attention over a paged cache (attention/paged.hpp)
// and over a ragged batch (attention/ragged.hpp): bit-identical to posenc::attention on contiguous
// tensors holding the same tokens, one call per sequence, on 1 and 2 threads; bad tables and
// offsets are refused with the parameter named.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/paged.hpp>
#include <posenc/attention/ragged.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/kernels/q8_0.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

namespace {

using posenc_test::random_values;

template <class T>
std::vector<T> values(std::size_t n, std::uint64_t seed, double amp) {
  const auto r = random_values(n, seed);
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = T(static_cast<float>(amp * r[i]));
  return out;
}

bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

posenc::fast_attention_options on_threads(int n) {
  static posenc::thread_pool one(1), two(2);
  posenc::thread_pool& pool = n == 1 ? one : two;
  return {.executor = [&pool](std::ptrdiff_t c, posenc::task_ref t) { pool.run(c, t); }};
}

// A paged cache of B sequences with the given lengths: blocks in a random order of the pool, token j
// of sequence b equal to token j of the contiguous cache of that sequence.
template <class T>
struct paged_case {
  std::ptrdiff_t Hkv, D, bs, per_seq = 0, nblocks = 0;
  std::vector<std::int32_t> lengths, table;
  std::vector<std::vector<T>> k, v;  // contiguous [L_b][Hkv][D] per sequence
  std::vector<T> kpool, vpool;       // [nblocks][bs][Hkv][D]

  // shuffled = false: the pool's blocks in order, so each sequence's blocks follow each other
  paged_case(std::vector<std::int32_t> lens, std::ptrdiff_t hkv, std::ptrdiff_t d, std::ptrdiff_t block,
             std::uint64_t seed, bool shuffled = true)
      : Hkv(hkv), D(d), bs(block), lengths(std::move(lens)) {
    for (const std::int32_t L : lengths) per_seq = std::max<std::ptrdiff_t>(per_seq, (L + bs - 1) / bs);
    per_seq += 1;  // a spare column: tables may be longer than the sequence needs
    nblocks = static_cast<std::ptrdiff_t>(lengths.size()) * per_seq + 3;  // unused blocks in the pool too
    std::vector<std::int32_t> perm(static_cast<std::size_t>(nblocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::uint64_t x = seed;
    for (std::size_t i = shuffled ? perm.size() : 0; i > 1; --i) {  // Fisher-Yates with a fixed generator
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(perm[i - 1], perm[static_cast<std::size_t>((x >> 33) % i)]);
    }
    const auto row = static_cast<std::size_t>(Hkv * D);
    kpool = values<T>(static_cast<std::size_t>(nblocks * bs) * row, seed + 1, 2.0);  // stale data in unused slots
    vpool = values<T>(kpool.size(), seed + 2, 1.0);
    table.assign(lengths.size() * static_cast<std::size_t>(per_seq), -1);
    std::size_t next = 0;
    for (std::size_t b = 0; b < lengths.size(); ++b) {
      const auto L = static_cast<std::size_t>(lengths[b]);
      k.push_back(values<T>(L * row, seed + 10 + b, 2.0));
      v.push_back(values<T>(L * row, seed + 20 + b, 1.0));
      for (std::ptrdiff_t x2 = 0; x2 < per_seq; ++x2)
        table[b * static_cast<std::size_t>(per_seq) + static_cast<std::size_t>(x2)] = perm[next++];
      for (std::size_t j = 0; j < L; ++j) {
        const auto blk =
            static_cast<std::size_t>(table[b * static_cast<std::size_t>(per_seq) + j / static_cast<std::size_t>(bs)]);
        const std::size_t slot = blk * static_cast<std::size_t>(bs) + j % static_cast<std::size_t>(bs);
        std::copy_n(k[b].begin() + static_cast<std::ptrdiff_t>(j * row), row,
                    kpool.begin() + static_cast<std::ptrdiff_t>(slot * row));
        std::copy_n(v[b].begin() + static_cast<std::ptrdiff_t>(j * row), row,
                    vpool.begin() + static_cast<std::ptrdiff_t>(slot * row));
      }
    }
  }

  [[nodiscard]] posenc::paged_kv<T> view() const {
    using cv = posenc::tensor_view<const T>;
    if (padded) {  // blocks of bs + 1 slots, the view showing the first bs of each
      const std::ptrdiff_t row = Hkv * D;
      return {.k_blocks = cv::strided(kpad.data(), {nblocks, bs, Hkv, D}, {(bs + 1) * row, row, D, 1}),
              .v_blocks = cv::strided(vpad.data(), {nblocks, bs, Hkv, D}, {(bs + 1) * row, row, D, 1}),
              .block_table = table,
              .blocks_per_sequence = per_seq,
              .lengths = lengths};
    }
    if (head_major)
      return {.k_blocks = cv::bhtd(khm.data(), nblocks, Hkv, bs, D),
              .v_blocks = cv::bhtd(vhm.data(), nblocks, Hkv, bs, D),
              .block_table = table,
              .blocks_per_sequence = per_seq,
              .lengths = lengths};
    return {.k_blocks = cv::bthd(kpool.data(), nblocks, bs, Hkv, D),
            .v_blocks = cv::bthd(vpool.data(), nblocks, bs, Hkv, D),
            .block_table = table,
            .blocks_per_sequence = per_seq,
            .lengths = lengths};
  }

  // Token j of sequence b gets NaN values (in its contiguous copy and in the pool).
  void poison_value(std::size_t b, std::size_t j) {
    const auto row = static_cast<std::size_t>(Hkv * D);
    const auto blk =
        static_cast<std::size_t>(table[b * static_cast<std::size_t>(per_seq) + j / static_cast<std::size_t>(bs)]);
    const std::size_t slot = blk * static_cast<std::size_t>(bs) + j % static_cast<std::size_t>(bs);
    const T nan = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
    std::fill_n(v[b].begin() + static_cast<std::ptrdiff_t>(j * row), row, nan);
    std::fill_n(vpool.begin() + static_cast<std::ptrdiff_t>(slot * row), row, nan);
  }

  // The same pools with blocks [heads][slots][dim] (head-major inside each block).
  void make_head_major() {
    khm.resize(kpool.size());
    vhm.resize(vpool.size());
    for (std::ptrdiff_t blk = 0; blk < nblocks; ++blk)
      for (std::ptrdiff_t t = 0; t < bs; ++t)
        for (std::ptrdiff_t h = 0; h < Hkv; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) {
            const auto from = static_cast<std::size_t>(((blk * bs + t) * Hkv + h) * D + d),
                       to = static_cast<std::size_t>(((blk * Hkv + h) * bs + t) * D + d);
            khm[to] = kpool[from];
            vhm[to] = vpool[from];
          }
    head_major = true;
  }
  // The same pools with one more slot after each block, holding NaN: a reader that took the next
  // block for the continuation of this one (the ids follow each other) would read it.
  void make_padded() {
    const auto row = static_cast<std::size_t>(Hkv * D), slots = static_cast<std::size_t>(bs);
    const T nan = static_cast<T>(std::numeric_limits<float>::quiet_NaN());
    kpad.assign(static_cast<std::size_t>(nblocks) * (slots + 1) * row, nan);
    vpad.assign(kpad.size(), nan);
    for (std::size_t blk = 0; blk < static_cast<std::size_t>(nblocks); ++blk) {
      std::copy_n(kpool.begin() + static_cast<std::ptrdiff_t>(blk * slots * row), slots * row,
                  kpad.begin() + static_cast<std::ptrdiff_t>(blk * (slots + 1) * row));
      std::copy_n(vpool.begin() + static_cast<std::ptrdiff_t>(blk * slots * row), slots * row,
                  vpad.begin() + static_cast<std::ptrdiff_t>(blk * (slots + 1) * row));
    }
    padded = true;
  }
  bool head_major = false, padded = false;
  std::vector<T> khm, vhm, kpad, vpad;
};

// Paged call against one contiguous call per sequence, bitwise, on 1 and 2 threads.
template <class T, class E>
void check_paged(const paged_case<T>& pc, std::ptrdiff_t Sq, std::ptrdiff_t Hq, const E& enc,
                 const posenc::attention_options& o) {
  using cf = posenc::tensor_view<const float>;
  using ct = posenc::tensor_view<const T>;
  const auto B = static_cast<std::ptrdiff_t>(pc.lengths.size());
  const std::size_t rows = static_cast<std::size_t>(Sq * Hq * pc.D);
  const auto q = values<float>(static_cast<std::size_t>(B) * rows, 99, 2.0);
  std::vector<float> want(q.size());
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    const std::ptrdiff_t L = pc.lengths[static_cast<std::size_t>(b)];
    const auto ub = static_cast<std::size_t>(b);
    posenc::attention(cf::thd(q.data() + ub * rows, Sq, Hq, pc.D), ct::thd(pc.k[ub].data(), L, pc.Hkv, pc.D),
                      ct::thd(pc.v[ub].data(), L, pc.Hkv, pc.D),
                      posenc::tensor_view<float>::thd(want.data() + ub * rows, Sq, Hq, pc.D), enc, o);
  }
  for (int threads : {1, 2}) {
    std::vector<float> got(q.size(), -7.0f);
    posenc::attention(cf::bthd(q.data(), B, Sq, Hq, pc.D), pc.view(),
                      posenc::tensor_view<float>::bthd(got.data(), B, Sq, Hq, pc.D), enc, o, on_threads(threads));
    INFO("block " << pc.bs << ", Sq " << Sq << ", threads " << threads);
    CHECK(same_bits(got.data(), want.data(), got.size()));
  }
}

}  // namespace

TEST_CASE("paged: decode and prefill are bit-identical to a contiguous cache", "[attention][fast][paged]") {
  for (std::ptrdiff_t bs : {16, 256}) {
    // lengths not multiples of the block; 5000 tokens cut into key chunks; an empty sequence
    const paged_case<float> pc({1000, 37, 5000, 0, 300}, 2, 64, bs, 7 + static_cast<std::uint64_t>(bs));
    check_paged(pc, 1, 8, posenc::no_position{}, {.causal = true});   // GQA decode
    check_paged(pc, 1, 2, posenc::no_position{}, {});                 // decode, no mask
    check_paged(pc, 37, 4, posenc::no_position{}, {.causal = true});  // prefill chunks
    check_paged(pc, 5, 8, posenc::alibi({.num_heads = 8}), {.causal = true, .logit_softcap = 20.0});
    check_paged(pc, 1, 8, posenc::no_position{}, {.causal = true, .sliding_window = 200});
  }
  const paged_case<posenc::bfloat16> pb({700, 65}, 2, 64, 16, 3);
  check_paged(pb, 1, 8, posenc::no_position{}, {.causal = true});
  check_paged(pb, 70, 2, posenc::no_position{}, {.causal = true});
  const paged_case<posenc::float16> ph({333}, 1, 32, 100, 5);  // blocks not a multiple of the tile
  check_paged(ph, 1, 4, posenc::no_position{}, {.causal = true});
  // decode tiles read block by block (8 tokens) or through a copy (6 tokens: not a multiple of 4)
  for (std::ptrdiff_t bs : {8, 6}) {
    paged_case<posenc::bfloat16> pq({301, 64, 7}, 2, 64, bs, 13 + static_cast<std::uint64_t>(bs));
    check_paged(pq, 1, 8, posenc::no_position{}, {.causal = true});
    check_paged(pq, 1, 4, posenc::alibi({.num_heads = 4}), {.causal = true, .sliding_window = 100});
    paged_case<float> pf({301, 64, 7}, 2, 64, bs, 17 + static_cast<std::uint64_t>(bs));
    check_paged(pf, 1, 8, posenc::no_position{}, {.causal = true, .logit_softcap = 30.0});
    // a NaN value outside the window, in a tile the window cuts: the rows take their visible runs
    pf.poison_value(0, 195);
    pq.poison_value(0, 195);
    check_paged(pf, 1, 8, posenc::no_position{}, {.causal = true, .sliding_window = 100});
    check_paged(pq, 1, 8, posenc::no_position{}, {.causal = true, .sliding_window = 100});
  }
  paged_case<float> hm({500, 70}, 2, 32, 16, 11);  // head-major blocks: one kv head per decode item
  hm.make_head_major();
  check_paged(hm, 1, 4, posenc::no_position{}, {.causal = true});
  check_paged(hm, 20, 4, posenc::no_position{}, {.causal = true});
}

TEST_CASE("paged: blocks that follow each other in the pool read as one run, bit-identically",
          "[attention][fast][paged]") {
  // a pool in order: every sequence's blocks are ids x, x + 1, ... (one spare id between sequences)
  for (std::ptrdiff_t bs : {16, 8, 6, 1, 256}) {
    paged_case<float> pc({1000, 37, 300}, 2, 64, bs, 31 + static_cast<std::uint64_t>(bs), false);
    check_paged(pc, 1, 8, posenc::no_position{}, {.causal = true});
    check_paged(pc, 9, 4, posenc::alibi({.num_heads = 4}), {.causal = true, .sliding_window = 150});
    pc.poison_value(0, 195);  // a NaN value the window hides, in a run of blocks
    check_paged(pc, 1, 8, posenc::no_position{}, {.causal = true, .sliding_window = 100});
    // blocks with a slot of NaN after each: ids that follow each other are not a run there
    pc.make_padded();
    check_paged(pc, 1, 8, posenc::no_position{}, {.causal = true, .sliding_window = 100});
    check_paged(pc, 37, 4, posenc::no_position{}, {.causal = true});
  }
  paged_case<posenc::bfloat16> pb({700, 65}, 2, 64, 16, 5, false);
  check_paged(pb, 1, 8, posenc::no_position{}, {.causal = true});
  pb.make_head_major();  // head-major blocks: a block's next token is not the next block's first
  check_paged(pb, 1, 4, posenc::no_position{}, {.causal = true});
}

namespace {

// Rows of d floats as q8_0 blocks (d % 32 == 0), each row quantised alone.
std::vector<posenc::block_q8_0> to_q8(const std::vector<float>& x, std::ptrdiff_t d) {
  std::vector<posenc::block_q8_0> y(x.size() / static_cast<std::size_t>(posenc::block_q8_0::values));
  for (std::size_t r = 0; r < x.size() / static_cast<std::size_t>(d); ++r)
    posenc::kernels::quantize_row_q8_0(x.data() + r * static_cast<std::size_t>(d),
                                       y.data() + r * static_cast<std::size_t>(d / posenc::block_q8_0::values), d);
  return y;
}

}  // namespace

TEST_CASE("paged: q8_0 pools are bit-identical to a contiguous q8_0 cache", "[attention][fast][paged][q8_0]") {
  using cq8 = posenc::tensor_view<const posenc::block_q8_0>;
  using cf = posenc::tensor_view<const float>;
  for (std::ptrdiff_t bs : {16, 64, 6}) {
    const paged_case<float> pc({700, 65, 130}, 2, 64, bs, 31 + static_cast<std::uint64_t>(bs));
    const std::ptrdiff_t nb = 64 / posenc::block_q8_0::values, B = static_cast<std::ptrdiff_t>(pc.lengths.size());
    const auto kp = to_q8(pc.kpool, pc.D), vp = to_q8(pc.vpool, pc.D);
    const posenc::paged_kv<posenc::block_q8_0> kv{.k_blocks = cq8::bthd(kp.data(), pc.nblocks, bs, pc.Hkv, nb),
                                                  .v_blocks = cq8::bthd(vp.data(), pc.nblocks, bs, pc.Hkv, nb),
                                                  .block_table = pc.table,
                                                  .blocks_per_sequence = pc.per_seq,
                                                  .lengths = pc.lengths};
    for (const std::ptrdiff_t Sq : {1, 9}) {
      const std::ptrdiff_t Hq = 8;
      const std::size_t rows = static_cast<std::size_t>(Sq * Hq * pc.D);
      const auto q = values<float>(static_cast<std::size_t>(B) * rows, 98, 2.0);
      const posenc::attention_options o{.causal = true, .sliding_window = 300};
      std::vector<float> want(q.size());
      for (std::ptrdiff_t b = 0; b < B; ++b) {
        const auto ub = static_cast<std::size_t>(b);
        const std::ptrdiff_t L = pc.lengths[ub];
        const auto k = to_q8(pc.k[ub], pc.D), v = to_q8(pc.v[ub], pc.D);
        posenc::attention(cf::thd(q.data() + ub * rows, Sq, Hq, pc.D), cq8::thd(k.data(), L, pc.Hkv, nb),
                          cq8::thd(v.data(), L, pc.Hkv, nb),
                          posenc::tensor_view<float>::thd(want.data() + ub * rows, Sq, Hq, pc.D), posenc::no_position{},
                          o);
      }
      for (int threads : {1, 2}) {
        std::vector<float> got(q.size(), -7.0f);
        posenc::attention(cf::bthd(q.data(), B, Sq, Hq, pc.D), kv,
                          posenc::tensor_view<float>::bthd(got.data(), B, Sq, Hq, pc.D), posenc::no_position{}, o,
                          on_threads(threads));
        INFO("block " << bs << ", Sq " << Sq << ", threads " << threads);
        CHECK(same_bits(got.data(), want.data(), got.size()));
      }
    }
  }
}

TEST_CASE("paged: bad tables and lengths are refused", "[attention][fast][paged]") {
  const paged_case<float> pc({40, 10}, 1, 16, 16, 1);
  std::vector<float> q(2 * 16), out(2 * 16);
  using cf = posenc::tensor_view<const float>;
  const auto run = [&](const posenc::paged_kv<float>& kv, const posenc::attention_options& o = {}) {
    posenc::attention(cf::bthd(q.data(), 2, 1, 1, 16), kv, posenc::tensor_view<float>::bthd(out.data(), 2, 1, 1, 16),
                      posenc::no_position{}, o);
  };
  CHECK_NOTHROW(run(pc.view()));
  std::vector<std::int32_t> t = pc.table;
  t[1] = static_cast<std::int32_t>(pc.nblocks);  // sequence 0's second block: out of the pool
  posenc::paged_kv<float> bad = pc.view();
  bad.block_table = t;
  posenc_test::refused<posenc::config_error>([&] { run(bad); }, "paged.block_table");
  t[1] = -1;
  posenc_test::refused<posenc::config_error>([&] { run(bad); }, "paged.block_table");
  t = pc.table;
  t[static_cast<std::size_t>(pc.per_seq) - 1] = 1 << 30;  // beyond sequence 0's length: never read
  CHECK_NOTHROW(run(bad));
  const std::vector<std::int32_t> too_long{static_cast<std::int32_t>(pc.per_seq * 16 + 1), 10};
  bad = pc.view();
  bad.lengths = too_long;  // more tokens than its blocks hold
  posenc_test::refused<posenc::shape_error>([&] { run(bad); }, "paged.lengths");
  bad = pc.view();
  bad.block_table = std::span<const std::int32_t>(pc.table).first(3);
  posenc_test::refused<posenc::shape_error>([&] { run(bad); }, "paged.block_table");
  bad = pc.view();
  bad.lengths = std::span<const std::int32_t>(pc.lengths).first(1);
  posenc_test::refused<posenc::shape_error>([&] { run(bad); }, "paged.lengths");
  const std::vector<std::int64_t> kl{1, 1};
  posenc::attention_options o;
  o.key_lengths = kl;
  posenc_test::refused<posenc::config_error>([&] { run(pc.view(), o); }, "attention.key_lengths");
}

namespace {

// One ragged call against one posenc::attention call per sequence, bitwise, on 1 and 2 threads.
template <class T, class E>
void check_ragged(const std::vector<std::int32_t>& sq, const std::vector<std::int32_t>& sk, std::ptrdiff_t Hq,
                  std::ptrdiff_t Hkv, std::ptrdiff_t D, const E& enc, const posenc::attention_options& o) {
  std::vector<std::int32_t> cq{0}, ck{0};
  for (std::size_t s = 0; s < sq.size(); ++s) cq.push_back(cq.back() + sq[s]), ck.push_back(ck.back() + sk[s]);
  const auto q = values<float>(static_cast<std::size_t>(cq.back() * Hq * D), 41, 2.0);
  const auto k = values<T>(static_cast<std::size_t>(ck.back() * Hkv * D), 42, 2.0);
  const auto v = values<T>(k.size(), 43, 1.0);
  using cf = posenc::tensor_view<const float>;
  using ct = posenc::tensor_view<const T>;
  std::vector<float> want(static_cast<std::size_t>(cq.back() * Hq * D), -7.0f);
  for (std::size_t s = 0; s < sq.size(); ++s)
    posenc::attention(cf::thd(q.data() + cq[s] * Hq * D, sq[s], Hq, D),
                      ct::thd(k.data() + ck[s] * Hkv * D, sk[s], Hkv, D),
                      ct::thd(v.data() + ck[s] * Hkv * D, sk[s], Hkv, D),
                      posenc::tensor_view<float>::thd(want.data() + cq[s] * Hq * D, sq[s], Hq, D), enc, o);
  for (int threads : {1, 2}) {
    std::vector<float> got(want.size(), -7.0f);
    posenc::attention(cf::thd(q.data(), cq.back(), Hq, D), ct::thd(k.data(), ck.back(), Hkv, D),
                      ct::thd(v.data(), ck.back(), Hkv, D),
                      posenc::tensor_view<float>::thd(got.data(), cq.back(), Hq, D), posenc::ragged_batch{cq, ck}, enc,
                      o, on_threads(threads));
    INFO("threads " << threads);
    CHECK(same_bits(got.data(), want.data(), got.size()));
  }
}

}  // namespace

TEST_CASE("ragged: prefill and decode rows in one call are bit-identical to one call per sequence",
          "[attention][fast][ragged]") {
  // one long prefill, decode steps over short and long caches, an empty query, a sequence without keys
  const std::vector<std::int32_t> sq{300, 1, 1, 0, 7, 2}, sk{300, 40, 5000, 9, 0, 130};
  check_ragged<float>(sq, sk, 8, 2, 32, posenc::no_position{}, {.causal = true});
  check_ragged<float>(sq, sk, 8, 2, 32, posenc::alibi({.num_heads = 8}), {.causal = true, .logit_softcap = 30.0});
  check_ragged<posenc::bfloat16>(sq, sk, 4, 4, 64, posenc::no_position{}, {});
  const std::vector<double> sinks{0.5, -1, 2, 0.25};
  posenc::attention_options o{.causal = true, .sliding_window = 64};
  o.sinks = sinks;
  check_ragged<float>({64, 1, 65}, {64, 4097, 65}, 4, 1, 32, posenc::no_position{}, o);
}

TEST_CASE("ragged: q8_0 K/V, bit-identical to one call per sequence", "[attention][fast][ragged][q8_0]") {
  const std::vector<std::int32_t> sq{40, 1, 1}, sk{40, 300, 2000}, cq{0, 40, 41, 42}, ck{0, 40, 340, 2340};
  const std::ptrdiff_t Hq = 8, Hkv = 2, D = 64, nb = D / posenc::block_q8_0::values;
  const auto q = values<float>(static_cast<std::size_t>(cq.back() * Hq * D), 51, 2.0);
  const auto k = to_q8(values<float>(static_cast<std::size_t>(ck.back() * Hkv * D), 52, 2.0), D);
  const auto v = to_q8(values<float>(static_cast<std::size_t>(ck.back() * Hkv * D), 53, 1.0), D);
  using cf = posenc::tensor_view<const float>;
  using cq8 = posenc::tensor_view<const posenc::block_q8_0>;
  const posenc::attention_options o{.causal = true};
  std::vector<float> want(q.size(), -7.0f);
  for (std::size_t s = 0; s < sq.size(); ++s)
    posenc::attention(
        cf::thd(q.data() + cq[s] * Hq * D, sq[s], Hq, D), cq8::thd(k.data() + ck[s] * Hkv * nb, sk[s], Hkv, nb),
        cq8::thd(v.data() + ck[s] * Hkv * nb, sk[s], Hkv, nb),
        posenc::tensor_view<float>::thd(want.data() + cq[s] * Hq * D, sq[s], Hq, D), posenc::no_position{}, o);
  for (int threads : {1, 2}) {
    std::vector<float> got(want.size(), -7.0f);
    posenc::attention(cf::thd(q.data(), cq.back(), Hq, D), cq8::thd(k.data(), ck.back(), Hkv, nb),
                      cq8::thd(v.data(), ck.back(), Hkv, nb),
                      posenc::tensor_view<float>::thd(got.data(), cq.back(), Hq, D), posenc::ragged_batch{cq, ck},
                      posenc::no_position{}, o, on_threads(threads));
    INFO("threads " << threads);
    CHECK(same_bits(got.data(), want.data(), got.size()));
  }
}

TEST_CASE("ragged: bad offsets are refused", "[attention][fast][ragged]") {
  std::vector<float> q(10 * 16), k(12 * 16), out(10 * 16);
  using cf = posenc::tensor_view<const float>;
  const auto run = [&](std::vector<std::int32_t> cq, std::vector<std::int32_t> ck) {
    posenc::attention(cf::thd(q.data(), 10, 1, 16), cf::thd(k.data(), 12, 1, 16), cf::thd(k.data(), 12, 1, 16),
                      posenc::tensor_view<float>::thd(out.data(), 10, 1, 16), posenc::ragged_batch{cq, ck},
                      posenc::no_position{});
  };
  CHECK_NOTHROW(run({0, 4, 10}, {0, 2, 12}));
  posenc_test::refused<posenc::shape_error>([&] { run({0, 4, 9}, {0, 2, 12}); }, "ragged.cu_seqlens_q");
  posenc_test::refused<posenc::shape_error>([&] { run({1, 4, 10}, {0, 2, 12}); }, "ragged.cu_seqlens_q");
  posenc_test::refused<posenc::shape_error>([&] { run({0, 5, 4, 10}, {0, 2, 3, 12}); }, "ragged.cu_seqlens_q");
  posenc_test::refused<posenc::shape_error>([&] { run({0, 4, 10}, {0, 13, 12}); }, "ragged.cu_seqlens_k");
  posenc_test::refused<posenc::shape_error>([&] { run({0, 4, 10}, {0, 12}); }, "ragged.cu_seqlens_k");
  posenc_test::refused<posenc::shape_error>([&] { run({}, {}); }, "ragged.cu_seqlens_q");
}
