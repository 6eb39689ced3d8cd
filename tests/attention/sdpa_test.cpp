// tests/attention/sdpa_test.cpp — properties of the reference sdpa(): masks on positions, packing,
// padding, bottom-right alignment, GQA, sinks, NaN-freedom, invariances, and invalid inputs.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/sdpa.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc::attention_options;
using posenc::no_position;
using posenc_test::tensor4;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// sdpa into a fresh [B, Sq, Hq, Dv] tensor.
template <class T, class E>
tensor4<T> run(const tensor4<T>& q, const tensor4<T>& k, const tensor4<T>& v, const E& enc,
               const attention_options& o = {}) {
  tensor4<T> out(q.b, q.s, q.h, v.d);
  posenc::sdpa(q.cview(), k.cview(), v.cview(), out.view(), enc, o);
  return out;
}

/// Copies tokens [first, first + count) of batch row b into a batch-1 tensor.
template <class T>
tensor4<T> take(const tensor4<T>& x, std::ptrdiff_t b, std::ptrdiff_t first, std::ptrdiff_t count) {
  tensor4<T> r(1, count, x.h, x.d);
  for (std::ptrdiff_t t = 0; t < count; ++t)
    for (std::ptrdiff_t h = 0; h < x.h; ++h)
      for (std::ptrdiff_t d = 0; d < x.d; ++d)
        r.at(0, t, h, d) = x.data[static_cast<std::size_t>(((b * x.s + first + t) * x.h + h) * x.d + d)];
  return r;
}

posenc_test::local_rope make_rope(std::ptrdiff_t D, double theta = 10000) {
  std::vector<double> f(static_cast<std::size_t>(D / 2));
  for (std::size_t i = 0; i < f.size(); ++i)
    f[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
  return {f};
}

posenc_test::local_shaw make_shaw(std::ptrdiff_t D, std::int64_t kmax) {
  const auto n = static_cast<std::size_t>((2 * kmax + 1) * D);
  return {kmax, D, posenc_test::random_values(n, 91), posenc_test::random_values(n, 92)};
}

posenc_test::slope_bias make_slopes(std::ptrdiff_t H) {
  std::vector<double> s(static_cast<std::size_t>(H));
  for (std::size_t h = 0; h < s.size(); ++h)
    s[h] = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / static_cast<double>(H));
  return {s};
}

}  // namespace

TEST_CASE("NoPE without a causal mask is permutation-equivariant", "[attention]") {
  const std::ptrdiff_t S = 7, H = 3, D = 8;
  tensor4<double> q(1, S, H, D, 1), k(1, S, H, D, 2), v(1, S, H, D, 3);
  const std::vector<std::ptrdiff_t> perm{4, 0, 6, 2, 5, 1, 3};
  auto permute = [&](const tensor4<double>& x) {
    tensor4<double> r(1, S, H, x.d);
    for (std::ptrdiff_t t = 0; t < S; ++t) {
      const auto src = take(x, 0, perm[static_cast<std::size_t>(t)], 1);
      for (std::ptrdiff_t i = 0; i < H * x.d; ++i)
        r.data[static_cast<std::size_t>(t * H * x.d + i)] = src.data[static_cast<std::size_t>(i)];
    }
    return r;
  };
  const auto out = run(q, k, v, no_position{});
  const auto out_p = run(permute(q), permute(k), permute(v), no_position{});
  POSENC_CHECK_CLOSE(out_p.data, permute(out).data, 1e-14, 0);
  // Permuting only keys and values together changes nothing.
  POSENC_CHECK_CLOSE(run(q, permute(k), permute(v), no_position{}).data, out.data, 1e-14, 0);
  // ...but a causal mask orders tokens: the property must fail there (the test can fail).
  const auto causal_p = run(permute(q), permute(k), permute(v), no_position{}, {.causal = true});
  CHECK(posenc_test::compare(causal_p.data, permute(run(q, k, v, no_position{}, {.causal = true})).data, 1e-6).excess >
        0);
}

