// tests/attention/semantics_test.cpp — logit soft-capping and chunked attention: sdpa against a naive
// double computation written here, the vectorised tanh of every ISA, posenc::attention against sdpa
// within the documented bound on every ISA (decode and prefill shapes, GQA, combinations with the
// window, biases, sinks, explicit negative positions and padding), kv_cache::attend, invalid values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>

#include "attention_support.hpp"
#include "fast_support.hpp"
#include "support/check.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

__extension__ typedef __int128 wide;  // exact floor division of any two int64 (test-side reference)

std::int64_t floor_div(std::int64_t p, std::int64_t c) {
  const wide a = p, b = c;
  wide q = a / b;
  if (q * b > a) --q;  // truncation went up (negative quotient with a remainder)
  return static_cast<std::int64_t>(q);
}

std::vector<isa> every_isa() {
  std::vector<isa> r{isa::scalar};
  for (isa i : {isa::avx2, isa::avx512, isa::neon})
    if (posenc::kernels::isa_supported(i)) r.push_back(i);
  return r;
}

/// The semantics spelled out, in double, one (b, i, h) row at a time, independently of sdpa.
struct naive_case {
  std::ptrdiff_t B = 1, Sq = 1, Sk = 1, Hq = 1, Hkv = 1, D = 8;
  std::vector<double> q, k, v;       // [B, S, H, D]
  std::vector<std::int64_t> pq, pk;  // explicit positions
  std::vector<std::int64_t> lengths;
  bool causal = false;
  std::optional<std::int64_t> window, chunk;
  std::optional<double> cap;
  std::vector<double> slopes;  // bias slope_h * (pos_k - pos_q) when given
  std::vector<double> sinks;
  bool bias_inside_cap = false;  // the other order, to show the tests can tell them apart

  [[nodiscard]] bool visible(std::ptrdiff_t b, std::ptrdiff_t i, std::ptrdiff_t j) const {
    const std::int64_t x = pq[static_cast<std::size_t>(b * Sq + i)], y = pk[static_cast<std::size_t>(b * Sk + j)];
    if (!lengths.empty() && j >= lengths[static_cast<std::size_t>(b)]) return false;
    if (causal && y > x) return false;
    if (window && (x - y >= *window || (!causal && y - x >= *window))) return false;
    if (chunk && floor_div(x, *chunk) != floor_div(y, *chunk)) return false;
    return true;
  }

  [[nodiscard]] std::vector<double> run() const {
    std::vector<double> out(static_cast<std::size_t>(B * Sq * Hq * D), 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t i = 0; i < Sq; ++i)
        for (std::ptrdiff_t h = 0; h < Hq; ++h) {
          const std::ptrdiff_t g = h / (Hq / Hkv);
          std::vector<double> l;
          std::vector<std::ptrdiff_t> js;
          for (std::ptrdiff_t j = 0; j < Sk; ++j) {
            if (!visible(b, i, j)) continue;
            double dot = 0;
            for (std::ptrdiff_t d = 0; d < D; ++d)
              dot += q[static_cast<std::size_t>(((b * Sq + i) * Hq + h) * D + d)] *
                     k[static_cast<std::size_t>(((b * Sk + j) * Hkv + g) * D + d)];
            double x = scale * dot;
            const double bias = slopes.empty() ? 0.0
                                               : slopes[static_cast<std::size_t>(h)] *
                                                     static_cast<double>(pk[static_cast<std::size_t>(b * Sk + j)] -
                                                                         pq[static_cast<std::size_t>(b * Sq + i)]);
            if (bias_inside_cap) x += bias;
            if (cap) x = *cap * std::tanh(x / *cap);
            if (!bias_inside_cap) x += bias;
            l.push_back(x);
            js.push_back(j);
          }
          if (l.empty()) continue;
          double m = *std::max_element(l.begin(), l.end());
          if (!sinks.empty()) m = std::max(m, sinks[static_cast<std::size_t>(h)]);
          double den = sinks.empty() ? 0.0 : std::exp(sinks[static_cast<std::size_t>(h)] - m);
          for (double x : l) den += std::exp(x - m);
          for (std::size_t n = 0; n < l.size(); ++n) {
            const double p = std::exp(l[n] - m) / den;
            for (std::ptrdiff_t d = 0; d < D; ++d)
              out[static_cast<std::size_t>(((b * Sq + i) * Hq + h) * D + d)] +=
                  p * v[static_cast<std::size_t>(((b * Sk + js[n]) * Hkv + g) * D + d)];
          }
        }
    return out;
  }

