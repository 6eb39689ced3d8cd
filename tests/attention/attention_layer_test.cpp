// tests/attention/attention_layer_test.cpp — the Eigen reference layer: agrees with a naive
// computation, runs every encoder family (and compositions) with prefill == decode, applies hook 1.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention_layer.hpp>
#include <posenc/attention/eigen_interop.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc::attention_layer;
using posenc::row_matrix;

// A named namespace around the whole file: the unity build of the tests (POSENC_UNITY_TESTS)
// compiles it with its neighbours, which reuse these names.
namespace attention_layer_test {

namespace {

constexpr std::ptrdiff_t d_model = 32, Hq = 4, Hkv = 2, D = 8, S = 10;

template <class T>
row_matrix<T> random_matrix(Eigen::Index r, Eigen::Index c, std::uint64_t seed, double scale = 1.0) {
  const auto v = posenc_test::random_values(static_cast<std::size_t>(r * c), seed);
  row_matrix<T> m(r, c);
  for (Eigen::Index i = 0; i < r * c; ++i) m.data()[i] = static_cast<T>(scale * v[static_cast<std::size_t>(i)]);
  return m;
}

template <class T>
Eigen::Matrix<T, Eigen::Dynamic, 1> random_vector(Eigen::Index n, std::uint64_t seed) {
  return random_matrix<T>(n, 1, seed, 0.1).col(0);
}

template <class T>
attention_layer<T> make_layer(std::ptrdiff_t hkv = Hkv, bool biases = true) {
  const double s = 1.0 / std::sqrt(double(d_model));
  posenc::attention_layer_weights<T> w{
      random_matrix<T>(Hq * D, d_model, 1, s), random_matrix<T>(hkv * D, d_model, 2, s),
      random_matrix<T>(hkv * D, d_model, 3, s), random_matrix<T>(d_model, Hq * D, 4, s)};
  if (biases) {
    w.b_q = random_vector<T>(Hq * D, 5);
    w.b_k = random_vector<T>(hkv * D, 6);
    w.b_v = random_vector<T>(hkv * D, 7);
    w.b_o = random_vector<T>(d_model, 8);
  }
  return attention_layer<T>({.model_dim = d_model, .num_heads = Hq, .num_kv_heads = hkv, .head_dim = D}, std::move(w));
}

std::vector<double> to_vector(const auto& m) {
  std::vector<double> v;
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) v.push_back(static_cast<double>(m(i, j)));
  return v;
}

/// Full causal forward vs token-by-token decode through a cache (and a 4-token prefill + decode).
template <class T, class E>
void check_layer_decode(const attention_layer<T>& layer, const E& enc, double atol) {
  const auto x = random_matrix<T>(S, d_model, 77);
  const auto pos = posenc::arange_positions(S);
  const auto full = layer.forward(enc, x, pos, {.causal = true});
  REQUIRE(posenc_test::all_finite(to_vector(full)));
  for (std::ptrdiff_t first : {1, 4}) {
    auto cache = layer.make_cache();
    row_matrix<T> dec(S, d_model);
    dec.topRows(first) = layer.forward(enc, x.topRows(first), std::span(pos).first(static_cast<std::size_t>(first)),
                                       cache, {.causal = true});
    for (std::ptrdiff_t t = first; t < S; ++t)
      dec.row(t) =
          layer.forward(enc, x.row(t), std::span(pos).subspan(static_cast<std::size_t>(t), 1), cache, {.causal = true});
    INFO(enc.name() << ", prefill " << first);
    POSENC_CHECK_CLOSE(to_vector(dec), to_vector(full), atol, 0);
  }
}

template <class T>
void every_family(double atol) {
  const auto layer = make_layer<T>();
  const auto table = posenc_test::random_values(64 * d_model, 11);
  const auto t5_table = posenc_test::random_values(32 * Hq, 12);
  const auto kt = posenc_test::random_values(9 * D, 13), vt = posenc_test::random_values(9 * D, 14);
  const posenc::learned_absolute learned({.max_len = 64, .model_dim = d_model}, std::span<const double>(table));
  const posenc::sinusoidal sinus({.d_model = d_model});
  const posenc::rope rope({.head_dim = static_cast<int>(D)});
  const posenc::xpos xpos({.head_dim = static_cast<int>(D), .scale_base = 16});
  const posenc::alibi alibi({.num_heads = Hq});
  const posenc::t5_bias t5({.bidirectional = false, .num_heads = Hq}, std::span<const double>(t5_table));
  const posenc::shaw_relative shaw(posenc::shaw_relative_config::symmetric(4, D), std::span<const double>(kt),
                                   std::span<const double>(vt));
  check_layer_decode(layer, posenc::no_position{}, atol);
  check_layer_decode(layer, learned, atol);
  check_layer_decode(layer, sinus, atol);
  check_layer_decode(layer, rope, atol);
  check_layer_decode(layer, xpos, atol);
  check_layer_decode(layer, alibi, atol);
  check_layer_decode(layer, t5, atol);
  check_layer_decode(layer, shaw, atol);
  check_layer_decode(layer, posenc::combine(rope, alibi), atol);
  check_layer_decode(layer, posenc::combine(sinus, t5), atol);
  check_layer_decode(layer, posenc::combine(posenc::combine(learned, rope), shaw), atol);
  check_layer_decode(make_layer<T>(1, false), posenc::combine(rope, alibi), atol);  // MQA, no biases
}

}  // namespace