TEST_CASE("shifting every position by t leaves the output unchanged (RoPE, ALiBi-like, Shaw)", "[attention]") {
  const std::ptrdiff_t S = 9, H = 4, D = 16;
  tensor4<double> q(1, S, H, D, 11), k(1, S, H, D, 12), v(1, S, H, D, 13);
  const auto p0 = posenc::arange_positions(S, 0), pt = posenc::arange_positions(S, 1000);
  auto check_shift = [&](const auto& enc, double atol) {
    const auto a = run(q, k, v, enc, {.causal = true, .query_positions = p0, .key_positions = p0});
    const auto b = run(q, k, v, enc, {.causal = true, .query_positions = pt, .key_positions = pt});
    POSENC_CHECK_CLOSE(b.data, a.data, atol, 0);
  };
  check_shift(make_rope(D), 1e-11);
  check_shift(make_slopes(H), 1e-13);
  check_shift(make_shaw(D, 3), 1e-13);
  check_shift(posenc::combine(make_rope(D), make_slopes(H)), 1e-11);
  // Not true for an encoder that sees absolute positions (scaled q/k).
  const auto a = run(q, k, v, posenc_test::local_scale_qk{D}, {.query_positions = p0, .key_positions = p0});
  const auto b = run(q, k, v, posenc_test::local_scale_qk{D}, {.query_positions = pt, .key_positions = pt});
  CHECK(posenc_test::compare(b.data, a.data, 1e-6).excess > 0);
}

TEST_CASE("causal mask acts on positions, not indices", "[attention]") {
  const std::ptrdiff_t S = 5, H = 2, D = 4;
  tensor4<double> q(1, S, H, D, 21), k(1, S, H, D, 22), v(1, S, H, D, 23);
  const std::vector<std::int64_t> pos{4, 0, 3, 1, 2};  // tokens stored out of order
  std::vector<double> w(static_cast<std::size_t>(H * S * S));
  run(q, k, v, no_position{}, {.causal = true, .query_positions = pos, .key_positions = pos, .weights = w});
  for (std::ptrdiff_t h = 0; h < H; ++h)
    for (std::ptrdiff_t i = 0; i < S; ++i) {
      double sum = 0;
      for (std::ptrdiff_t j = 0; j < S; ++j) {
        const double x = w[static_cast<std::size_t>((h * S + i) * S + j)];
        sum += x;
        if (pos[static_cast<std::size_t>(j)] > pos[static_cast<std::size_t>(i)])
          CHECK(x == 0.0);
        else
          CHECK(x > 0.0);
      }
      CHECK(sum == Approx(1.0).epsilon(1e-14));
    }
}

TEST_CASE("Sq != Sk aligns queries bottom-right when no positions are given", "[attention]") {
  const std::ptrdiff_t Sk = 7, Sq = 3, H = 2, D = 8;
  tensor4<double> qfull(1, Sk, H, D, 31), k(1, Sk, H, D, 32), v(1, Sk, H, D, 33);
  const auto q = take(qfull, 0, Sk - Sq, Sq);
  auto check_enc = [&](const auto& enc) {
    const auto full = run(qfull, k, v, enc, {.causal = true});
    POSENC_CHECK_CLOSE(run(q, k, v, enc, {.causal = true}).data, take(full, 0, Sk - Sq, Sq).data, 1e-13, 0);
  };
  check_enc(no_position{});
  check_enc(make_rope(D));
  check_enc(make_slopes(H));
  check_enc(make_shaw(D, 2));
  // Top-left (queries at 0..Sq-1) would differ.
  const auto p_q = posenc::arange_positions(Sq, 0), p_k = posenc::arange_positions(Sk, 0);
  const auto top_left = run(q, k, v, make_slopes(H), {.causal = true, .query_positions = p_q, .key_positions = p_k});
  CHECK(posenc_test::compare(top_left.data, run(q, k, v, make_slopes(H), {.causal = true}).data, 1e-6).excess > 0);
}

