// Training through posenc's attention: a T5 bias table learned by gradient descent.
//
// A teacher (a T5 table with a known pattern) produces the attention outputs to match; a student
// starts from a zero table. Each step runs posenc::attention forward, keeping every row's
// log-sum-exp, and posenc::attention_backward, which hands back the gradient of the student's table
// (as it does for Shaw's tables, and through RoPE for dq, dk). Gradient descent on the squared error
// (Adagrad steps) then moves the student's table to the teacher's: up to one constant per head, which
// the softmax cannot see. `posenc lab` trains whole language models this way (docs/training.md).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <posenc/posenc.hpp>

int main() {
  constexpr std::ptrdiff_t S = 48, H = 2, D = 16, buckets = 16;
  const posenc::t5_bias_config cfg{.num_buckets = buckets, .max_distance = 32, .bidirectional = false, .num_heads = H};
  std::uint64_t state = 42;  // a small LCG: the same inputs on every platform
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(static_cast<double>(state >> 40) * 0x1p-24 * 2.0 - 1.0);
  };
  std::vector<float> q(S * H * D), k(S * H * D), v(S * H * D);
  for (auto* x : {&q, &k, &v})
    for (float& e : *x) e = uniform();
  const auto view = [&](std::vector<float>& x) { return posenc::tensor_view<float>::bthd(x.data(), 1, S, H, D); };

  // The teacher: head 0 prefers recent keys, head 1 distant ones. Table layout [bucket][head].
  std::vector<float> teacher(buckets * H);
  for (std::ptrdiff_t b = 0; b < buckets; ++b) {
    teacher[static_cast<std::size_t>(b * H)] = 0.0f - 0.3f * static_cast<float>(b);
    teacher[static_cast<std::size_t>(b * H + 1)] = 0.2f * static_cast<float>(b);
  }
  std::vector<float> target(S * H * D);
  posenc::attention(view(q), view(k), view(v), view(target), posenc::t5_bias(cfg, teacher), {.causal = true});

  std::vector<float> table(buckets * H, 0.0f), out(S * H * D), lse(H * S), dout(S * H * D), dq(S * H * D),
      dk(S * H * D), dv(S * H * D);
  std::vector<double> g2(table.size(), 0.0);  // Adagrad: each entry's summed squared gradients
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    const posenc::t5_bias student(cfg, table);
    posenc::attention(view(q), view(k), view(v), view(out), student, {.causal = true}, {.log_sum_exp = lse});
    double loss = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
      dout[i] = out[i] - target[i];
      loss += 0.5 * static_cast<double>(dout[i]) * dout[i];
    }
    std::vector<double> grad(table.size(), 0.0);
    posenc::attention_backward(view(q), view(k), view(v), view(out), lse, view(dout), view(dq), view(dk), view(dv),
                               student, {.causal = true}, {.encoder = grad});
    for (std::size_t i = 0; i < table.size(); ++i) {
      g2[i] += grad[i] * grad[i];
      table[i] -= static_cast<float>(0.3 * grad[i] / (std::sqrt(g2[i]) + 1e-12));
    }
    if (step == 0) first = loss;
    last = loss;
  }
  std::printf("squared error of the student: %.3g at the start, %.3g after 200 steps\n", first, last);
  std::printf("bucket:      ");
  for (std::ptrdiff_t b = 0; b < buckets; b += 3) std::printf(" %6td", b);
  for (std::ptrdiff_t h = 0; h < H; ++h) {
    std::printf("\nhead %td teacher", h);
    for (std::ptrdiff_t b = 0; b < buckets; b += 3) std::printf(" %6.2f", teacher[static_cast<std::size_t>(b * H + h)]);
    std::printf("\n       student");  // shifted to the teacher's bucket 0: the softmax ignores a constant
    const float shift = teacher[static_cast<std::size_t>(h)] - table[static_cast<std::size_t>(h)];
    for (std::ptrdiff_t b = 0; b < buckets; b += 3)
      std::printf(" %6.2f", table[static_cast<std::size_t>(b * H + h)] + shift);
  }
  std::printf("\n");
  return last < first * 1e-2 ? 0 : 1;
}
