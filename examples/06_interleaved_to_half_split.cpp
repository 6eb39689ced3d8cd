// examples/06_interleaved_to_half_split.cpp — convert interleaved (GPT-J / Meta) q/k weights to
// half-split (HF Llama) rows and check that attention scores do not change.
//
// W_q and W_k rows are permuted within each head (docs/spec.md §7.3); q.k is invariant because the same
// permutation is applied to both sides. Under GQA, permute K with the number of KV heads.
#include <cmath>
#include <cstdio>
#include <vector>

#include <posenc/rope/permute.hpp>
#include <posenc/rope/rope.hpp>

int main() {
  constexpr int H = 2, D = 8, in = 5;
  const auto perm = posenc::interleaved_to_half_split_rows(D, D, H);  // new row r = old row perm[r]
  std::vector<double> wq(H * D * in), wk(wq.size()), x(in);
  for (std::size_t i = 0; i < wq.size(); ++i) wq[i] = std::sin(0.3 * double(i)), wk[i] = std::cos(0.7 * double(i));
  for (int i = 0; i < in; ++i) x[i] = 0.5 + i;
  auto project = [&](const std::vector<double>& w, const std::vector<std::int64_t>* p) {
    std::vector<double> y(H * D, 0.0);
    for (int r = 0; r < H * D; ++r) {
      const std::int64_t src = p ? (*p)[r] : r;
      for (int c = 0; c < in; ++c) y[r] += w[src * in + c] * x[c];
    }
    return y;
  };
  auto score = [&](posenc::kernels::pairing layout, const std::vector<std::int64_t>* p) {
    const posenc::rope r(posenc::rope_config{.head_dim = D, .layout = layout});
    auto q = project(wq, p), k = project(wk, p);
    const std::int64_t pq[] = {9}, pk[] = {4};
    r.transform_q(posenc::tensor_view<double>::thd(q.data(), 1, H, D), pq);
    r.transform_k(posenc::tensor_view<double>::thd(k.data(), 1, H, D), pk);
    double s = 0;
    for (int i = 0; i < D; ++i) s += q[i] * k[i];  // head 0
    return s;
  };
  const double a = score(posenc::kernels::pairing::interleaved, nullptr);
  const double b = score(posenc::kernels::pairing::half_split, &perm);
  std::printf("interleaved checkpoint: %.12f, permuted to half-split: %.12f\n", a, b);
  return std::fabs(a - b) < 1e-12 ? 0 : 1;
}