TEST_CASE("a packed batch of two sequences equals running them separately", "[attention]") {
  const std::ptrdiff_t L0 = 5, L1 = 4, S = L0 + L1, H = 4, D = 8;
  tensor4<double> q(1, S, H, D, 41), k(1, S, H, D, 42), v(1, S, H, D, 43);
  const std::vector<int> cu{0, static_cast<int>(L0), static_cast<int>(S)};
  const auto pos = posenc::positions_from_cu_seqlens(std::span<const int>(cu));
  const auto seg = posenc::segment_ids_from_cu_seqlens(std::span<const int>(cu));
  const auto enc = posenc::combine(make_rope(D), make_slopes(H));
  const auto packed =
      run(q, k, v, enc,
          {.causal = true, .query_positions = pos, .key_positions = pos, .query_segments = seg, .key_segments = seg});
  const auto a = run(take(q, 0, 0, L0), take(k, 0, 0, L0), take(v, 0, 0, L0), enc, {.causal = true});
  const auto b = run(take(q, 0, L0, L1), take(k, 0, L0, L1), take(v, 0, L0, L1), enc, {.causal = true});
  POSENC_CHECK_CLOSE(take(packed, 0, 0, L0).data, a.data, 1e-13, 0);
  POSENC_CHECK_CLOSE(take(packed, 0, L0, L1).data, b.data, 1e-13, 0);
  // Without the segment mask the second sequence sees the first: different.
  const auto leaky = run(q, k, v, enc, {.causal = false, .query_positions = pos, .key_positions = pos});
  CHECK(posenc_test::compare(take(leaky, 0, L0, L1).data, b.data, 1e-6).excess > 0);
}

TEST_CASE("left-padded equals unpadded (positions from the attention mask)", "[attention]") {
  const std::ptrdiff_t S = 7, real = 4, pad = S - real, H = 2, D = 8;
  tensor4<double> q(2, S, H, D, 51), k(2, S, H, D, 52), v(2, S, H, D, 53);
  std::vector<std::uint8_t> mask(2 * S, 1);
  for (std::ptrdiff_t t = 0; t < pad; ++t) mask[static_cast<std::size_t>(S + t)] = 0;  // row 1 left-padded
  const auto pos = posenc::positions_from_attention_mask(std::span<const std::uint8_t>(mask), 2, S);
  auto check_enc = [&](const auto& enc) {
    const auto out =
        run(q, k, v, enc, {.causal = true, .query_positions = pos, .key_positions = pos, .key_mask = mask});
    const auto alone = run(take(q, 1, pad, real), take(k, 1, pad, real), take(v, 1, pad, real), enc, {.causal = true});
    POSENC_CHECK_CLOSE(take(out, 1, pad, real).data, alone.data, 1e-13, 0);
    const auto row0 = run(take(q, 0, 0, S), take(k, 0, 0, S), take(v, 0, 0, S), enc, {.causal = true});
    POSENC_CHECK_CLOSE(take(out, 0, 0, S).data, row0.data, 1e-13, 0);  // the other row is unaffected
  };
  check_enc(no_position{});
  check_enc(make_rope(D));
  check_enc(make_slopes(H));
  check_enc(make_shaw(D, 2));
  // key_lengths (right padding) gives the same as the equivalent key mask.
  const std::vector<std::int64_t> lens{S, 3};
  std::vector<std::uint8_t> rmask(2 * S, 1);
  for (std::ptrdiff_t t = 3; t < S; ++t) rmask[static_cast<std::size_t>(S + t)] = 0;
  POSENC_CHECK_CLOSE(run(q, k, v, make_slopes(H), {.key_lengths = lens}).data,
                     run(q, k, v, make_slopes(H), {.key_mask = rmask}).data, 0, 0);
}