  [[nodiscard]] posenc::attention_options options() const {
    posenc::attention_options o;
    o.causal = causal;
    o.sliding_window = window;
    o.attention_chunk = chunk;
    o.logit_softcap = cap;
    o.query_positions = pq;
    o.key_positions = pk;
    o.key_lengths = lengths;
    o.sinks = sinks;
    return o;
  }

  [[nodiscard]] std::vector<double> run_sdpa() const {
    std::vector<double> out(static_cast<std::size_t>(B * Sq * Hq * D));
    using cv = posenc::tensor_view<const double>;
    const auto qv = cv::bthd(q.data(), B, Sq, Hq, D), kv = cv::bthd(k.data(), B, Sk, Hkv, D),
               vv = cv::bthd(v.data(), B, Sk, Hkv, D);
    const auto ov = posenc::tensor_view<double>::bthd(out.data(), B, Sq, Hq, D);
    if (slopes.empty())
      posenc::sdpa(qv, kv, vv, ov, posenc::no_position{}, options());
    else
      posenc::sdpa(qv, kv, vv, ov, slope_bias{slopes}, options());
    return out;
  }
};

naive_case make_naive(std::ptrdiff_t B, std::ptrdiff_t Sq, std::ptrdiff_t Sk, std::ptrdiff_t Hq, std::ptrdiff_t Hkv,
                      std::ptrdiff_t D, double amp, std::int64_t first_pos, std::uint64_t seed) {
  naive_case c;
  c.B = B, c.Sq = Sq, c.Sk = Sk, c.Hq = Hq, c.Hkv = Hkv, c.D = D;
  c.q = random_values(static_cast<std::size_t>(B * Sq * Hq * D), seed);
  c.k = random_values(static_cast<std::size_t>(B * Sk * Hkv * D), seed + 1);
  c.v = random_values(static_cast<std::size_t>(B * Sk * Hkv * D), seed + 2);
  for (double& x : c.q) x *= amp;
  for (double& x : c.k) x *= amp;
  for (std::ptrdiff_t b = 0; b < B; ++b) {  // keys first_pos.., queries the last Sq of them
    for (std::ptrdiff_t j = 0; j < Sk; ++j) c.pk.push_back(first_pos + j);
    for (std::ptrdiff_t i = 0; i < Sq; ++i) c.pq.push_back(first_pos + Sk - Sq + i);
  }
  return c;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("sdpa: logit soft-capping is cap tanh(scale q.k / cap), then the bias, then the mask", "[sdpa][softcap]") {
  // |scale q.k| reaches ~20 (amplitude 2.5, D = 16): far beyond a cap of 3, so the tanh matters.
  auto c = make_naive(2, 5, 9, 4, 2, 16, 2.5, 0, 11);
  c.cap = 3.0;
  const auto capped = c.run();
  POSENC_CHECK_CLOSE(c.run_sdpa(), capped, 1e-12, 1e-12);
  naive_case plain = c;
  plain.cap.reset();
  CHECK(max_diff(plain.run(), capped) > 1e-2);  // the cap changes the result

  SECTION("with a score bias, which goes in uncapped") {
    c.slopes = {-0.5, -0.25, -1.0, -2.0};
    c.causal = true;
    const auto want = c.run();
    POSENC_CHECK_CLOSE(c.run_sdpa(), want, 1e-12, 1e-12);
    naive_case inside = c;
    inside.bias_inside_cap = true;
    CHECK(max_diff(inside.run(), want) > 1e-2);  // the order is observable
  }
  SECTION("with a sliding window, sinks and GQA") {
    c.causal = true;
    c.window = 3;
    c.sinks = {0.5, -1.0, 2.0, 0.0};
    POSENC_CHECK_CLOSE(c.run_sdpa(), c.run(), 1e-12, 1e-12);
  }
  SECTION("a cap far above the logits changes nothing measurable") {
    c.cap = 1e12;
    POSENC_CHECK_CLOSE(c.run_sdpa(), plain.run(), 1e-12, 1e-12);
  }
}

TEST_CASE("attention_mask: attention chunks by floor division of positions", "[sdpa][chunk]") {
  SECTION("chunk ids of extreme positions are exact") {
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(), hi = std::numeric_limits<std::int64_t>::max();
    for (std::int64_t p : {lo, lo + 1, std::int64_t{-9}, std::int64_t{-8}, std::int64_t{-7}, std::int64_t{-1},
                           std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{8}, hi - 1, hi})
      for (std::int64_t ch : {std::int64_t{1}, std::int64_t{3}, std::int64_t{8}, std::int64_t{1} << 40, hi}) {
        INFO("p " << p << " C " << ch);
        CHECK(posenc::attention_mask::chunk_of(p, ch) == floor_div(p, ch));
      }
    CHECK(posenc::attention_mask::chunk_of(-1, 4) == -1);  // truncation would say 0, the chunk of 0..3
    CHECK(posenc::attention_mask::chunk_of(-4, 4) == -1);
    CHECK(posenc::attention_mask::chunk_of(-5, 4) == -2);
  }
  SECTION("the materialised mask over negative positions, causal and not") {
    std::vector<std::int64_t> p;
    for (std::int64_t x = -9; x <= 6; ++x) p.push_back(x);
    const auto n = static_cast<std::ptrdiff_t>(p.size());
    for (bool causal : {false, true}) {
      const posenc::attention_options o{
          .causal = causal, .attention_chunk = 4, .query_positions = p, .key_positions = p};
      const posenc::attention_mask mask(o, 1, n, n);
      const auto m = mask.materialize();
      for (std::ptrdiff_t i = 0; i < n; ++i)
        for (std::ptrdiff_t j = 0; j < n; ++j) {
          const std::int64_t x = p[static_cast<std::size_t>(i)], y = p[static_cast<std::size_t>(j)];
          // chunks [-12, -9], [-8, -5], [-4, -1], [0, 3], [4, 7]
          const auto id = [](std::int64_t t) { return t >= 0 ? t / 4 : -((-t + 3) / 4); };
          const bool want = id(x) == id(y) && (!causal || y <= x);
          INFO("causal " << causal << " q " << x << " k " << y);
          CHECK((m[static_cast<std::size_t>(i * n + j)] != 0) == want);
        }
    }
  }
  SECTION("a chunk of 1 leaves each query only its own position") {
    std::vector<std::int64_t> pq{5, 5, -3}, pk{4, 5, 6, -3};
    const posenc::attention_options o{.attention_chunk = 1, .query_positions = pq, .key_positions = pk};
    const auto m = posenc::attention_mask(o, 1, 3, 4).materialize();
    CHECK(m == std::vector<std::uint8_t>{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1});
  }
}

TEST_CASE("sdpa: chunked attention against the naive rule, with every other mask", "[sdpa][chunk]") {
  SECTION("causal chunks over explicit negative positions, GQA") {
    auto c = make_naive(2, 7, 23, 4, 2, 8, 1.0, -13, 21);
    c.causal = true;
    c.chunk = 5;
    const auto want = c.run();
    POSENC_CHECK_CLOSE(c.run_sdpa(), want, 1e-12, 1e-12);
    naive_case no_chunk = c;
    no_chunk.chunk.reset();
    CHECK(max_diff(no_chunk.run(), want) > 1e-2);
  }
  SECTION("chunks with key lengths (padding), a window and soft-capping") {
    auto c = make_naive(2, 4, 19, 2, 1, 8, 2.0, 3, 31);
    c.causal = true;
    c.chunk = 6;
    c.lengths = {19, 11};
    c.window = 4;
    c.cap = 2.0;
    POSENC_CHECK_CLOSE(c.run_sdpa(), c.run(), 1e-12, 1e-12);
  }
  SECTION("non-causal chunks are symmetric") {
    auto c = make_naive(1, 9, 9, 2, 2, 8, 1.0, -4, 41);
    c.chunk = 3;
    POSENC_CHECK_CLOSE(c.run_sdpa(), c.run(), 1e-12, 1e-12);
  }
}

TEST_CASE("fast kernels: the vectorised tanh and the soft-cap row on every ISA", "[fast][kernels][softcap]") {
  std::vector<float> x;
  for (int i = 0; i <= 400000; ++i) x.push_back(-20.0f + 40.0f * static_cast<float>(i) / 400000.0f);
  for (int e = -40; e <= 0; ++e) x.push_back(std::ldexp(1.0f, e) * 0.7f);  // small magnitudes, both sides of 0.625
  for (float t : {0.62499994f, 0.625f, 0.62500006f, 1e-30f, 1e-40f, 9.0f, 9.1f, 50.0f, 88.0f, 1e30f, 3e38f})
    x.push_back(t);
  const std::size_t n_finite = x.size();
  for (std::size_t i = 0; i < n_finite; ++i) x.push_back(-x[i]);
  constexpr float finf = std::numeric_limits<float>::infinity();
  x.push_back(finf);
  x.push_back(-finf);
  x.push_back(0.0f);
  x.push_back(-0.0f);
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  for (isa which : every_isa()) {
    const auto& k = posenc::kernels::attention_kernels_for(which).tiles;
    std::vector<float> y(x.size());
    k.tanh(x.data(), y.data(), static_cast<int>(x.size()));
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO(posenc::kernels::isa_name(which) << " x " << x[i] << " tanh " << y[i]);
      if (std::isnan(x[i])) {
        CHECK(std::isnan(y[i]));
        continue;
      }
      if (std::fabs(x[i]) >= 9.1f) {
        CHECK(y[i] == std::copysign(1.0f, x[i]));  // exactly +-1, infinities too
        continue;
      }
      if (x[i] == 0.0f) {
        CHECK(y[i] == 0.0f);
        CHECK(std::signbit(y[i]) == std::signbit(x[i]));
        continue;
      }
      const double t = std::tanh(static_cast<double>(x[i]));
      worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - t) / std::fabs(t));
      CHECK(std::fabs(y[i]) <= 1.0f);
    }
    INFO(posenc::kernels::isa_name(which) << ": worst relative error " << worst);
    CHECK(worst <= 2.5e-7);

    // the row kernel: cap tanh(x / cap) for a row with a vector tail, relative to the cap
    std::vector<float> row;
    for (int j = 0; j < 67; ++j) row.push_back(-40.0f + 80.0f * static_cast<float>(j) / 66.0f);
    const std::vector<float> in = row;
    for (double cap : {0.5, 5.0, 50.0}) {
      row = in;
      k.softcap(row.data(), static_cast<int>(row.size()), static_cast<float>(cap), static_cast<float>(1.0 / cap));
      for (std::size_t j = 0; j < row.size(); ++j) {
        const double want = cap * std::tanh(static_cast<double>(in[j]) / cap);
        INFO(posenc::kernels::isa_name(which) << " cap " << cap << " x " << in[j]);
        CHECK(std::fabs(static_cast<double>(row[j]) - want) <= 4e-7 * std::max(std::fabs(want), 1e-3 * cap));
      }
    }
  }
}

