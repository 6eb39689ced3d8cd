// examples/02_alibi_scores.cpp — ALiBi biases added into a score matrix.
//
// Builds the [H, T, T] bias for 6 heads (not a power of two: the slopes interleave) and adds it to
// zero logits, as an engine would before the softmax.
#include <cmath>
#include <cstdio>
#include <vector>

#include <posenc/encoders/alibi.hpp>

int main() {
  constexpr std::ptrdiff_t H = 6, T = 5;
  const posenc::alibi alibi(posenc::alibi_config{.num_heads = H});
  std::vector<double> scores(H * T * T, 0.0);
  for (std::ptrdiff_t h = 0; h < H; ++h)
    for (std::ptrdiff_t i = 0; i < T; ++i)
      for (std::ptrdiff_t j = 0; j <= i; ++j) scores[(h * T + i) * T + j] += alibi.bias(h, i, j);

  for (std::ptrdiff_t h = 0; h < H; ++h) std::printf("head %td slope %.6g\n", h, alibi.slopes()[h]);
  // docs/spec.md §6.1: 6 heads -> 2^-2, 2^-4, 2^-6, 2^-8, 2^-1, 2^-3.
  const double expected[] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  for (std::ptrdiff_t h = 0; h < H; ++h)
    if (alibi.slopes()[h] != expected[h]) return 1;
  // Head 4 (slope 1/2), query 4, key 0: bias -2.
  return scores[(4 * T + 4) * T + 0] == -2.0 ? 0 : 1;
}
