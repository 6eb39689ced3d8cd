// tests/attention/paged_kv_cache_test.cpp — posenc::paged_kv_cache (attention/paged_kv_cache.hpp):
// appends into pool blocks that never move, attends bit-identically to a kv_cache holding the same
// tokens at the same positions (float and q8_0 sides, decode and prefill queries, several sequences
// in one call), frees whole blocks on a window shift with the same result as kv_cache's shift, gives
// blocks back when a sequence ends, and refuses what it cannot do with the parameter named.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/paged_kv_cache.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc::kv_cache_type;
using posenc::paged_kv_cache;
using posenc::tensor_view;

// Everything in a named namespace (the test area builds as unity batches: no clash with other files'
// helpers or constants); each test case opens it.
namespace paged_kv_cache_test {

constexpr std::ptrdiff_t H = 2, Hq = 4, D = 64;

std::vector<float> floats(std::size_t n, std::uint64_t seed, double amp) {
  const auto r = posenc_test::random_values(n, seed);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) f[i] = static_cast<float>(amp * r[i]);
  return f;
}

// Tokens of one sequence: keys and values [n][H][D].
struct tokens {
  std::vector<float> k, v;
  std::ptrdiff_t n;
  tokens(std::ptrdiff_t count, std::uint64_t seed)
      : k(floats(static_cast<std::size_t>(count * H * D), seed, 2.0)), v(floats(k.size(), seed + 1, 1.0)), n(count) {}
  [[nodiscard]] tensor_view<const float> kv(const std::vector<float>& x, std::ptrdiff_t t0, std::ptrdiff_t c) const {
    return tensor_view<const float>::bthd(x.data() + t0 * H * D, 1, c, H, D);
  }
};

posenc::kv_cache_config kv_config(kv_cache_type kt, kv_cache_type vt) {
  return {.kv_heads = H, .head_dim = D, .key_type = kt, .value_type = vt};
}

// The reference: a kv_cache with the same tokens, appended in the same chunks, positions 0, 1, ...
template <class E>
void append_both(const E& enc, paged_kv_cache& paged, std::ptrdiff_t s, posenc::kv_cache<float>& ref, const tokens& x,
                 std::ptrdiff_t t0, std::ptrdiff_t c) {
  paged.append(enc, s, x.kv(x.k, t0, c), x.kv(x.v, t0, c));
  std::vector<std::int64_t> pos(static_cast<std::size_t>(c));
  for (std::ptrdiff_t t = 0; t < c; ++t) pos[static_cast<std::size_t>(t)] = ref.length() + t;
  static_cast<void>(ref.append(enc, x.kv(x.k, t0, c), x.kv(x.v, t0, c), pos));
}

// out of kv_cache::attend for the last Sq tokens of ref
template <class E>
std::vector<float> ref_attend(const E& enc, const posenc::kv_cache<float>& ref, const std::vector<float>& q,
                              std::ptrdiff_t Sq, const posenc::attention_options& o) {
  std::vector<float> out(static_cast<std::size_t>(Sq * Hq * D));
  std::vector<std::int64_t> pos(static_cast<std::size_t>(Sq));
  for (std::ptrdiff_t i = 0; i < Sq; ++i) pos[static_cast<std::size_t>(i)] = ref.length() - Sq + i;
  ref.attend(enc, tensor_view<const float>::bthd(q.data(), 1, Sq, Hq, D),
             tensor_view<float>::bthd(out.data(), 1, Sq, Hq, D), pos, o);
  return out;
}

bool same_bits(const std::vector<float>& a, const float* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(float)) == 0;
}

}  // namespace paged_kv_cache_test