namespace {

/// posenc::attention against sdpa on the same rounded inputs, error / ((1 + A) vmax) with A the
/// uncapped max |logit| (attention/attention.hpp); also checks that the option under test changes
/// the oracle's result by far more than the bound, so the comparison can see it.
template <class T, class E>
void check_fast(const char* what, const fast_inputs<T>& in, const E& enc, posenc::attention_options o,
                posenc::attention_options without, const posenc::fast_attention_options& f = {},
                double bound = fast_bound) {
  const auto ref = run_oracle(in, enc, o);
  const posenc::attention_mask mask(o, in.s.B, in.s.Sq, in.s.Sk);
  const double A = logit_bound(in, enc, o, mask), vmax = in.vmax(), unit = (1 + A) * vmax;
  {
    INFO(what << ": B " << in.s.B << " Sq " << in.s.Sq << " Sk " << in.s.Sk << ", A " << A);
    CHECK(max_diff(run_oracle(in, enc, without), ref) > 20 * fast_bound * unit);
  }
  for (isa which : every_isa()) {
    posenc::kernels::scoped_isa use(which);
    const auto got = run_fast(in, enc, o, f);
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i)
      worst = std::max(worst, std::isfinite(got[i]) ? std::fabs(static_cast<double>(got[i]) - ref[i]) : INFINITY);
    INFO(what << " on " << posenc::kernels::isa_name(which) << ": B " << in.s.B << " Sq " << in.s.Sq << " Sk "
              << in.s.Sk << " Hq " << in.s.Hq << " Hkv " << in.s.Hkv << " D " << in.s.D << ", A " << A
              << ", error / ((1 + A) vmax) " << worst / unit);
    CHECK(worst <= bound * unit);
  }
}

}  // namespace