TEST_CASE("attention_layer matches a naive Eigen computation (NoPE, GQA, biases)", "[attention][layer]") {
  const auto layer = make_layer<double>();
  const auto x = random_matrix<double>(S, d_model, 21);
  const auto pos = posenc::arange_positions(S);
  const auto y = layer.forward(posenc::no_position{}, x, pos, {.causal = true});
  // Naive: per head, softmax(q k^T / sqrt(D) + causal) v, concatenated, then W_o.
  const double s = 1.0 / std::sqrt(double(d_model));
  const auto wq = random_matrix<double>(Hq * D, d_model, 1, s), wk = random_matrix<double>(Hkv * D, d_model, 2, s),
             wv = random_matrix<double>(Hkv * D, d_model, 3, s), wo = random_matrix<double>(d_model, Hq * D, 4, s);
  const row_matrix<double> q = (x * wq.transpose()).rowwise() + random_vector<double>(Hq * D, 5).transpose();
  const row_matrix<double> k = (x * wk.transpose()).rowwise() + random_vector<double>(Hkv * D, 6).transpose();
  const row_matrix<double> v = (x * wv.transpose()).rowwise() + random_vector<double>(Hkv * D, 7).transpose();
  row_matrix<double> heads(S, Hq * D);
  for (std::ptrdiff_t h = 0; h < Hq; ++h) {
    const std::ptrdiff_t g = h / (Hq / Hkv);
    row_matrix<double> sc = q.middleCols(h * D, D) * k.middleCols(g * D, D).transpose() / std::sqrt(double(D));
    for (std::ptrdiff_t i = 0; i < S; ++i) {
      for (std::ptrdiff_t j = i + 1; j < S; ++j) sc(i, j) = -INFINITY;
      sc.row(i) = (sc.row(i).array() - sc.row(i).maxCoeff()).exp();
      sc.row(i) /= sc.row(i).sum();
    }
    heads.middleCols(h * D, D) = sc * v.middleCols(g * D, D);
  }
  const row_matrix<double> expect = (heads * wo.transpose()).rowwise() + random_vector<double>(d_model, 8).transpose();
  POSENC_CHECK_CLOSE(to_vector(y), to_vector(expect), 1e-13, 0);
}

TEST_CASE("attention_layer: every encoder family and compositions, prefill == decode (double)", "[attention][layer]") {
  every_family<double>(1e-12);
}

TEST_CASE("attention_layer: every encoder family and compositions, prefill == decode (float)", "[attention][layer]") {
  every_family<float>(1e-5);
}

TEST_CASE("attention_layer applies additive encoders to its input", "[attention][layer]") {
  const auto layer = make_layer<double>();
  const auto x = random_matrix<double>(S, d_model, 31);
  const auto pos = posenc::arange_positions(S, 3);
  const posenc::sinusoidal sinus({.d_model = d_model});
  row_matrix<double> xpe = x;
  for (std::ptrdiff_t t = 0; t < S; ++t)
    sinus.add(pos[static_cast<std::size_t>(t)],
              std::span<double>(xpe.row(t).data(), static_cast<std::size_t>(d_model)));
  POSENC_CHECK_CLOSE(to_vector(layer.forward(sinus, x, pos, {.causal = true})),
                     to_vector(layer.forward(posenc::no_position{}, xpe, pos, {.causal = true})), 1e-14, 0);
  // ...and that it matters.
  CHECK(posenc_test::compare(to_vector(layer.forward(sinus, x, pos)),
                             to_vector(layer.forward(posenc::no_position{}, x, pos)), 1e-6)
            .excess > 0);
}

TEST_CASE("attention_layer and eigen_interop refuse inconsistent sizes by name", "[attention][layer]") {
  posenc::attention_layer_weights<double> w{
      random_matrix<double>(Hq * D, d_model, 1), random_matrix<double>(Hkv * D, d_model, 2),
      random_matrix<double>(Hkv * D, d_model, 3), random_matrix<double>(d_model, Hq * D, 4)};
  const posenc::attention_layer_config c{.model_dim = d_model, .num_heads = Hq, .num_kv_heads = Hkv, .head_dim = D};
  auto bad = w;
  bad.w_k = random_matrix<double>(Hq * D, d_model, 2);
  CHECK_THROWS_WITH(attention_layer<double>(c, bad), Catch::Contains("attention_layer.w_k"));
  bad = w;
  bad.b_o = random_vector<double>(3, 1);
  CHECK_THROWS_WITH(attention_layer<double>(c, bad), Catch::Contains("attention_layer.b_o"));
  auto c3 = c;
  c3.num_kv_heads = 3;
  CHECK_THROWS_AS(attention_layer<double>(c3, w), posenc::config_error);
  CHECK_THROWS_WITH(attention_layer<double>(c3, w), Catch::Contains("attention_layer.num_kv_heads"));
  const attention_layer<double> layer(c, w);
  const auto x = random_matrix<double>(S, d_model, 5);
  const auto pos = posenc::arange_positions(S - 1);
  CHECK_THROWS_WITH((void)layer.forward(posenc::no_position{}, x, pos), Catch::Contains("positions.size"));
  const posenc::sinusoidal wrong({.d_model = 16});
  const auto pos_ok = posenc::arange_positions(S);
  CHECK_THROWS_WITH((void)layer.forward(wrong, x, pos_ok), Catch::Contains("encoder.model_dim"));
  row_matrix<double> m(3, 10);
  CHECK_THROWS_WITH(posenc::as_heads(m, 4, 3), Catch::Contains("matrix.cols"));
  const auto view = posenc::as_heads(m, 2, 5);
  CHECK(view.tokens() == 3);
  CHECK(view.heads() == 2);
  m(1, 7) = 42;
  CHECK(view(0, 1, 1, 2) == 42);
  CHECK(posenc::head_map(view, 0, 1)(1, 2) == 42);
}

}  // namespace attention_layer_test
