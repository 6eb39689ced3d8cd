// posenc/core/parallel.hpp — how posenc splits work over threads: the `parallel_for` a caller hands
// in, and the default pool, created once per process and reused (docs/design.md §7: never a thread started
// per call).
//
// Every entry that can split work takes a `parallel_for`; without one it uses `default_pool()`.
// Work is always cut into the same pieces whatever the thread count, so results are bit-identical
// for 1, 2 or N threads; only who runs a piece changes. This header does not schedule across
// calls, steal work or pin threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

namespace posenc::inline v0 {

namespace detail {

/// How many fork()s this process is away from the one that started a pool: a pthread_atfork child
/// handler (registered once, before the first pool starts) counts them. A forked child has none of
/// its parent's threads, so a pool of the parent must neither hand them work nor wait for them.
inline std::atomic<unsigned>& fork_generation() noexcept {
  static std::atomic<unsigned> n{0};
  return n;
}
inline unsigned watch_forks() noexcept {
#if defined(__unix__) || defined(__APPLE__)
  static const bool registered = [] {
    ::pthread_atfork(nullptr, nullptr, [] { fork_generation().fetch_add(1, std::memory_order_relaxed); });
    return true;
  }();
  static_cast<void>(registered);
#endif
  return fork_generation().load(std::memory_order_relaxed);
}

/// A T constructed in place and destroyed only when asked (a condition variable of a pool whose
/// waiters were the parent's threads: destroying it in a forked child waits for them forever).
template <class T>
class manual_lifetime {
 public:
  manual_lifetime() { new (buf_) T(); }
  manual_lifetime(const manual_lifetime&) = delete;
  manual_lifetime& operator=(const manual_lifetime&) = delete;
  ~manual_lifetime() = default;
  T& operator*() noexcept { return *std::launder(reinterpret_cast<T*>(buf_)); }
  T* operator->() noexcept { return &**this; }
  void destroy() noexcept { (**this).~T(); }

 private:
  alignas(T) unsigned char buf_[sizeof(T)];
};

}  // namespace detail

/// A borrowed callable `void(std::ptrdiff_t)`: two pointers, no allocation. Valid only while the
/// callable it refers to lives (the duration of one parallel_for call).
class task_ref {
 public:
  template <class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, task_ref> && std::is_invocable_v<F&, std::ptrdiff_t>) task_ref(F& f)
  noexcept  // NOLINT(google-explicit-constructor): a borrowed view, like std::span
      : obj_(static_cast<void*>(std::addressof(f))),
        call_([](void* o, std::ptrdiff_t i) { (*static_cast<F*>(o))(i); }) {}

  void operator()(std::ptrdiff_t i) const { call_(obj_, i); }

 private:
  void* obj_;
  void (*call_)(void*, std::ptrdiff_t);
};

/// Runs `task(i)` for every i in [0, count) and returns when all have run. The pieces may run
/// concurrently and in any order; an exception from a piece is rethrown to the caller after the
/// others finished. An engine plugs its own scheduler in here (its thread pool, TBB, OpenMP):
///
///   posenc::parallel_for mine = [&](std::ptrdiff_t n, posenc::task_ref t) { my_pool.run(n, t); };
using parallel_for = std::function<void(std::ptrdiff_t count, task_ref task)>;

/// A fixed set of worker threads; the calling thread runs pieces too, so `size()` threads work on
/// a call in total. One call runs at a time: a call made while the pool is busy (from another
/// thread, or from inside a piece) runs its pieces inline on the caller, so nesting never
/// deadlocks. Fork-safe: in a child forked from the process that started it, the pool runs every
/// call inline and its destructor leaves the (absent) workers alone, so the child exits normally.
class thread_pool {
 public:
  /// `threads` >= 1 counts the caller; `threads - 1` workers are started here, once.
  explicit thread_pool(int threads) : forks_(detail::watch_forks()) {
    const int workers = std::max(threads, 1) - 1;
    workers_.reserve(static_cast<std::size_t>(workers));
    for (int w = 0; w < workers; ++w) workers_.emplace_back([this, w] { work_loop(w); });
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool() {
    if (forked()) {
      // The workers are the parent's: nothing to stop or join. Their std::thread handles are let go
      // and the condition variables (which count the parent's waiters) are left undestroyed.
      for (auto& t : workers_) t.detach();
      return;
    }
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_->notify_all();
    for (auto& t : workers_) t.join();
    wake_.destroy();
    finished_.destroy();
  }

  /// Threads a call uses at most, the caller included.
  int size() const noexcept { return static_cast<int>(workers_.size()) + 1; }

  /// Runs task(i) for i in [0, count) on at most `max_threads` threads (0: all of them).
  void run(std::ptrdiff_t count, task_ref task, int max_threads = 0) {
    if (count <= 0) return;
    const int limit = max_threads <= 0 ? size() : std::min(max_threads, size());
    if (forked()) {  // a forked child: the workers stayed in the parent
      for (std::ptrdiff_t i = 0; i < count; ++i) task(i);
      return;
    }
    std::unique_lock busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || inside_worker() || limit <= 1 || count == 1) {
      for (std::ptrdiff_t i = 0; i < count; ++i) task(i);
      return;
    }
    job j{task, count, limit - 1};
    int sleeping = 0;
    {
      std::lock_guard lock(mutex_);
      job_ = &j;
      generation_.fetch_add(1, std::memory_order_release);
      sleeping = sleepers_;
    }
    // A futex wake costs tens of microseconds on a VM: only sleeping workers need one; spinning
    // ones see the generation change by themselves.
    if (sleeping > 0) wake_->notify_all();
    j.drain();
    // The caller usually finishes last or close to it: spin a little before sleeping.
    spin_until([&] { return j.running.load(std::memory_order_acquire) == 0; }, caller_poll, caller_poll);
    {
      std::unique_lock lock(mutex_);
      finished_->wait(lock, [&] { return j.running.load(std::memory_order_acquire) == 0; });
      job_ = nullptr;
    }
    if (j.error) std::rethrow_exception(j.error);
  }