TEST_CASE("rows with no allowed key give zeros, and -inf scores never give NaN", "[attention]") {
  const std::ptrdiff_t S = 4, H = 2, D = 4;
  tensor4<float> q(2, S, H, D, 61), k(2, S, H, D, 62), v(2, S, H, D, 63);
  const std::vector<std::int64_t> lens{0, 2};  // sequence 0 has no keys at all
  std::vector<double> w(static_cast<std::size_t>(2 * H * S * S), -1.0);
  const auto out = run(q, k, v, no_position{}, {.key_lengths = lens, .weights = w});
  for (std::ptrdiff_t i = 0; i < S * H * D; ++i) CHECK(out.data[static_cast<std::size_t>(i)] == 0.0f);
  CHECK(posenc_test::all_finite(out.data));
  for (std::ptrdiff_t i = 0; i < H * S * S; ++i) CHECK(w[static_cast<std::size_t>(i)] == 0.0);

  // A score bias of -inf everywhere in some rows, and on some keys elsewhere.
  struct minus_inf_bias {
    std::string_view name() const { return "minus_inf"; }
    std::ptrdiff_t num_heads() const { return 2; }
    double bias(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const {
      if (h == 0 && i == 1) return -inf;  // whole row
      return (i + j) % 2 == 0 ? -inf : 0.0;
    }
  };
  const auto o2 = run(q, k, v, minus_inf_bias{}, {.causal = true, .sinks = {}});
  CHECK(posenc_test::all_finite(o2.data));
  for (std::ptrdiff_t d = 0; d < D; ++d) CHECK(o2.at(0, 1, 0, d) == 0.0f);
  // Packing ids < 0 mark padding queries: their rows are zero.
  const std::vector<std::int32_t> seg{0, 0, -1, -1, 0, 0, 0, 0};
  const auto o3 = run(q, k, v, no_position{}, {.query_segments = seg, .key_segments = seg});
  for (std::ptrdiff_t d = 0; d < D; ++d) CHECK(o3.at(0, 2, 1, d) == 0.0f);
  CHECK(posenc_test::all_finite(o3.data));
  // +inf scores share the mass equally and still produce no NaN.
  struct plus_inf_bias {
    std::string_view name() const { return "plus_inf"; }
    std::ptrdiff_t num_heads() const { return 2; }
    double bias(std::ptrdiff_t, std::int64_t, std::int64_t j) const { return j < 2 ? inf : 0.0; }
  };
  const auto o4 = run(q, k, v, plus_inf_bias{});
  for (std::ptrdiff_t d = 0; d < D; ++d)
    CHECK(o4.at(0, 3, 1, d) == Approx(0.5 * (double(v.at(0, 0, 1, d)) + double(v.at(0, 1, 1, d)))).margin(1e-6));
}

TEST_CASE("attention sinks take mass in the denominator only", "[attention]") {
  const std::ptrdiff_t S = 5, H = 2, D = 4;
  tensor4<double> q(1, S, H, D, 71), k(1, S, H, D, 72), v(1, S, H, D, 73);
  const std::vector<double> sinks{0.7, -1.3};
  std::vector<double> w0(static_cast<std::size_t>(H * S * S)), w1(w0.size());
  const auto plain = run(q, k, v, no_position{}, {.causal = true, .weights = w0});
  const auto sunk = run(q, k, v, no_position{}, {.causal = true, .sinks = sinks, .weights = w1});
  // With a sink the weights are the plain weights times Z / (Z + exp(sink)), Z the plain partition.
  const double scale = 0.5;
  for (std::ptrdiff_t h = 0; h < H; ++h)
    for (std::ptrdiff_t i = 0; i < S; ++i) {
      double Z = 0;
      for (std::ptrdiff_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (std::ptrdiff_t d = 0; d < D; ++d) dot += q.at(0, i, h, d) * k.at(0, j, h, d);
        Z += std::exp(scale * dot);
      }
      const double f = Z / (Z + std::exp(sinks[static_cast<std::size_t>(h)]));
      for (std::ptrdiff_t j = 0; j < S; ++j) {
        const auto n = static_cast<std::size_t>((h * S + i) * S + j);
        CHECK(w1[n] == Approx(w0[n] * f).epsilon(1e-13));
      }
      for (std::ptrdiff_t d = 0; d < D; ++d)
        CHECK(sunk.at(0, i, h, d) == Approx(plain.at(0, i, h, d) * f).epsilon(1e-12));
    }
  // A sink of -inf is no sink.
  const std::vector<double> none{-inf, -inf};
  POSENC_CHECK_CLOSE(run(q, k, v, no_position{}, {.causal = true, .sinks = none}).data, plain.data, 0, 0);
}

TEST_CASE("GQA/MQA: query head h reads kv head h / (Hq / Hkv)", "[attention]") {
  const std::ptrdiff_t S = 6, Hq = 6, D = 8;
  for (std::ptrdiff_t Hkv : {1, 2, 3, 6}) {
    tensor4<double> q(2, S, Hq, D, 81), k(2, S, Hkv, D, 82), v(2, S, Hkv, D, 83);
    tensor4<double> kr(2, S, Hq, D), vr(2, S, Hq, D);  // kv heads repeated: plain MHA
    for (std::ptrdiff_t b = 0; b < 2; ++b)
      for (std::ptrdiff_t t = 0; t < S; ++t)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) {
            kr.at(b, t, h, d) = k.at(b, t, h / (Hq / Hkv), d);
            vr.at(b, t, h, d) = v.at(b, t, h / (Hq / Hkv), d);
          }
    const auto enc = posenc::combine(make_rope(D), make_slopes(Hq));
    INFO("Hkv = " << Hkv);
    POSENC_CHECK_CLOSE(run(q, k, v, enc, {.causal = true}).data, run(q, kr, vr, enc, {.causal = true}).data, 0, 0);
  }
}