TEST_CASE("posenc::attention: logit soft-capping within the documented bound on every ISA", "[fast][softcap]") {
  const fast_shape shapes[] = {
      {.B = 2, .Sq = 70, .Sk = 133, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64},    // prefill, packed tiles
      {.B = 2, .Sq = 3, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 100, .Dv = 100},   // in place, D tail
      {.B = 1, .Sq = 1, .Sk = 4500, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},  // decode, keys split and merged
  };
  const posenc::alibi alibi({.num_heads = 8});
  const slope_bias slopes{{-0.5, -0.25, -0.125, -1.0, -0.3, -0.7, -0.05, -2.0}};
  for (const auto& s : shapes) {
    const fast_inputs<float> in(s, 7, 2.0);  // |q|, |k| up to 2: logits up to ~4 sqrt(D), far above the cap
    const std::vector<double> sinks{1.0, -2.0, 0.5, 3.0, 0.0, -1.0, 2.0, 1.5};
    const posenc::attention_options plain{.causal = true};
    posenc::attention_options o = plain;
    o.logit_softcap = 3.0;
    check_fast("softcap", in, posenc::no_position{}, o, plain);
    posenc::attention_options w = o;
    w.sliding_window = 50;
    posenc::attention_options w0 = w;
    w0.logit_softcap.reset();
    check_fast("softcap + sliding window", in, posenc::no_position{}, w, w0);
    check_fast("softcap + ALiBi (distance table)", in, alibi, o, plain);
    check_fast("softcap + slope bias (general path) + sinks", in, slopes,
               posenc::attention_options{.causal = true, .logit_softcap = 3.0, .sinks = sinks},
               posenc::attention_options{.causal = true, .sinks = sinks});
    const fast_inputs<posenc::bfloat16> inb(s, 8, 2.0);
    // the exact kernels keep the fp32 bound; the default takes the bf16 dot products where the CPU
    // has them (q and p rounded to bfloat16: their own bound, docs/attention.md)
    const posenc::rope rope({.head_dim = s.D});
    check_fast("softcap, bfloat16 K/V, exact kernels", inb, rope, o, plain, {.bf16_dot_products = false});
    check_fast("softcap, bfloat16 K/V, default kernels", inb, rope, o, plain, {}, bf16_dot_bound);
  }
}

