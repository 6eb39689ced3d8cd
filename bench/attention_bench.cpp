// bench/attention_bench.cpp — cost of the reference attention per encoder hook and of a KV-cache
// decode step (append + attend), including a schedule switch that re-rotates the cache.
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/rope/rope.hpp>

namespace {

constexpr std::ptrdiff_t kHeads = 8, kKvHeads = 2, kDim = 64;

std::vector<float> filled(std::size_t n, float seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((static_cast<double>((i * 2654435761u) % 1000) / 500.0 - 1.0) * seed);
  return v;
}

template <class E>
void prefill(benchmark::State& state, const E& enc) {
  const auto S = static_cast<std::ptrdiff_t>(state.range(0));
  auto q = filled(static_cast<std::size_t>(S * kHeads * kDim), 1),
       k = filled(static_cast<std::size_t>(S * kKvHeads * kDim), 0.5f),
       v = filled(static_cast<std::size_t>(S * kKvHeads * kDim), 0.25f), out = std::vector<float>(q.size());
  using view = posenc::tensor_view<float>;
  for (auto _ : state) {
    posenc::sdpa(view::thd(q.data(), S, kHeads, kDim), view::thd(k.data(), S, kKvHeads, kDim),
                 view::thd(v.data(), S, kKvHeads, kDim), view::thd(out.data(), S, kHeads, kDim), enc, {.causal = true});
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * S * (S + 1) / 2 * kHeads);  // (query, key, head) scores
}

void BM_sdpa_nope(benchmark::State& s) {
  prefill(s, posenc::no_position{});
}
void BM_sdpa_rope(benchmark::State& s) {
  prefill(s, posenc::rope({.head_dim = kDim}));
}
void BM_sdpa_rope_alibi(benchmark::State& s) {
  prefill(s, posenc::combine(posenc::rope({.head_dim = kDim}), posenc::alibi({.num_heads = kHeads})));
}

/// One decode step at cache length `range(0)` (append one token, attend).
void BM_decode_step(benchmark::State& state) {
  const auto L = static_cast<std::ptrdiff_t>(state.range(0));
  const posenc::rope enc({.head_dim = kDim});
  posenc::kv_cache<float> cache({.kv_heads = kKvHeads, .head_dim = kDim, .capacity = L + 1});
  auto k = filled(static_cast<std::size_t>(L * kKvHeads * kDim), 0.5f), v = filled(k.size(), 0.25f);
  using view = posenc::tensor_view<const float>;
  (void)cache.append(enc, view::thd(k.data(), L, kKvHeads, kDim), view::thd(v.data(), L, kKvHeads, kDim),
                     posenc::arange_positions(L));
  auto q1 = filled(kHeads * kDim, 1), k1 = filled(kKvHeads * kDim, 0.5f), v1 = filled(kKvHeads * kDim, 0.25f);
  std::vector<float> out(q1.size());
  const std::vector<std::int64_t> p{L};
  for (auto _ : state) {
    (void)cache.append(enc, view::thd(k1.data(), 1, kKvHeads, kDim), view::thd(v1.data(), 1, kKvHeads, kDim), p);
    cache.attend(enc, view::thd(q1.data(), 1, kHeads, kDim),
                 posenc::tensor_view<float>::thd(out.data(), 1, kHeads, kDim), p, {.causal = true});
    cache.truncate(L);
    benchmark::DoNotOptimize(out.data());
  }
}

/// Re-rotating a cache of `range(0)` tokens after a dynamic-NTK switch (the cost of the exact policy).
void BM_rerotate_cache(benchmark::State& state) {
  const auto L = state.range(0);
  const posenc::rope enc(
      {.head_dim = kDim, .scaling = posenc::dynamic_ntk_scaling{.factor = 2, .original_max_position = 16}});
  auto k = filled(static_cast<std::size_t>(L * kKvHeads * kDim), 0.5f);
  const auto pos = posenc::arange_positions(L);
  const auto from = enc.at(L), to = enc.at(L + 1);
  const auto kv = posenc::tensor_view<float>::thd(k.data(), L, kKvHeads, kDim);
  for (auto _ : state) {
    enc.rerotate(kv, pos, from, to);
    benchmark::DoNotOptimize(k.data());
  }
  state.SetItemsProcessed(state.iterations() * L * kKvHeads);
}

}  // namespace

BENCHMARK(BM_sdpa_nope)->Arg(64)->Arg(256);
BENCHMARK(BM_sdpa_rope)->Arg(64)->Arg(256);
BENCHMARK(BM_sdpa_rope_alibi)->Arg(64)->Arg(256);
BENCHMARK(BM_decode_step)->Arg(256)->Arg(2048);
BENCHMARK(BM_rerotate_cache)->Arg(256)->Arg(2048);
