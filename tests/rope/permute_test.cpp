// Layout equivalence: interleaved rotation with the original weights == half-split rotation with
// permuted weights (full, partial, offset, GQA with Hq != Hkv), and the permutation helpers.
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/rope/permute.hpp>
#include <posenc/rope/rope.hpp>

#include "support/check.hpp"

using namespace posenc;

namespace {

struct shape {
  int D, R, offset, Hq, Hkv, in, tokens;
};

// y[t][row] = sum_i W[row][i] * x[t][i]
std::vector<double> project(const std::vector<double>& W, const std::vector<double>& x, int rows, int in, int tokens) {
  std::vector<double> y(static_cast<std::size_t>(rows * tokens), 0.0);
  for (int t = 0; t < tokens; ++t)
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < in; ++i)
        y[static_cast<std::size_t>(t * rows + r)] +=
            W[static_cast<std::size_t>(r * in + i)] * x[static_cast<std::size_t>(t * in + i)];
  return y;
}

// scores[h][i][j] with GQA mapping h -> h / (Hq / Hkv)
std::vector<double> scores(const std::vector<double>& q, const std::vector<double>& k, const shape& s) {
  std::vector<double> out;
  const int g = s.Hq / s.Hkv;
  for (int h = 0; h < s.Hq; ++h)
    for (int i = 0; i < s.tokens; ++i)
      for (int j = 0; j < s.tokens; ++j) {
        double acc = 0;
        for (int d = 0; d < s.D; ++d)
          acc += q[static_cast<std::size_t>((i * s.Hq + h) * s.D + d)] *
                 k[static_cast<std::size_t>((j * s.Hkv + h / g) * s.D + d)];
        out.push_back(acc);
      }
  return out;
}

std::vector<double> run(const shape& s, kernels::pairing layout, const std::vector<double>& Wq,
                        const std::vector<double>& Wk, const std::vector<double>& x,
                        const std::vector<std::int64_t>& pos) {
  const rope enc(
      rope_config{.head_dim = s.D, .rotary_dim = s.R, .rotary_offset = s.offset, .theta = 1e4, .layout = layout});
  auto q = project(Wq, x, s.Hq * s.D, s.in, s.tokens);
  auto k = project(Wk, x, s.Hkv * s.D, s.in, s.tokens);
  enc.transform_q(tensor_view<double>::bthd(q.data(), 1, s.tokens, s.Hq, s.D), pos);
  enc.transform_k(tensor_view<double>::bthd(k.data(), 1, s.tokens, s.Hkv, s.D), pos);
  return scores(q, k, s);
}

}  // namespace

TEST_CASE("interleaved + permuted weights == half-split (full, partial, offset, GQA)", "[rope][permute]") {
  const shape shapes[] = {
      {16, 16, 0, 2, 2, 12, 5}, {16, 8, 0, 4, 2, 12, 5}, {24, 8, 8, 6, 2, 10, 4}, {8, 2, 0, 3, 1, 6, 3}};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const auto& s : shapes) {
    INFO("D " << s.D << " R " << s.R << " offset " << s.offset << " Hq " << s.Hq << " Hkv " << s.Hkv);
    std::vector<double> Wq(static_cast<std::size_t>(s.Hq * s.D * s.in)),
        Wk(static_cast<std::size_t>(s.Hkv * s.D * s.in)), x(static_cast<std::size_t>(s.tokens * s.in));
    for (auto* v : {&Wq, &Wk, &x})
      for (double& e : *v) e = u(rng);
    std::vector<std::int64_t> pos;
    for (int t = 0; t < s.tokens; ++t) pos.push_back(3 + 17 * t);

    const auto ref = run(s, kernels::pairing::interleaved, Wq, Wk, x, pos);
    const auto pq = interleaved_to_half_split_rows(s.D, s.R, s.Hq, s.offset);
    const auto pk = interleaved_to_half_split_rows(s.D, s.R, s.Hkv, s.offset);  // Hkv for W_k
    std::vector<double> Wq2(Wq.size()), Wk2(Wk.size());
    permute_rows<double>(Wq, Wq2, pq, static_cast<std::size_t>(s.in));
    permute_rows<double>(Wk, Wk2, pk, static_cast<std::size_t>(s.in));
    POSENC_CHECK_CLOSE(run(s, kernels::pairing::half_split, Wq2, Wk2, x, pos), ref, 1e-12, 0.0);

    // and back: the inverse map restores the original weights exactly
    std::vector<double> Wq3(Wq.size());
    permute_rows<double>(Wq2, Wq3, half_split_to_interleaved_rows(s.D, s.R, s.Hq, s.offset),
                         static_cast<std::size_t>(s.in));
    CHECK(Wq3 == Wq);

    if (s.Hq != s.Hkv) {  // using Hq for W_k (the llama.cpp #3018 bug) breaks equivalence or the shape
      const auto wrong = interleaved_to_half_split_rows(s.D, s.R, s.Hq, s.offset);
      CHECK(wrong.size() != Wk.size() / static_cast<std::size_t>(s.in));
    }
  }
}

TEST_CASE("permutation maps: explicit small example and invalid sizes", "[rope][permute][validation]") {
  // D = 6, R = 4, 2 heads: half-split row c*2 + k <- interleaved row 2k + c; rows 4, 5 stay.
  const auto p = interleaved_to_half_split_rows(6, 4, 2);
  const std::vector<std::int64_t> want{0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11};
  CHECK(p == want);
  const auto inv = half_split_to_interleaved_rows(6, 4, 2);
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(inv[static_cast<std::size_t>(p[i])] == static_cast<std::int64_t>(i));
  CHECK_THROWS_AS(interleaved_to_half_split_rows(6, 5, 2), config_error);
  CHECK_THROWS_WITH(interleaved_to_half_split_rows(6, 8, 2), Catch::Contains("permute.rotary_dim"));
  CHECK_THROWS_WITH(interleaved_to_half_split_rows(6, 4, 0), Catch::Contains("permute.num_heads"));
  CHECK_THROWS_WITH(interleaved_to_half_split_rows(0, 4, 1), Catch::Contains("permute.head_dim"));
  std::vector<double> a(12), b(11);
  CHECK_THROWS_AS(permute_rows<double>(a, b, p, 1), shape_error);
}