TEST_CASE("posenc::attention: chunked attention within the documented bound on every ISA", "[fast][chunk]") {
  const fast_shape shapes[] = {
      {.B = 2, .Sq = 70, .Sk = 133, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64},
      {.B = 2, .Sq = 3, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 100, .Dv = 100},
      {.B = 1, .Sq = 1, .Sk = 4500, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
  };
  for (const auto& s : shapes) {
    const fast_inputs<float> in(s, 17);
    // explicit positions starting below zero, so chunks straddle 0 and floor division matters
    const auto pk = posenc_test::batch_positions(s.B, s.Sk, -150),
               pq = posenc_test::batch_positions(s.B, s.Sq, -150 + s.Sk - s.Sq);
    const posenc::attention_options plain{.causal = true, .query_positions = pq, .key_positions = pk};
    for (std::int64_t ch : {std::int64_t{1}, std::int64_t{37}, std::int64_t{64}, std::int64_t{100}}) {
      posenc::attention_options o = plain;
      o.attention_chunk = ch;
      INFO("chunk " << ch);
      check_fast("chunk + explicit negative positions", in, posenc::rope({.head_dim = static_cast<int>(s.D)}), o,
                 plain);
    }
    // padding: the second sequence's keys end inside an earlier chunk than its queries
    const std::vector<std::int64_t> lengths{s.Sk, s.Sk - 90};
    std::vector<std::int64_t> lens(lengths.begin(), lengths.begin() + s.B);
    posenc::attention_options p{.causal = true, .attention_chunk = 64, .key_lengths = lens};
    posenc::attention_options p0 = p;
    p0.attention_chunk.reset();
    check_fast("chunk + key_lengths", in, posenc::no_position{}, p, p0);
    posenc::attention_options all = p;
    all.sliding_window = 60;  // reaches past the chunk start of every query here, so both matter
    all.logit_softcap = 2.0;
    posenc::attention_options all0 = all;
    all0.attention_chunk.reset();
    check_fast("chunk + key_lengths + window + softcap", in, posenc::alibi({.num_heads = s.Hq}), all, all0);
  }
}

TEST_CASE("kv_cache::attend passes attention chunks and soft-capping through", "[kv_cache][chunk][softcap]") {
  const std::ptrdiff_t B = 2, S = 40, Hq = 4, Hkv = 2, D = 16;
  const posenc::rope rope({.head_dim = D});
  const posenc::attention_options opts{.causal = true, .attention_chunk = 7, .logit_softcap = 1.5};
  auto check = [&]<class T>(T, double tol) {
    tensor4<T> q(B, S, Hq, D, 3), k(B, S, Hkv, D, 4), v(B, S, Hkv, D, 5);
    for (auto* t : {&q, &k})
      for (T& x : t->data) x *= T(3);  // logits well above the cap
    const auto p = posenc_test::batch_positions(B, S, 0);
    tensor4<T> full(B, S, Hq, D), uncapped(B, S, Hq, D);
    posenc::attention_options o = opts;
    o.query_positions = p;
    o.key_positions = p;
    posenc::sdpa(q.cview(), k.cview(), v.cview(), full.view(), rope, o);
    o.logit_softcap.reset();
    o.attention_chunk.reset();
    posenc::sdpa(q.cview(), k.cview(), v.cview(), uncapped.view(), rope, o);
    posenc::kv_cache<T> cache({.batch = B, .kv_heads = Hkv, .head_dim = D});
    tensor4<T> got(B, S, Hq, D);
    for (std::ptrdiff_t t = 0; t < S; ++t) {  // decode token by token
      tensor4<T> qt(B, 1, Hq, D), kt(B, 1, Hkv, D), vt(B, 1, Hkv, D), ot(B, 1, Hq, D);
      for (std::ptrdiff_t b = 0; b < B; ++b) {
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) qt.at(b, 0, h, d) = q.at(b, t, h, d);
        for (std::ptrdiff_t h = 0; h < Hkv; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d)
            kt.at(b, 0, h, d) = k.at(b, t, h, d), vt.at(b, 0, h, d) = v.at(b, t, h, d);
      }
      const auto pt = posenc_test::batch_positions(B, 1, t);
      REQUIRE(cache.append(rope, kt.cview(), vt.cview(), pt) == posenc::cache_event::none);
      cache.attend(rope, qt.cview(), ot.view(), pt, opts);
      for (std::ptrdiff_t b = 0; b < B; ++b)
        for (std::ptrdiff_t h = 0; h < Hq; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) got.at(b, t, h, d) = ot.at(b, 0, h, d);
    }
    double diff = 0, effect = 0;
    for (std::size_t i = 0; i < got.data.size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(got.data[i]) - static_cast<double>(full.data[i])));
      effect = std::max(effect, std::fabs(static_cast<double>(uncapped.data[i]) - static_cast<double>(full.data[i])));
    }
    CHECK(diff <= tol);
    CHECK(effect > 1e-2);
  };
  check(0.0, 1e-12);  // double cache: sdpa
  check(0.0f, 2e-5);  // float cache: posenc::attention
}

