// examples/05_kv_cache_decode.cpp — prefill then token-by-token decode through a KV cache.
//
// Keys are rotated once, when they enter the cache; each decode step rotates only the new query.
// The last decode step must equal attention over the whole sequence computed at once.
#include <cmath>
#include <cstdio>
#include <vector>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/rope/rope.hpp>

int main() {
  constexpr std::ptrdiff_t T = 10, prompt = 6, H = 2, D = 16;
  const posenc::rope rope(posenc::rope_config{.head_dim = D, .theta = 10000});
  std::vector<double> q(T * H * D), k(q.size()), v(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.37 * double(i) + 0.1);
    k[i] = std::cos(0.23 * double(i) + 0.3);
    v[i] = std::sin(0.05 * double(i));
  }
  using cview = posenc::tensor_view<const double>;
  auto rows = [&](const std::vector<double>& x, std::ptrdiff_t t0, std::ptrdiff_t n) {
    return cview::thd(x.data() + t0 * H * D, n, H, D);
  };

  posenc::kv_cache<double> cache(posenc::kv_cache_config{.kv_heads = H, .head_dim = D, .capacity = T});
  std::vector<std::int64_t> pos(T);
  for (std::ptrdiff_t t = 0; t < T; ++t) pos[t] = t;
  (void)cache.append(rope, rows(k, 0, prompt), rows(v, 0, prompt), std::span(pos).first(prompt));
  std::vector<double> step(H * D);
  for (std::ptrdiff_t t = prompt; t < T; ++t) {
    (void)cache.append(rope, rows(k, t, 1), rows(v, t, 1), std::span(pos).subspan(t, 1));
    cache.attend(rope, rows(q, t, 1), posenc::tensor_view<double>::thd(step.data(), 1, H, D),
                 std::span(pos).subspan(t, 1), {.causal = true});
  }

  std::vector<double> full(T * H * D);
  posenc::sdpa(rows(q, 0, T), rows(k, 0, T), rows(v, 0, T), posenc::tensor_view<double>::thd(full.data(), T, H, D),
               rope, {.causal = true});
  double err = 0;
  for (std::ptrdiff_t i = 0; i < H * D; ++i) err = std::fmax(err, std::fabs(step[i] - full[(T - 1) * H * D + i]));
  std::printf("cache length %td, max |decode - full| = %.3g\n", cache.length(), err);
  return err < 1e-12 ? 0 : 1;
}
