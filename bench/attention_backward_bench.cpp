// bench/attention_backward_bench.cpp — posenc::attention_backward against its own forward: causal
// prefill S x S, one head of D = 128, one thread (the target is a backward within 2.5x the forward,
// FlashAttention-2's ratio: five products per tile against two). Counter: GFLOPs of the useful
// products (forward 4 S^2 D, backward 10 S^2 D, halved for causal); the third benchmark alternates
// the two and reports the ratio of their times.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/no_position.hpp>

#include "shapes.hpp"

namespace {

std::vector<float> filled(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>(x >> 8) / 8388608.0f - 1.0f;
  }
  return v;
}

constexpr std::ptrdiff_t kD = 128;

struct problem {
  std::ptrdiff_t S;
  std::vector<float> q, k, v, out, dout, lse, dq, dk, dv;
  explicit problem(std::ptrdiff_t s)
      : S(s),
        q(filled(static_cast<std::size_t>(s * kD), 1)),
        k(filled(q.size(), 2)),
        v(filled(q.size(), 3)),
        out(q.size()),
        dout(filled(q.size(), 4)),
        lse(static_cast<std::size_t>(s)),
        dq(q.size()),
        dk(q.size()),
        dv(q.size()) {}
  using cv = posenc::tensor_view<const float>;
  using mv = posenc::tensor_view<float>;
  void forward(const posenc::fast_attention_options& f) {
    posenc::fast_attention_options g = f;
    g.log_sum_exp = lse;
    posenc::attention(cv::thd(q.data(), S, 1, kD), cv::thd(k.data(), S, 1, kD), cv::thd(v.data(), S, 1, kD),
                      mv::thd(out.data(), S, 1, kD), posenc::no_position{}, {.causal = true}, g);
  }
  void backward(const posenc::fast_attention_options& f) {
    posenc::attention_backward(cv::thd(q.data(), S, 1, kD), cv::thd(k.data(), S, 1, kD), cv::thd(v.data(), S, 1, kD),
                               cv::thd(out.data(), S, 1, kD), std::span<const float>(lse),
                               cv::thd(dout.data(), S, 1, kD), mv::thd(dq.data(), S, 1, kD),
                               mv::thd(dk.data(), S, 1, kD), mv::thd(dv.data(), S, 1, kD), posenc::no_position{},
                               {.causal = true}, {}, f);
  }
};

posenc::thread_pool& one_thread() {
  static posenc::thread_pool pool(1);
  return pool;
}

void BM_causal_forward_1thread(benchmark::State& state) {
  problem p(state.range(0));
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = one_thread().as_parallel_for(), .workspace = &ws};
  for (auto _ : state) {
    p.forward(f);
    benchmark::DoNotOptimize(p.out.data());
  }
  const double flops = 4.0 * static_cast<double>(p.S) * static_cast<double>(p.S) * kD / 2;
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}

void BM_causal_backward_1thread(benchmark::State& state) {
  problem p(state.range(0));
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = one_thread().as_parallel_for(), .workspace = &ws};
  p.forward(f);
  for (auto _ : state) {
    p.backward(f);
    benchmark::DoNotOptimize(p.dq.data());
  }
  const double flops = 10.0 * static_cast<double>(p.S) * static_cast<double>(p.S) * kD / 2;
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}

// Forward and backward alternated in one loop, each call timed: the ratio of their totals (and of
// their fastest calls) is immune to the machine's speed drifting between two separate benchmarks.
void BM_causal_backward_over_forward_1thread(benchmark::State& state) {
  problem p(state.range(0));
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = one_thread().as_parallel_for(), .workspace = &ws};
  p.forward(f);
  p.backward(f);
  using clock = std::chrono::steady_clock;
  double fwd = 0, bwd = 0, fwd_min = 1e30, bwd_min = 1e30;
  for (auto _ : state) {
    const auto t0 = clock::now();
    p.forward(f);
    benchmark::DoNotOptimize(p.out.data());
    const auto t1 = clock::now();
    p.backward(f);
    benchmark::DoNotOptimize(p.dq.data());
    const auto t2 = clock::now();
    const double a = std::chrono::duration<double>(t1 - t0).count(), b = std::chrono::duration<double>(t2 - t1).count();
    fwd += a, bwd += b, fwd_min = std::min(fwd_min, a), bwd_min = std::min(bwd_min, b);
  }
  state.counters["fwd_ms"] = 1e3 * fwd / static_cast<double>(state.iterations());
  state.counters["bwd_ms"] = 1e3 * bwd / static_cast<double>(state.iterations());
  state.counters["ratio"] = bwd / fwd;
  state.counters["ratio_min"] = bwd_min / fwd_min;
}
}  // namespace

// Debug builds (the dev preset's smoke run) use a small shape; release builds 4096.
#if defined(NDEBUG)
constexpr std::int64_t kS = 4096;
#else
constexpr std::int64_t kS = 256;
#endif

BENCHMARK(BM_causal_forward_1thread)->Arg(kS)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_causal_backward_1thread)->Arg(kS)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_causal_backward_over_forward_1thread)->Arg(kS)->UseRealTime()->Unit(benchmark::kMillisecond);