TEST_CASE("attention_chunk and logit_softcap: invalid values are config_errors naming the field",
          "[sdpa][fast][chunk][softcap]") {
  const fast_shape s{.B = 1, .Sq = 2, .Sk = 3, .Hq = 2, .Hkv = 1, .D = 8, .Dv = 8};
  const fast_inputs<float> in(s, 3);
  auto both = [&](const posenc::attention_options& o, const char* field) {
    CHECK_THROWS_AS(run_oracle(in, posenc::no_position{}, o), posenc::config_error);
    CHECK_THROWS_WITH(run_oracle(in, posenc::no_position{}, o), Catch::Contains(field));
    CHECK_THROWS_AS(run_fast(in, posenc::no_position{}, o), posenc::config_error);
    CHECK_THROWS_WITH(run_fast(in, posenc::no_position{}, o), Catch::Contains(field));
  };
  for (std::int64_t ch : {std::int64_t{0}, std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()})
    both({.attention_chunk = ch}, "attention.attention_chunk");
  for (double cap : {0.0, -0.0, -1.0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()})
    both({.logit_softcap = cap}, "attention.logit_softcap");

  posenc::kv_cache<float> cache({.batch = 1, .kv_heads = 1, .head_dim = 8});
  tensor4<float> k(1, 3, 1, 8, 1), v(1, 3, 1, 8, 2), q(1, 1, 2, 8, 3), out(1, 1, 2, 8);
  const auto p = posenc_test::batch_positions(1, 3, 0), pq = posenc_test::batch_positions(1, 1, 2);
  REQUIRE(cache.append(posenc::no_position{}, k.cview(), v.cview(), p) == posenc::cache_event::none);
  CHECK_THROWS_WITH(cache.attend(posenc::no_position{}, q.cview(), out.view(), pq, {.attention_chunk = 0}),
                    Catch::Contains("attention.attention_chunk"));
  CHECK_THROWS_WITH(cache.attend(posenc::no_position{}, q.cview(), out.view(), pq, {.logit_softcap = -2.0}),
                    Catch::Contains("attention.logit_softcap"));
  // valid extremes run
  CHECK_NOTHROW(run_fast(in, posenc::no_position{},
                         {.attention_chunk = std::numeric_limits<std::int64_t>::max(), .logit_softcap = 1e300}));
  CHECK_NOTHROW(run_fast(in, posenc::no_position{}, {.logit_softcap = 1e-300}));
}