  /// This pool as a parallel_for (the pool must outlive it).
  parallel_for as_parallel_for(int max_threads = 0) {
    return [this, max_threads](std::ptrdiff_t n, task_ref t) { run(n, t, max_threads); };
  }

 private:
  struct job {
    task_ref task;
    std::ptrdiff_t count;
    int workers;  // workers with index < workers may join
    std::atomic<std::ptrdiff_t> next{0};
    std::atomic<int> running{0};  // incremented under the pool mutex while job_ points here
    std::mutex error_mutex{};
    std::exception_ptr error{};

    job(task_ref t, std::ptrdiff_t n, int w) : task(t), count(n), workers(w) {}

    void drain() noexcept {
      for (std::ptrdiff_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
        try {
          task(i);
        } catch (...) {
          std::lock_guard lock(error_mutex);
          if (!error) error = std::current_exception();
        }
      }
    }
  };

  static bool& inside_worker() noexcept {
    thread_local bool flag = false;
    return flag;
  }

  // How a thread waits for work it expects soon, before it sleeps on a condition variable (a futex
  // wake-up costs tens of microseconds on a VM, as much as a whole call of the work split here):
  // a worker polls for the next job 50 us with pauses only (back-to-back calls, a layer loop, find
  // it awake and on its CPU), then up to 200 us yielding between polls (a worker that shares the
  // caller's CPU must not hold it; yielding at once would hand the CPU to any other process for a
  // time slice each poll and miss the next job). The caller polls for the last pieces 50 us, never
  // yielding, then sleeps.
  static constexpr std::chrono::microseconds worker_poll{50}, worker_yield{200}, caller_poll{50};

  // Polls `done` (pausing between reads), without yielding until `poll` passed, yielding until
  // `yield` passed; true when it returned true.
  template <class Done>
  static bool spin_until(Done done, std::chrono::microseconds poll, std::chrono::microseconds yield) noexcept {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      for (int i = 0; i < 64; ++i) {
        if (done()) return true;
        pause();
      }
      const auto spent = std::chrono::steady_clock::now() - start;
      if (spent >= std::max(poll, yield)) return done();
      if (spent >= poll) std::this_thread::yield();
    }
  }

  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }

  void work_loop(int index) {
    inside_worker() = true;
    std::uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, worker_poll, worker_yield);
      job* j = nullptr;
      {
        std::unique_lock lock(mutex_);
        if (generation_.load(std::memory_order_relaxed) == seen && !stop_) {
          ++sleepers_;
          wake_->wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
          --sleepers_;
        }
        if (stop_) return;
        seen = generation_.load(std::memory_order_relaxed);
        if (job_ == nullptr || index >= job_->workers) continue;
        j = job_;
        j->running.fetch_add(1, std::memory_order_relaxed);
      }
      j->drain();
      if (j->running.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // j may be gone once running reads 0: only the pool is touched from here on.
        std::lock_guard lock(mutex_);
        finished_->notify_all();
      }
    }
  }

  [[nodiscard]] bool forked() const noexcept {
    return detail::fork_generation().load(std::memory_order_relaxed) != forks_;
  }

  unsigned forks_;  // fork_generation() when the workers started
  std::mutex busy_;
  std::mutex mutex_;
  detail::manual_lifetime<std::condition_variable> wake_;
  detail::manual_lifetime<std::condition_variable> finished_;
  std::atomic<std::uint64_t> generation_{0};  // written under mutex_, polled without it
  int sleepers_ = 0;                          // workers waiting on wake_ (guarded by mutex_)
  job* job_ = nullptr;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

/// Threads the default pool has: POSENC_NUM_THREADS when set to a positive integer, else
/// std::thread::hardware_concurrency() (at least 1).
inline int default_thread_count() noexcept {
  if (const char* env = std::getenv("POSENC_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= 1024) return static_cast<int>(n);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// The process-wide pool, started on first use and joined at exit.
inline thread_pool& default_pool() {
  static thread_pool pool(default_thread_count());
  return pool;
}

/// Runs `fn(i)` for i in [0, count) through `pf` when given, else through the default pool.
template <class F>
inline void run_parallel(const parallel_for& pf, std::ptrdiff_t count, F&& fn) {
  task_ref t(fn);
  if (pf)
    pf(count, t);
  else
    default_pool().run(count, t);
}

}  // namespace posenc::inline v0