TEST_CASE("paged_kv_cache: blocks never move; attend is bit-identical to kv_cache", "[attention][kv_cache][paged]") {
  using namespace paged_kv_cache_test;
  const auto enc = posenc::rope({.head_dim = static_cast<int>(D)});
  const posenc::attention_options o{.causal = true};
  for (const auto& types :
       {std::pair{kv_cache_type::native, kv_cache_type::native}, std::pair{kv_cache_type::q8_0, kv_cache_type::q8_0},
        std::pair{kv_cache_type::q8_0, kv_cache_type::native}}) {
    const kv_cache_type kt = types.first, vt = types.second;
    for (const std::ptrdiff_t bs : {16, 6}) {
      DYNAMIC_SECTION("block size " << bs << ", q8_0 keys " << (kt == kv_cache_type::q8_0) << ", q8_0 values "
                                    << (vt == kv_cache_type::q8_0)) {
        paged_kv_cache paged(
            {.kv_heads = H, .head_dim = D, .block_size = bs, .num_blocks = 64, .key_type = kt, .value_type = vt});
        const std::ptrdiff_t a = paged.add_sequence(), b = paged.add_sequence();
        posenc::kv_cache<float> ra(kv_config(kt, vt)), rb(kv_config(kt, vt));
        const tokens xa(150, 10), xb(77, 20);
        // interleaved chunks, so the two sequences' blocks alternate in the pool
        append_both(enc, paged, a, ra, xa, 0, 40);
        append_both(enc, paged, b, rb, xb, 0, 33);
        const auto first = paged.blocks(a)[0];
        const auto pool_data = [&] {
          return kt == kv_cache_type::q8_0 ? static_cast<const void*>(paged.key_pool_q8_0().data())
                                           : static_cast<const void*>(paged.key_pool().data());
        };
        const std::size_t block_bytes =
            static_cast<std::size_t>(bs * H) *
            (kt == kv_cache_type::q8_0 ? sizeof(posenc::block_q8_0) * (D / 32) : sizeof(float) * D);
        const void* const kp = pool_data();
        std::vector<std::byte> snapshot(block_bytes);
        std::memcpy(snapshot.data(), static_cast<const std::byte*>(kp) + first * block_bytes, block_bytes);
        append_both(enc, paged, a, ra, xa, 40, 109);
        append_both(enc, paged, b, rb, xb, 33, 43);
        append_both(enc, paged, a, ra, xa, 149, 1);
        append_both(enc, paged, b, rb, xb, 76, 1);
        // the pool was never reallocated, and the first block still holds what it held
        CHECK(pool_data() == kp);
        CHECK(std::memcmp(snapshot.data(), static_cast<const std::byte*>(kp) + first * block_bytes, block_bytes) == 0);
        CHECK(paged.blocks(a)[0] == first);
        CHECK(paged.length(a) == 150);
        CHECK(paged.length(b) == 77);
        CHECK(paged.free_blocks() == 64 - (150 + bs - 1) / bs - (77 + bs - 1) / bs);

        for (const std::ptrdiff_t Sq : {1, 5}) {
          const auto qa = floats(static_cast<std::size_t>(Sq * Hq * D), 30 + static_cast<std::uint64_t>(Sq), 1.5);
          const auto qb = floats(qa.size(), 40 + static_cast<std::uint64_t>(Sq), 1.5);
          std::vector<float> q(qa), out(2 * qa.size());
          q.insert(q.end(), qb.begin(), qb.end());
          const std::ptrdiff_t seqs[] = {a, b};
          for (int threads : {1, 2}) {
            posenc::thread_pool pool(threads);
            paged.attend(enc, seqs, tensor_view<const float>::bthd(q.data(), 2, Sq, Hq, D),
                         tensor_view<float>::bthd(out.data(), 2, Sq, Hq, D), o, {.executor = pool.as_parallel_for()});
            CHECK(same_bits(ref_attend(enc, ra, qa, Sq, o), out.data()));
            CHECK(same_bits(ref_attend(enc, rb, qb, Sq, o), out.data() + qa.size()));
          }
        }
      }
    }
  }
}

TEST_CASE("paged_kv_cache: a window shift frees whole blocks and matches kv_cache's", "[attention][kv_cache][paged]") {
  using namespace paged_kv_cache_test;
  const auto enc = posenc::rope({.head_dim = static_cast<int>(D)});
  const posenc::attention_options o{.causal = true};
  for (const kv_cache_type kt : {kv_cache_type::native, kv_cache_type::q8_0}) {
    DYNAMIC_SECTION("q8_0 keys " << (kt == kv_cache_type::q8_0)) {
      constexpr std::ptrdiff_t bs = 16;
      paged_kv_cache paged({.kv_heads = H, .head_dim = D, .block_size = bs, .num_blocks = 16, .key_type = kt});
      const std::ptrdiff_t s = paged.add_sequence();
      posenc::kv_cache<float> ref(kv_config(kt, kv_cache_type::native));
      const tokens x(100, 50);
      append_both(enc, paged, s, ref, x, 0, 100);  // 7 blocks, the last one partly filled
      const std::ptrdiff_t free_before = paged.free_blocks();
      paged.shift_window(enc, s, 16, 48);
      ref.shift_window(enc, 16, 48);
      CHECK(paged.length(s) == 52);
      CHECK(paged.free_blocks() == free_before + 3);
      // both continue: new tokens at positions 52, 53, ...
      const tokens y(20, 60);
      append_both(enc, paged, s, ref, y, 0, 20);
      const auto q = floats(static_cast<std::size_t>(Hq * D), 70, 1.5);
      std::vector<float> out(q.size());
      const std::ptrdiff_t seqs[] = {s};
      paged.attend(enc, seqs, tensor_view<const float>::bthd(q.data(), 1, 1, Hq, D),
                   tensor_view<float>::bthd(out.data(), 1, 1, Hq, D), o);
      CHECK(same_bits(ref_attend(enc, ref, q, 1, o), out.data()));
    }
  }
}

