// examples/01_rope_basic.cpp — RoPE on a [T, H, D] buffer, in place.
//
// Rotates queries and keys of 8 tokens x 4 heads x 64 dims (Llama's half-split layout) and checks
// the property RoPE exists for: the score <q_i, k_j> depends only on the distance i - j.
#include <cmath>
#include <cstdio>
#include <vector>

#include <posenc/posenc.hpp>
#include <posenc/rope/rope.hpp>

int main() {
  constexpr std::ptrdiff_t T = 8, H = 4, D = 64;
  const posenc::rope rope(posenc::rope_config{.head_dim = D, .theta = 10000});

  // The same q and k vector at every token, so any difference between scores comes from positions.
  std::vector<float> q(T * H * D), k(T * H * D);
  for (std::size_t i = 0; i < q.size(); ++i) {
    q[i] = std::sin(0.37f * static_cast<float>(i % D) + 0.1f);
    k[i] = std::cos(0.23f * static_cast<float>(i % D) + 0.3f);
  }
  std::vector<std::int64_t> pos(T);
  for (std::ptrdiff_t t = 0; t < T; ++t) pos[t] = 100 + t;  // any positions, e.g. after a prompt

  rope.transform_q(posenc::tensor_view<float>::thd(q.data(), T, H, D), pos);
  rope.transform_k(posenc::tensor_view<float>::thd(k.data(), T, H, D), pos);

  auto score = [&](std::ptrdiff_t i, std::ptrdiff_t j) {
    double s = 0;
    for (std::ptrdiff_t d = 0; d < D; ++d) s += double(q[(i * H) * D + d]) * double(k[(j * H) * D + d]);
    return s;
  };
  // Distance 3 seen from different places must score the same (float rounding aside).
  const double a = score(3, 0), b = score(7, 4);
  std::printf("score(3,0) = %.6f, score(7,4) = %.6f\n", a, b);
  return std::fabs(a - b) < 1e-4 ? 0 : 1;
}
