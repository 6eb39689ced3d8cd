// The default pool and the parallel_for contract: every index runs exactly once, exceptions reach
// the caller, nested and concurrent calls run inline instead of deadlocking, and the pool is reused.
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/core/parallel.hpp>

TEST_CASE("thread_pool runs every index exactly once", "[parallel]") {
  for (int threads : {1, 2, 3, 7}) {
    posenc::thread_pool pool(threads);
    REQUIRE(pool.size() == threads);
    for (std::ptrdiff_t n : {0, 1, 2, 5, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
      auto body = [&](std::ptrdiff_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); };
      pool.run(n, body);
      for (auto& h : hits) REQUIRE(h.load() == 1);
    }
  }
}

TEST_CASE("thread_pool uses its workers and honours max_threads", "[parallel]") {
  posenc::thread_pool pool(3);
  std::atomic<int> inside{0}, most{0};
  auto body = [&](std::ptrdiff_t) {
    const int now = inside.fetch_add(1) + 1;
    for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    inside.fetch_sub(1);
  };
  pool.run(40, body, 2);
  CHECK(most.load() <= 2);
  most = 0;
  pool.run(1, body, 2);  // a single piece runs inline
  CHECK(most.load() == 1);
}

TEST_CASE("thread_pool rethrows the first exception after all pieces ran", "[parallel]") {
  posenc::thread_pool pool(2);
  std::atomic<int> ran{0};
  auto body = [&](std::ptrdiff_t i) {
    ran.fetch_add(1);
    if (i == 3) throw std::runtime_error("piece 3");
  };
  REQUIRE_THROWS_WITH(pool.run(10, body), "piece 3");
  CHECK(ran.load() == 10);
  std::atomic<int> again{0};
  auto ok = [&](std::ptrdiff_t) { again.fetch_add(1); };
  pool.run(10, ok);  // still usable
  CHECK(again.load() == 10);
}

TEST_CASE("nested and concurrent calls run inline", "[parallel]") {
  posenc::thread_pool pool(2);
  std::atomic<int> total{0};
  auto inner = [&](std::ptrdiff_t) { total.fetch_add(1); };
  auto outer = [&](std::ptrdiff_t) { pool.run(4, inner); };
  pool.run(6, outer);
  CHECK(total.load() == 24);

  total = 0;
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r) pool.run(8, inner);
    });
  for (auto& t : callers) t.join();
  CHECK(total.load() == 4 * 50 * 8);
}

TEST_CASE("run_parallel takes a caller's parallel_for or the default pool", "[parallel]") {
  int calls = 0;
  posenc::parallel_for mine = [&](std::ptrdiff_t n, posenc::task_ref t) {
    ++calls;
    for (std::ptrdiff_t i = n; i-- > 0;) t(i);
  };
  std::vector<int> seen;
  posenc::run_parallel(mine, 3, [&](std::ptrdiff_t i) { seen.push_back(static_cast<int>(i)); });
  CHECK(calls == 1);
  CHECK(seen == std::vector<int>{2, 1, 0});

  std::atomic<long> sum{0};
  posenc::run_parallel({}, 100, [&](std::ptrdiff_t i) { sum.fetch_add(i); });
  CHECK(sum.load() == 4950);
  CHECK(&posenc::default_pool() == &posenc::default_pool());
  CHECK(posenc::default_pool().size() >= 1);
}
