// tests/threads/threads_test.cpp — several threads share one encoder, one cos_sin_table, the ISA
// dispatch cache and default_pool(): results equal the single-threaded ones. Meant to run under
// ThreadSanitizer (the `tsan` preset builds only this test); in other builds it is a plain test.
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/cos_sin_table.hpp>
#include <posenc/rope/rope.hpp>

namespace {

constexpr int kThreads = 4;
constexpr std::ptrdiff_t B = 1, T = 24, H = 2, D = 16;

std::vector<float> input(int seed) {
  std::vector<float> x(static_cast<std::size_t>(B * T * H * D));
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(seed)) % 13) / 13.0f - 0.5f;
  return x;
}

std::vector<std::int64_t> positions(int seed) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(B * T));
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int64_t>(i) * 3 + seed;
  return p;
}

/// What one thread does with the shared objects; returns everything it computed.
std::vector<float> work(const posenc::rope& r, const posenc::cos_sin_table<float>& table,
                        const posenc::combined<posenc::rope, posenc::alibi>& enc, int seed) {
  auto x = input(seed), y = input(seed);
  const auto p = positions(seed);
  r.transform_q(posenc::tensor_view<float>::bthd(x.data(), B, T, H, D), p);    // dispatch cache, on-the-fly rows
  r.rotate(posenc::tensor_view<float>::bthd(y.data(), B, T, H, D), p, table);  // shared table rows
  std::vector<float> out(x.size());
  using CV = posenc::tensor_view<const float>;
  posenc::sdpa(CV::bthd(x.data(), B, T, H, D), CV::bthd(y.data(), B, T, H, D), CV::bthd(y.data(), B, T, H, D),
               posenc::tensor_view<float>::bthd(out.data(), B, T, H, D), enc,
               {.causal = true, .query_positions = p, .key_positions = p});
  x.insert(x.end(), y.begin(), y.end());
  x.insert(x.end(), out.begin(), out.end());
  return x;
}

}  // namespace

TEST_CASE("threads share one encoder, one cos_sin_table, the dispatch cache and default_pool", "[threads]") {
  const posenc::rope r({.head_dim = D, .theta = 1e4});
  const posenc::cos_sin_table<float> table(r.base_frequencies(), 0, 64);
  const auto enc = posenc::combine(r, posenc::alibi({.num_heads = H}));

  std::vector<std::vector<float>> expect(kThreads);
  for (int s = 0; s < kThreads; ++s) expect[static_cast<std::size_t>(s)] = work(r, table, enc, s);

  posenc::kernels::reset_isa();  // every thread races to fill the dispatch cache on its first rotation
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::thread> threads;
  for (int s = 0; s < kThreads; ++s)
    threads.emplace_back([&, s] { got[static_cast<std::size_t>(s)] = work(r, table, enc, s); });
  for (auto& t : threads) t.join();
  for (int s = 0; s < kThreads; ++s) CHECK(got[static_cast<std::size_t>(s)] == expect[static_cast<std::size_t>(s)]);

  // default_pool(): several threads submit work at once (one runs on the pool, the others inline),
  // and each piece uses the shared encoder and table.
  std::vector<std::vector<float>> pooled(kThreads * 4);
  threads.clear();
  for (int s = 0; s < kThreads; ++s)
    threads.emplace_back([&, s] {
      posenc::run_parallel(posenc::default_pool().as_parallel_for(), 4, [&](std::ptrdiff_t i) {
        pooled[static_cast<std::size_t>(s * 4 + i)] = work(r, table, enc, s);
      });
    });
  for (auto& t : threads) t.join();
  for (int s = 0; s < kThreads; ++s)
    for (int i = 0; i < 4; ++i)
      CHECK(pooled[static_cast<std::size_t>(s * 4 + i)] == expect[static_cast<std::size_t>(s)]);
}