TEST_CASE("paged_kv_cache: sequences give their blocks back; ids are reused", "[attention][kv_cache][paged]") {
  using namespace paged_kv_cache_test;
  const auto enc = posenc::rope({.head_dim = static_cast<int>(D)});
  paged_kv_cache paged({.kv_heads = H, .head_dim = D, .block_size = 8, .num_blocks = 10});
  const std::ptrdiff_t a = paged.add_sequence(), b = paged.add_sequence();
  const tokens x(40, 80);
  paged.append(enc, a, x.kv(x.k, 0, 40), x.kv(x.v, 0, 40));  // 5 blocks
  paged.append(enc, b, x.kv(x.k, 0, 33), x.kv(x.v, 0, 33));  // 5 blocks: the pool is full
  CHECK(paged.free_blocks() == 0);
  // too few blocks: refused, nothing changed
  posenc_test::refused<posenc::config_error>([&] { paged.append(enc, b, x.kv(x.k, 0, 8), x.kv(x.v, 0, 8)); },
                                             "paged_kv_cache.num_blocks");
  CHECK(paged.length(b) == 33);
  paged.append(enc, b, x.kv(x.k, 33, 7), x.kv(x.v, 33, 7));  // fits in b's last block
  CHECK(paged.length(b) == 40);
  paged.free_sequence(a);
  CHECK(paged.free_blocks() == 5);
  posenc_test::refused<posenc::config_error>([&] { static_cast<void>(paged.length(a)); }, "paged_kv_cache.sequence");
  CHECK(paged.add_sequence() == a);
  CHECK(paged.length(a) == 0);
}

TEST_CASE("paged_kv_cache: invalid configurations and calls are refused by name", "[attention][kv_cache][paged]") {
  using namespace paged_kv_cache_test;
  using posenc::config_error;
  posenc_test::refused<config_error>([] { paged_kv_cache({.kv_heads = 0, .head_dim = 64, .num_blocks = 4}); },
                                     "paged_kv_cache.kv_heads");
  posenc_test::refused<config_error>(
      [] { paged_kv_cache({.kv_heads = 2, .head_dim = 64, .block_size = 0, .num_blocks = 4}); },
      "paged_kv_cache.block_size");
  posenc_test::refused<config_error>([] { paged_kv_cache({.kv_heads = 2, .head_dim = 64, .num_blocks = 0}); },
                                     "paged_kv_cache.num_blocks");
  posenc_test::refused<config_error>(
      [] { paged_kv_cache({.kv_heads = 2, .head_dim = 48, .num_blocks = 4, .key_type = kv_cache_type::q8_0}); },
      "paged_kv_cache.head_dim");

  const auto enc = posenc::rope({.head_dim = static_cast<int>(D)});
  paged_kv_cache paged({.kv_heads = H, .head_dim = D, .block_size = 8, .num_blocks = 8});
  const std::ptrdiff_t s = paged.add_sequence();
  const tokens x(24, 90);
  paged.append(enc, s, x.kv(x.k, 0, 24), x.kv(x.v, 0, 24));
  posenc_test::refused<config_error>([&] { paged.shift_window(enc, s, 4, 8); }, "paged_kv_cache.sink_tokens");
  posenc_test::refused<config_error>([&] { paged.shift_window(enc, s, 8, 5); }, "paged_kv_cache.evict");
  posenc_test::refused<config_error>([&] { paged.shift_window(enc, s, 8, 24); }, "paged_kv_cache.evict");
  posenc_test::refused<config_error>([&] { paged.shift_window(enc, 7, 0, 8); }, "paged_kv_cache.sequence");
  // xPos keys cannot be moved; a length-dependent schedule would go stale
  const auto xpos = posenc::xpos({.head_dim = static_cast<int>(D)});
  posenc_test::refused<config_error>([&] { paged.shift_window(xpos, s, 0, 8); }, "paged_kv_cache.shift_window");
  const auto dynamic = posenc::rope({.head_dim = static_cast<int>(D),
                                     .scaling = posenc::dynamic_ntk_scaling{.factor = 2, .original_max_position = 6}});
  posenc_test::refused<config_error>([&] { paged.append(dynamic, s, x.kv(x.k, 0, 1), x.kv(x.v, 0, 1)); },
                                     "paged_kv_cache.encoder");
  // queries: more than the sequence holds, or a batch that is not the sequence count
  std::vector<float> q(static_cast<std::size_t>(30 * Hq * D)), out(q.size());
  const std::ptrdiff_t seqs[] = {s};
  posenc_test::refused<posenc::shape_error>(
      [&] {
        paged.attend(enc, seqs, tensor_view<const float>::bthd(q.data(), 1, 30, Hq, D),
                     tensor_view<float>::bthd(out.data(), 1, 30, Hq, D));
      },
      "q.tokens");
  posenc_test::refused<posenc::shape_error>(
      [&] {
        paged.attend(enc, seqs, tensor_view<const float>::bthd(q.data(), 2, 1, Hq, D),
                     tensor_view<float>::bthd(out.data(), 2, 1, Hq, D));
      },
      "q.batch");
}