TEST_CASE("sliding window on positions keeps the query and the W - 1 keys before it", "[attention]") {
  const std::ptrdiff_t S = 8, H = 2, D = 4, W = 3;
  tensor4<double> q(1, S, H, D, 91), k(1, S, H, D, 92), v(1, S, H, D, 93);
  const auto enc = make_rope(D);
  const auto out = run(q, k, v, enc, {.causal = true, .sliding_window = W});
  for (std::ptrdiff_t i = 0; i < S; ++i) {
    const std::ptrdiff_t first = std::max<std::ptrdiff_t>(0, i - W + 1);
    const std::vector<std::int64_t> pq{i}, pk = posenc::arange_positions(i - first + 1, first);
    const auto one = run(take(q, 0, i, 1), take(k, 0, first, i - first + 1), take(v, 0, first, i - first + 1), enc,
                         {.query_positions = pq, .key_positions = pk});
    POSENC_CHECK_CLOSE(take(out, 0, i, 1).data, one.data, 1e-13, 0);
  }
  // Without causal the window is symmetric.
  const posenc::attention_mask m({.sliding_window = 2}, 1, 4, 4);
  CHECK(m.materialize() == std::vector<std::uint8_t>{1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1});
}

TEST_CASE("strides, Dv != D, float vs double, inputs untouched, scale and its multiplier", "[attention]") {
  const std::ptrdiff_t B = 2, S = 5, H = 2, D = 8, Dv = 3;
  tensor4<double> q(B, S, H, D, 101), k(B, S, H, D, 102), v(B, S, H, Dv, 103);
  const auto enc = posenc::combine(make_rope(D), make_shaw(D, 2));
  // Shaw's value table has D entries, v has Dv: the value term must be refused by name.
  CHECK_THROWS_WITH(run(q, k, v, enc), Catch::Contains("encoder.relative_value.size"));
  const auto enc2 = posenc::combine(make_rope(D), make_slopes(H));
  const auto q0 = q.data, k0 = k.data;
  const auto ref = run(q, k, v, enc2, {.causal = true});
  CHECK(q.data == q0);
  CHECK(k.data == k0);
  // The same data in [B, H, T, D] order.
  auto to_bhtd = [](const tensor4<double>& x) {
    std::vector<double> r(x.data.size());
    for (std::ptrdiff_t b = 0; b < x.b; ++b)
      for (std::ptrdiff_t t = 0; t < x.s; ++t)
        for (std::ptrdiff_t h = 0; h < x.h; ++h)
          for (std::ptrdiff_t d = 0; d < x.d; ++d)
            r[static_cast<std::size_t>(((b * x.h + h) * x.s + t) * x.d + d)] =
                x.data[static_cast<std::size_t>(((b * x.s + t) * x.h + h) * x.d + d)];
    return r;
  };
  auto qb = to_bhtd(q), kb = to_bhtd(k), vb = to_bhtd(v);
  std::vector<double> ob(ref.data.size() * 2, 99.0);  // output with dim stride 2 (every other element)
  using V = posenc::tensor_view<double>;
  posenc::sdpa(V::bhtd(qb.data(), B, H, S, D), V::bhtd(kb.data(), B, H, S, D), V::bhtd(vb.data(), B, H, S, Dv),
               V::strided(ob.data(), {B, S, H, Dv}, {S * H * Dv * 2, H * Dv * 2, Dv * 2, 2}), enc2, {.causal = true});
  std::vector<double> ob_even;
  for (std::size_t i = 0; i < ob.size(); i += 2) ob_even.push_back(ob[i]);
  POSENC_CHECK_CLOSE(ob_even, ref.data, 0, 0);
  for (std::size_t i = 1; i < ob.size(); i += 2) CHECK(ob[i] == 99.0);
  // float agrees with double.
  tensor4<float> qf(B, S, H, D), kf(B, S, H, D), vf(B, S, H, Dv);
  qf.data = posenc_test::cast_to<float>(q.data);
  kf.data = posenc_test::cast_to<float>(k.data);
  vf.data = posenc_test::cast_to<float>(v.data);
  POSENC_CHECK_CLOSE(run(qf, kf, vf, enc2, {.causal = true}).data, ref.data, 2e-6, 0);
  // An encoder's softmax-scale multiplier multiplies the (default or explicit) scale.
  struct scaled_nope {
    std::string_view name() const { return "scaled"; }
    double softmax_scale_multiplier() const { return 1.5; }
  };
  POSENC_CHECK_CLOSE(run(q, k, v, scaled_nope{}).data,
                     run(q, k, v, no_position{}, {.scale = 1.5 / std::sqrt(8.0)}).data, 1e-15, 0);
  POSENC_CHECK_CLOSE(run(q, k, v, scaled_nope{}, {.scale = 0.2}).data, run(q, k, v, no_position{}, {.scale = 0.3}).data,
                     1e-15, 0);
}

