// tests/threads/fork_test.cpp — a child forked after the default pool started (and went idle) runs
// posenc::attention and exits normally: the pool runs the child's calls inline and its destructor
// does not wait for the parent's workers (core/parallel.hpp).
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/no_position.hpp>

namespace {

// One prefill-sized call through the default pool (several work items, so the workers take part);
// true when every output is finite.
bool attend_once() {
  constexpr std::ptrdiff_t S = 96, H = 4, D = 32;
  std::vector<float> q(static_cast<std::size_t>(S * H * D)), out(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  using cv = posenc::tensor_view<const float>;
  posenc::attention(cv::bthd(q.data(), 1, S, H, D), cv::bthd(q.data(), 1, S, H, D), cv::bthd(q.data(), 1, S, H, D),
                    posenc::tensor_view<float>::bthd(out.data(), 1, S, H, D), posenc::no_position{}, {.causal = true});
  for (float x : out)
    if (!std::isfinite(x)) return false;
  return true;
}

}  // namespace

TEST_CASE("a forked child runs attention through the default pool and exits", "[threads][fork]") {
  REQUIRE(posenc::default_pool().size() >= 1);
  REQUIRE(attend_once());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the workers stop spinning and sleep
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) std::exit(attend_once() ? 0 : 3);  // static destructors (the default pool's) run here
  int status = 0;
  pid_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done == 0) {  // hung: do not leave it behind
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  REQUIRE(done == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(attend_once());  // the parent's pool still works
}

TEST_CASE("a thread_pool made in the parent is inline and destructible in a forked child", "[threads][fork]") {
  posenc::thread_pool pool(3);
  std::vector<int> hits(64);
  auto mark = [&](std::ptrdiff_t i) { ++hits[static_cast<std::size_t>(i)]; };
  pool.run(64, posenc::task_ref(mark));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::vector<int> child(64);
    auto mark_child = [&](std::ptrdiff_t i) { ++child[static_cast<std::size_t>(i)]; };
    pool.run(64, posenc::task_ref(mark_child));
    pool.~thread_pool();  // the destructor in the child, then leave without running it again
    for (int x : child)
      if (x != 1) ::_exit(3);
    ::_exit(0);
  }
  int status = 0;
  pid_t done = 0;
  const auto start = std::chrono::steady_clock::now();
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  REQUIRE(done == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  for (int x : hits) REQUIRE(x == 1);
}
