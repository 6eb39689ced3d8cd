// tests/threads/kv_cache_threads_test.cpp — the concurrency kv_cache.hpp allows: several threads
// attend over one cache at once (each with its own out and workspace, through the default pool and
// inline), every result equal to the single-threaded one; appends between rounds, serialised by
// the caller. Meant to run under ThreadSanitizer (the `tsan` preset builds tests/threads).
#include <cstdint>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/rope/rope.hpp>

TEST_CASE("kv_cache: concurrent attend over one cache, appends between rounds", "[threads][kv_cache]") {
  constexpr std::ptrdiff_t Hkv = 2, Hq = 4, D = 16, step = 9;
  const auto enc = posenc::combine(posenc::rope({.head_dim = D}), posenc::alibi({.num_heads = Hq}));
  posenc::kv_cache<float> cache({.batch = 1, .kv_heads = Hkv, .head_dim = D});
  using cv = posenc::tensor_view<const float>;
  std::vector<float> q(static_cast<std::size_t>(Hq * D));
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 7) / 7.0f - 0.4f;
  for (int round = 0; round < 3; ++round) {
    // append (alone): step tokens
    std::vector<float> kv(static_cast<std::size_t>(step * Hkv * D));
    for (std::size_t i = 0; i < kv.size(); ++i)
      kv[i] = static_cast<float>((i + 3 * static_cast<std::size_t>(round)) % 11) / 11.0f - 0.5f;
    std::vector<std::int64_t> pos(step);
    for (std::ptrdiff_t t = 0; t < step; ++t) pos[static_cast<std::size_t>(t)] = round * step + t;
    (void)cache.append(enc, cv::bthd(kv.data(), 1, step, Hkv, D), cv::bthd(kv.data(), 1, step, Hkv, D),
                       std::span<const std::int64_t>(pos));
    const std::vector<std::int64_t> qp{(round + 1) * step};
    auto attend = [&](bool inline_exec, posenc::attention_workspace* ws) {
      std::vector<float> out(static_cast<std::size_t>(Hq * D));
      posenc::fast_attention_options f{.workspace = ws};
      if (inline_exec)
        f.executor = [](std::ptrdiff_t n, posenc::task_ref t) {
          for (std::ptrdiff_t i = 0; i < n; ++i) t(i);
        };
      cache.attend(enc, cv::bthd(q.data(), 1, 1, Hq, D), posenc::tensor_view<float>::bthd(out.data(), 1, 1, Hq, D), qp,
                   {.causal = true}, f);
      return out;
    };
    const auto want = attend(true, nullptr);
    constexpr int threads = 4;
    std::vector<std::vector<float>> got(threads);
    std::vector<posenc::attention_workspace> ws(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int rep = 0; rep < 5; ++rep)
          got[static_cast<std::size_t>(t)] = attend(t % 2 == 0, t < 2 ? &ws[static_cast<std::size_t>(t)] : nullptr);
      });
    for (auto& th : pool) th.join();
    for (const auto& g : got) REQUIRE(g == want);
  }
}