TEST_CASE("invalid shapes and options are refused by name", "[attention]") {
  tensor4<double> q(1, 4, 6, 8, 1), k(1, 4, 4, 8, 2), v(1, 4, 4, 8, 3);
  SECTION("Hq % Hkv != 0 is a config_error naming q.heads") {
    CHECK_THROWS_AS(run(q, k, v, no_position{}), posenc::config_error);
    CHECK_THROWS_WITH(run(q, k, v, no_position{}), Catch::Contains("q.heads") && Catch::Contains("6"));
  }
  tensor4<double> k2(1, 4, 2, 8, 2), v2(1, 4, 2, 8, 3);
  SECTION("mismatched extents are shape_errors naming the view") {
    tensor4<double> v3(1, 5, 2, 8, 3), k4(1, 4, 2, 7, 2), k5(2, 4, 2, 8, 1);
    CHECK_THROWS_AS(run(q, k2, v3, no_position{}), posenc::shape_error);
    CHECK_THROWS_WITH(run(q, k2, v3, no_position{}), Catch::Contains("v.tokens"));
    CHECK_THROWS_WITH(run(q, k4, v2, no_position{}), Catch::Contains("k.dim"));
    CHECK_THROWS_WITH(run(q, k5, v2, no_position{}), Catch::Contains("k.batch"));
    tensor4<double> out(1, 4, 6, 7);
    CHECK_THROWS_WITH(posenc::sdpa(q.cview(), k2.cview(), v2.cview(), out.view(), no_position{}),
                      Catch::Contains("out.dim"));
  }
  SECTION("options") {
    const std::vector<std::int64_t> p3{0, 1, 2}, p4{0, 1, 2, 3};
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.query_positions = p3, .key_positions = p4}),
                      Catch::Contains("attention.query_positions"));
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.query_positions = p4}),
                      Catch::Contains("attention.query_positions"));
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.sliding_window = 0}),
                      Catch::Contains("attention.sliding_window"));
    const std::vector<double> s2{0, 0};
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.sinks = s2}), Catch::Contains("attention.sinks"));
    const std::vector<std::int64_t> lens{5};
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.key_lengths = lens}),
                      Catch::Contains("attention.key_lengths[0]"));
    std::vector<double> w(3);
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.weights = w}), Catch::Contains("attention.weights"));
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.scale = inf}), Catch::Contains("attention.scale"));
    const std::vector<std::int32_t> seg{0, 0, 0, 0};
    CHECK_THROWS_WITH(run(q, k2, v2, no_position{}, {.query_segments = seg}),
                      Catch::Contains("attention.query_segments"));
  }
  SECTION("encoder sizes must fit the heads") {
    CHECK_THROWS_WITH(run(q, k2, v2, make_rope(4)), Catch::Contains("encoder.head_dim"));
    CHECK_THROWS_WITH(run(q, k2, v2, make_slopes(4)), Catch::Contains("encoder.num_heads"));
  }
}
