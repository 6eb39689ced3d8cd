// tests/extreme/extreme_test.cpp — extreme inputs: positions INT64_MIN, INT64_MAX and
// their neighbours through every encoder, mask and table; sizes whose products overflow; empty,
// zero-length and maximal views. Each gives the documented result (checked against a 128-bit
// oracle) or throws config_error / shape_error naming the parameter.
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/eigen_interop.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/core/checked.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/cos_sin_table.hpp>
#include <posenc/rope/permute.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "support/check.hpp"

using posenc_test::error_of;

namespace {

__extension__ typedef __int128 i128;  // the oracle: every int64 difference fits

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

/// INT64_MIN, INT64_MAX, their neighbours, and a few ordinary positions.
const std::vector<std::int64_t> extremes = {kMin,
                                            kMin + 1,
                                            kMin + 2,
                                            -(std::int64_t{1} << 62),
                                            -2,
                                            -1,
                                            0,
                                            1,
                                            2,
                                            std::int64_t{1} << 53,
                                            (std::int64_t{1} << 62),
                                            kMax - 2,
                                            kMax - 1,
                                            kMax};

i128 diff(std::int64_t a, std::int64_t b) {
  return static_cast<i128>(a) - static_cast<i128>(b);
}
std::int64_t clamp64(i128 v) {
  return v > kMax ? kMax : v < kMin ? kMin : static_cast<std::int64_t>(v);
}

/// True when f() ends the process with SIGABRT (POSENC_EXPECTS); runs f in a forked child.
template <class F>
bool aborts(F&& f) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not Catch's handler: the parent judges how the child ended
    (void)std::freopen("/dev/null", "w", stderr);
    f();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = 0.25f + 0.125f * static_cast<float>(i % 7) - 0.0625f * static_cast<float>(i % 3);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- core/checked.hpp

TEST_CASE("checked arithmetic: exact differences and range tests at the int64 edges", "[extreme][checked]") {
  for (const auto a : extremes)
    for (const auto b : extremes) {
      INFO(a << " - " << b);
      const i128 d = diff(a, b);
      CHECK(posenc::detail::saturating_difference(a, b) == clamp64(d));
      CHECK(posenc::detail::difference_as_double(a, b) == static_cast<double>(d));
      CHECK(static_cast<i128>(posenc::detail::distance_magnitude(a, b)) == (d < 0 ? -d : d));
      for (const std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{8}, kMax}) {
        const bool want = d >= 0 && d < count;
        CHECK(posenc::detail::in_range(a, b, count) == want);
      }
    }
}

TEST_CASE("checked arithmetic: products and sums throw naming the parameter", "[extreme][checked]") {
  using posenc::detail::checked_product;
  using posenc::detail::checked_sum;
  CHECK(checked_product("x", {{"a", 3}, {"b", 5}}) == 15);
  CHECK(checked_product("x", {{"a", 0}, {"b", kMax}, {"c", kMax}}) == 0);
  CHECK(checked_product("x", {{"a", kMax}, {"b", 1}}) == kMax);
  CHECK(checked_product("x", {{"a", std::int64_t{1} << 31}, {"b", std::int64_t{1} << 31}}, std::int64_t{1} << 62) ==
        std::int64_t{1} << 62);
  const auto msg = error_of(
      [] {
        (void)checked_product("kv.capacity", {{"a", std::int64_t{1} << 32}, {"b", std::int64_t{1} << 32}});
      },
      "kv.capacity");
  CHECK(msg.find("a * b = 4294967296 * 4294967296") != std::string::npos);
  error_of([] { (void)checked_product("p", {{"a", 4}, {"b", 4}}, 15); }, "p");
  error_of([] { (void)checked_product("p", {{"a", -1}, {"b", 0}}); }, "p");
  CHECK_THROWS_AS(posenc::detail::checked_product<posenc::shape_error>("s", {{"a", kMax}, {"b", 2}}),
                  posenc::shape_error);
  CHECK(checked_sum("x", {{"a", kMax - 1}, {"b", 1}}) == kMax);
  error_of([] { (void)checked_sum("len", {{"a", kMax}, {"b", 1}}); }, "len");
  error_of([] { (void)checked_sum("len", {{"a", -1}}); }, "len");
}

// ---------------------------------------------------------------- masks

TEST_CASE("mask: causal and sliding window on the true position difference", "[extreme][mask]") {
  for (const bool causal : {false, true})
    for (const std::int64_t window : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4}, kMax}) {
      std::vector<std::int64_t> pq, pk;
      for (const auto a : extremes)
        for (const auto b : extremes) {
          pq.push_back(a);
          pk.push_back(b);
        }
      // One query per sequence, one key per sequence: every (query, key) pair of extremes.
      const auto n = static_cast<std::ptrdiff_t>(pq.size());
      posenc::attention_options o{.causal = causal, .query_positions = pq, .key_positions = pk};
      if (window > 0) o.sliding_window = window;
      const posenc::attention_mask m(o, n, 1, 1);
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        const i128 d = diff(pq[static_cast<std::size_t>(i)], pk[static_cast<std::size_t>(i)]);
        bool want = !(causal && d < 0);
        if (window > 0) want = want && d < window && (causal || -d < window);
        INFO("query " << pq[static_cast<std::size_t>(i)] << " key " << pk[static_cast<std::size_t>(i)] << " causal "
                      << causal << " window " << window);
        CHECK(m.allowed(i, 0, 0) == want);
      }
    }
  // The case: query 0, key INT64_MIN: causal allows it (key_pos <= query_pos), a window refuses it.
  const std::vector<std::int64_t> q{0}, k{kMin};
  CHECK(posenc::attention_mask({.causal = true, .query_positions = q, .key_positions = k}, 1, 1, 1).allowed(0, 0, 0));
  CHECK_FALSE(posenc::attention_mask({.sliding_window = 8, .query_positions = q, .key_positions = k}, 1, 1, 1)
                  .allowed(0, 0, 0));
}

TEST_CASE("mask: sizes whose products overflow are shape errors", "[extreme][mask]") {
  const std::ptrdiff_t big = std::ptrdiff_t{1} << 32;
  error_of([&] { posenc::attention_mask m({}, big, big, 1); }, "attention.query_positions");
  error_of([&] { posenc::attention_mask m({}, 1, 1, -1); }, "attention.extents");
  const posenc::attention_mask empty({.causal = true}, 0, 0, 0);
  CHECK(empty.materialize().empty());
  const posenc::attention_mask no_keys({.causal = true}, 2, 3, 0);
  CHECK(no_keys.materialize().empty());
}

// ---------------------------------------------------------------- score-bias and relative encoders

TEST_CASE("alibi: the bias of any two int64 positions is the true distance, rounded once", "[extreme][alibi]") {
  for (const auto mode : {posenc::alibi_mode::symmetric, posenc::alibi_mode::causal_true_distance,
                          posenc::alibi_mode::causal_row_shift}) {
    const posenc::alibi a({.num_heads = 4, .mode = mode});
    for (std::ptrdiff_t h = 0; h < 4; ++h)
      for (const auto q : extremes)
        for (const auto k : extremes) {
          const double m = a.slopes()[static_cast<std::size_t>(h)];
          const i128 d = diff(q, k);
          const double want = mode == posenc::alibi_mode::symmetric ? -m * static_cast<double>(d < 0 ? -d : d)
                              : mode == posenc::alibi_mode::causal_true_distance ? m * static_cast<double>(-d)
                                                                                 : m * static_cast<double>(k);
          INFO("q " << q << " k " << k << " h " << h);
          CHECK(a.bias(h, q, k) == want);
          CHECK(std::isfinite(a.bias(h, q, k)));
        }
  }
}

TEST_CASE("t5: the bucket of any two int64 positions is that of the true distance", "[extreme][t5]") {
  for (const bool bidirectional : {true, false}) {
    const posenc::t5_bias_config c{
        .num_buckets = 32, .max_distance = 128, .bidirectional = bidirectional, .num_heads = 2};
    std::vector<double> table(64);
    for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<double>(i);
    const posenc::t5_bias bias(c, std::span<const double>(table));
    for (const auto q : extremes)
      for (const auto k : extremes) {
        // The true distance key - query, saturated where every bucket has long saturated; the float32
        // reference agrees on the bucket for any int64 distance.
        const int want = posenc::t5_bucket_reference_fp32(clamp64(diff(k, q)), bidirectional, 32, 128);
        INFO("q " << q << " k " << k);
        CHECK(bias.bias(1, q, k) == table[static_cast<std::size_t>(want * 2 + 1)]);
      }
    // Saturation: the largest distances in each direction land in the last bucket of their half.
    const posenc::t5_buckets b(c);
    CHECK(b(kMax) == (bidirectional ? 31 : 0));
    CHECK(b(kMin) == (bidirectional ? 15 : 31));
  }
}

TEST_CASE("shaw: the table row of any two int64 positions is the clipped true distance", "[extreme][shaw]") {
  for (const auto sign : {posenc::shaw_sign::key_minus_query, posenc::shaw_sign::query_minus_key}) {
    posenc::shaw_relative_config c = posenc::shaw_relative_config::symmetric(3, 2);
    c.sign = sign;
    const std::vector<double> table(static_cast<std::size_t>(c.table_rows() * 2), 1.0);
    const posenc::shaw_relative s(c, table, table);
    for (const auto q : extremes)
      for (const auto k : extremes) {
        const i128 d = sign == posenc::shaw_sign::key_minus_query ? diff(k, q) : diff(q, k);
        const i128 want = (d < -3 ? -3 : d > 3 ? 3 : d) + 3;
        INFO("q " << q << " k " << k);
        CHECK(s.index(q, k) == static_cast<std::int64_t>(want));
      }
  }
  // Unclipped (BERT relative_key): distances beyond the int64 range are reported, never wrapped into range.
  const posenc::shaw_relative_config bert = posenc::shaw_relative_config::bert_relative_key(4, 2);
  const std::vector<double> kt(static_cast<std::size_t>(bert.table_rows() * 2), 1.0);
  const posenc::shaw_relative s(bert, kt, {});
  const std::vector<std::int64_t> q{kMax}, k{kMin}, near{kMax - 3};
  error_of([&] { s.check_positions(q, k); }, "shaw.relative_distance");
  error_of([&] { s.check_positions(k, q); }, "shaw.relative_distance");
  CHECK_NOTHROW(s.check_positions(q, near));
  // Table sizes whose product overflows.
  posenc::shaw_relative_config huge =
      posenc::shaw_relative_config::symmetric(std::int64_t{1} << 40, std::ptrdiff_t{1} << 40);
  error_of([&] { posenc::shaw_relative r(huge, std::span<const double>{}, std::span<const double>{}); },
           "shaw.key_table.size");
}

// ---------------------------------------------------------------- additive encoders

TEST_CASE("learned_absolute: positions at the int64 edges follow the out-of-range policy", "[extreme][learned]") {
  const std::vector<double> table = {1, 2, 3, 4, 5, 6};  // [3, 2]
  const posenc::learned_absolute err({.max_len = 3, .model_dim = 2, .offset = 2}, std::span<const double>(table));
  const posenc::learned_absolute clamp(
      {.max_len = 3, .model_dim = 2, .offset = 2, .out_of_range = posenc::out_of_range_policy::clamp_to_last},
      std::span<const double>(table));
  const posenc::learned_absolute zero(
      {.max_len = 3, .model_dim = 2, .offset = 2, .out_of_range = posenc::out_of_range_policy::zero},
      std::span<const double>(table));
  CHECK(err.lookup(0)[0] == 5);
  for (const auto p : {std::int64_t{1}, kMax - 2, kMax - 1, kMax}) {
    INFO(p);
    error_of([&] { (void)err.lookup(p); }, "position");
    CHECK(clamp.lookup(p)[0] == 5);
    CHECK(zero.lookup(p).empty());
  }
  for (const auto p : {kMin, kMin + 1, std::int64_t{-1}}) error_of([&] { (void)clamp.lookup(p); }, "position");
  std::vector<double> row(3);
  error_of([&] { err.add(0, std::span<double>(row)); }, "row.size");
}

TEST_CASE("sinusoidal: positions beyond 2^62 are config errors, never wrapped rows", "[extreme][sinusoidal]") {
  const posenc::sinusoidal s({.d_model = 4, .allow_negative = true});
  std::vector<double> row(4), wrong(3);
  for (const auto p : extremes) {
    INFO(p);
    if (p >= -(std::int64_t{1} << 62) && p <= (std::int64_t{1} << 62)) {
      s.encode(p, std::span<double>(row));
      for (const double v : row) CHECK(std::isfinite(v));
    } else {
      error_of([&] { s.encode(p, std::span<double>(row)); }, "position");
    }
  }
  error_of([&] { s.encode(0, std::span<double>(wrong)); }, "row.size");
}

// ---------------------------------------------------------------- RoPE, tables, xPos

TEST_CASE("cos_sin_table: membership and rows at the int64 edges", "[extreme][table]") {
  const posenc::rope r({.head_dim = 8});
  const auto& f = r.base_frequencies();
  // The case: first = -4, count = 8 does not contain INT64_MAX - 1 (p - first wraps).
  const posenc::cos_sin_table<float> t(f, -4, 8);
  CHECK_FALSE(t.contains(kMax - 1));
  CHECK_FALSE(t.contains(kMax));
  CHECK_FALSE(t.contains(kMin));
  CHECK(t.contains(-4));
  CHECK(t.contains(3));
  CHECK_FALSE(t.contains(4));
  // Tables at both ends of the int64 range: every row equals the on-the-fly row of its position.
  for (const std::int64_t first : {kMin, kMax - 3}) {
    const posenc::cos_sin_table<double> edge(f, first, 3);
    for (const auto p : extremes) CHECK(edge.contains(p) == (diff(p, first) >= 0 && diff(p, first) < 3));
    for (std::int64_t i = 0; i < 3; ++i) {
      const std::int64_t p = first + i;
      const posenc::cos_sin_table<double> one(f, p, 1);
      for (int k = 0; k < edge.pairs(); ++k) {
        CHECK(edge.cos_row(p)[k] == one.cos_row(p)[k]);
        CHECK(edge.sin_row(p)[k] == one.sin_row(p)[k]);
        CHECK(std::fabs(edge.cos_row(p)[k]) <= 1.0);
      }
    }
  }
  CHECK(posenc::cos_sin_table<float>(f, kMax, 0).count() == 0);
  error_of([&] { posenc::cos_sin_table<float> x(f, 0, std::int64_t{1} << 62); }, "cos_sin_table.count");
  CHECK(posenc::cos_sin_table<float>(f, kMax, 1).contains(kMax));  // every int64 position has a row
  error_of([&] { posenc::cos_sin_table<float> x(f, kMax - 1, 3); }, "cos_sin_table.first");
  error_of([&] { posenc::cos_sin_table<float> x(f, kMin, kMax); }, "cos_sin_table.count");
  error_of([&] { posenc::cos_sin_table<float> x(f, 0, -1); }, "cos_sin_table.count");
  // A row outside the table aborts in every build instead of reading another row.
  CHECK(aborts([&] { (void)t.cos_row(kMax - 1); }));
}

TEST_CASE("rope: every int64 position rotates (norm kept), tables agree, bad sizes abort", "[extreme][rope]") {
  for (const auto mode : {posenc::angle_mode::exact, posenc::angle_mode::reference_fp32}) {
    const posenc::rope r({.head_dim = 8, .theta = 1e4, .angles = mode});
    const auto n = static_cast<std::ptrdiff_t>(extremes.size());
    auto x = ramp(static_cast<std::size_t>(n * 2 * 8));
    auto y = x;
    r.transform_q(posenc::tensor_view<float>::bthd(x.data(), 1, n, 2, 8), extremes);
    for (std::ptrdiff_t t = 0; t < n * 2; ++t) {
      double a = 0, b = 0;
      for (std::ptrdiff_t d = 0; d < 8; ++d) {
        const auto i = static_cast<std::size_t>(t * 8 + d);
        REQUIRE(std::isfinite(x[i]));
        a += double(x[i]) * x[i];
        b += double(y[i]) * y[i];
      }
      CHECK(std::fabs(a - b) <= 1e-5 * b);
    }
    // A table covering the last positions of the range gives the rows the on-the-fly path gives.
    const posenc::cos_sin_table<float> table(r.base_frequencies(), kMax - 2, 3, mode);
    auto z = y;
    r.rotate(posenc::tensor_view<float>::bthd(z.data(), 1, n, 2, 8), extremes, table);
    for (std::size_t i = 0; i < z.size(); ++i) CHECK(z[i] == x[i]);
  }
  const posenc::rope r({.head_dim = 8});
  std::vector<float> x(16, 1.0f);
  const auto v = posenc::tensor_view<float>::bthd(x.data(), 1, 2, 1, 8);
  // Empty and zero-length views: nothing to do, nothing read.
  r.transform_q(posenc::tensor_view<float>::bthd(nullptr, 0, 0, 0, 8), {});
  r.transform_q(posenc::tensor_view<float>::bthd(x.data(), 1, 0, 1, 8), {});
  r.transform_q(posenc::tensor_view<float>::bthd(x.data(), 1, 2, 0, 8), std::vector<std::int64_t>{0, 1});
  for (const float e : x) CHECK(e == 1.0f);
  // Wrong sizes throw shape_error in every build (release too) rather than read past a row or the positions.
  const std::vector<std::int64_t> two{0, 1}, one{0};
  posenc::rope_frequencies wrong = r.base_frequencies();
  wrong.inv_freq.pop_back();
  CHECK_THROWS_AS(r.rotate(v, two, wrong), posenc::shape_error);
  CHECK_THROWS_AS(r.rotate_delta(v, two, wrong), posenc::shape_error);
  CHECK_THROWS_AS(r.rerotate(v, two, wrong, r.base_frequencies()), posenc::shape_error);
  CHECK_THROWS_AS(r.rerotate(v, two, r.base_frequencies(), wrong), posenc::shape_error);
  CHECK_THROWS_AS(r.rotate_delta(v, one, r.base_frequencies()), posenc::shape_error);
  CHECK_THROWS_AS(r.transform_q(v, one), posenc::shape_error);
  CHECK_THROWS_AS(r.transform_k(posenc::tensor_view<float>::bthd(x.data(), 1, 2, 2, 4), two), posenc::shape_error);
  const posenc::cos_sin_table<float> small(posenc::rope({.head_dim = 4}).base_frequencies(), 0, 2);
  CHECK_THROWS_AS(r.rotate(v, two, small), posenc::shape_error);
  for (const float e : x) CHECK(e == 1.0f);  // nothing was rotated before the throw
  CHECK_FALSE(aborts([&] { r.rotate(v, two, r.base_frequencies()); }));
}

TEST_CASE("rope: length-dependent and scaled schedules at the int64 edges stay finite and keep the norm",
          "[extreme][rope]") {
  std::vector<double> sf(4, 1.0), lf(4, 2.0);
  const std::vector<posenc::rope_config> configs = {
      {.head_dim = 8, .scaling = posenc::dynamic_ntk_scaling{.factor = 2, .original_max_position = 16}},
      {.head_dim = 8, .scaling = posenc::yarn_scaling{.factor = 4, .original_max_position = 16}},
      {.head_dim = 8, .scaling = posenc::linear_scaling{.factor = 4}},
      {.head_dim = 8,
       .scaling =
           posenc::longrope_scaling{.short_factor = sf, .long_factor = lf, .original_max_position = 16, .factor = 4.0}},
  };
  for (const auto& c : configs) {
    const posenc::rope r(c);
    CHECK(r.effective_length(extremes) == kMax);  // max + 1 saturates
    const auto f = r.effective_frequencies(extremes);
    for (const double w : f.inv_freq) CHECK((std::isfinite(w) && w >= 0));
    for (const auto p : extremes) {
      const std::vector<std::int64_t> one{p};
      auto x = ramp(8);
      const auto y = x;
      r.transform_k(posenc::tensor_view<float>::bthd(x.data(), 1, 1, 1, 8), one);
      double a = 0, b = 0;
      for (std::size_t i = 0; i < 8; ++i) {
        REQUIRE(std::isfinite(x[i]));
        a += double(x[i]) * x[i];
        b += double(y[i]) * y[i];
      }
      const double m = r.effective_frequencies(one).attention_scaling;
      CHECK(a == Approx(b * m * m).epsilon(1e-5));
    }
  }
}

TEST_CASE("xpos: the per-call centre at the int64 edges", "[extreme][xpos]") {
  const posenc::xpos x({.head_dim = 4, .center_policy = posenc::xpos_center_policy::midpoint_of_call});
  const std::vector<std::int64_t> top{kMax}, low{kMin}, minus_one{-1}, zero{0};
  CHECK(x.center_of(top) == kMax / 2 + 1);  // ceil((INT64_MAX + 1) / 2) = 2^62
  CHECK(x.center_of(low) == kMin / 2 + 1);  // ceil((INT64_MIN + 1) / 2)
  CHECK(x.center_of(minus_one) == 0);
  CHECK(x.center_of(zero) == 1);
  std::vector<float> v(8, 1.0f);
  CHECK_THROWS_AS(x.transform_q(posenc::tensor_view<float>::bthd(v.data(), 1, 2, 1, 4), zero), posenc::shape_error);
}

// ---------------------------------------------------------------- views

TEST_CASE("tensor_view: overflowing sizes and overlapping writable views are rejected", "[extreme][view]") {
  using V = posenc::tensor_view<float>;
  using CV = posenc::tensor_view<const float>;
  float buf[64] = {};
  const std::ptrdiff_t big = std::ptrdiff_t{1} << 32;
  error_of([&] { (void)V::strided(buf, {big, big, 1, 1}, {1, 1, 1, 1}); }, "tensor_view.size");
  error_of([&] { (void)V::bthd(buf, 1, big, big, 2); }, "tensor_view.size");
  error_of([&] { (void)V::bhtd(buf, 1, big, big, 2); }, "tensor_view.size");
  error_of([&] { (void)V::bthd(buf, 1, 2, -1, 2); }, "tensor_view.heads");
  // A head stride of 0 on a writable view would rotate the same row once per head.
  error_of([&] { (void)V::strided(buf, {1, 2, 4, 8}, {64, 8, 0, 1}); }, "tensor_view.strides");
  error_of([&] { (void)V::strided(buf, {1, 2, 4, 8}, {64, 8, 4, 1}); }, "tensor_view.strides");  // rows overlap
  error_of([&] { (void)V::strided(buf, {1, 2, 2, 8}, {0, 1, 2, -1}); }, "tensor_view.strides");
  // ... while a view of const may broadcast, and a writable one may use any non-overlapping order.
  CHECK(CV::strided(buf, {1, 2, 4, 8}, {0, 8, 0, 1}).size() == 64);
  CHECK(V::strided(buf, {1, 2, 4, 8}, {64, 1, 2, 8}).size() == 64);  // dims outermost
  CHECK(V::strided(buf + 63, {1, 2, 4, 8}, {-64, -32, -8, -1}).size() == 64);
  CHECK(V::strided(buf, {1, 1, 1, 8}, {kMax, kMax, 0, 1}).size() == 8);  // extent-1 strides are never used
  CHECK(V::strided(nullptr, {0, 5, 5, 5}, {0, 0, 0, 0}).empty());
  // Offsets that do not fit ptrdiff_t (even for const views).
  error_of([&] { (void)CV::strided(buf, {1, 2, 1, 8}, {1, kMax, 1, 1}); }, "tensor_view.strides");
  // overlaps(): spans of memory.
  const auto a = V::bthd(buf, 1, 2, 1, 8), b = V::bthd(buf + 16, 1, 2, 1, 8), c = V::bthd(buf + 8, 1, 1, 1, 8);
  CHECK_FALSE(posenc::overlaps(a, b));
  CHECK(posenc::overlaps(a, c));
  CHECK(posenc::overlaps(V::strided(buf + 15, {1, 2, 1, 8}, {16, 8, 8, -1}), a));
  CHECK_FALSE(posenc::overlaps(V::bthd(buf, 0, 2, 1, 8), a));
}

// ---------------------------------------------------------------- attention

TEST_CASE("sdpa: out in place over q with Dv > D equals a separate out; out over k or v is rejected",
          "[extreme][sdpa]") {
  const std::ptrdiff_t B = 1, S = 3, H = 2, D = 2, Dv = 4;
  const auto k = ramp(static_cast<std::size_t>(B * S * H * D)), v = ramp(static_cast<std::size_t>(B * S * H * Dv + 5));
  std::vector<float> shared(static_cast<std::size_t>(B * S * H * Dv)), qsep(static_cast<std::size_t>(B * S * H * D));
  const auto qv = ramp(qsep.size() + 3);
  for (std::size_t i = 0; i < qsep.size(); ++i) qsep[i] = qv[i + 3];
  // q packed densely (D per row) at the start of the buffer out then fills (Dv per row): writing
  // out row r overwrites q rows not yet read unless q is read from a copy.
  for (std::ptrdiff_t r = 0; r < B * S * H; ++r)
    for (std::ptrdiff_t d = 0; d < D; ++d)
      shared[static_cast<std::size_t>(r * D + d)] = qsep[static_cast<std::size_t>(r * D + d)];
  using CV = posenc::tensor_view<const float>;
  const posenc::rope enc({.head_dim = D});
  const auto kv = CV::bthd(k.data(), B, S, H, D), vv = CV::bthd(v.data(), B, S, H, Dv);
  std::vector<float> expect(shared.size());
  posenc::sdpa(CV::bthd(qsep.data(), B, S, H, D), kv, vv, posenc::tensor_view<float>::bthd(expect.data(), B, S, H, Dv),
               enc, {.causal = true});
  posenc::sdpa(CV::bthd(shared.data(), B, S, H, D), kv, vv,
               posenc::tensor_view<float>::bthd(shared.data(), B, S, H, Dv), enc, {.causal = true});
  for (std::size_t i = 0; i < shared.size(); ++i) CHECK(shared[i] == expect[i]);
  // The same without a query transform (q is then not copied by the encoder hook).
  posenc::sdpa(CV::bthd(qsep.data(), B, S, H, D), kv, vv, posenc::tensor_view<float>::bthd(expect.data(), B, S, H, Dv),
               posenc::no_position{});
  for (std::ptrdiff_t r = 0; r < B * S * H; ++r)
    for (std::ptrdiff_t d = 0; d < D; ++d)
      shared[static_cast<std::size_t>(r * D + d)] = qsep[static_cast<std::size_t>(r * D + d)];
  posenc::sdpa(CV::bthd(shared.data(), B, S, H, D), kv, vv,
               posenc::tensor_view<float>::bthd(shared.data(), B, S, H, Dv), posenc::no_position{});
  for (std::size_t i = 0; i < shared.size(); ++i) CHECK(shared[i] == expect[i]);
  // out over k or v.
  std::vector<float> kbuf(k.begin(), k.end()), vbuf(v.begin(), v.end());
  const auto q = CV::bthd(qsep.data(), B, S, H, D);
  error_of(
      [&] {
        posenc::sdpa(q, CV::bthd(kbuf.data(), B, S, H, D), vv,
                     posenc::tensor_view<float>::bthd(kbuf.data(), B, S, H, Dv), posenc::no_position{});
      },
      "out");
  error_of(
      [&] {
        posenc::sdpa(q, kv, CV::bthd(vbuf.data(), B, S, H, Dv),
                     posenc::tensor_view<float>::bthd(vbuf.data() + 5, B, S, H, Dv), posenc::no_position{});
      },
      "out");
}

TEST_CASE("sdpa: empty and zero-length views, extreme positions with every bias encoder", "[extreme][sdpa]") {
  using CV = posenc::tensor_view<const float>;
  using V = posenc::tensor_view<float>;
  std::vector<float> out(8, 7.0f);
  const std::vector<float> q = ramp(8), k = ramp(8), v = ramp(8);
  // No keys: every row attends to nothing and gives zeros.
  posenc::sdpa(CV::bthd(q.data(), 1, 2, 2, 2), CV::bthd(k.data(), 1, 0, 2, 2), CV::bthd(v.data(), 1, 0, 2, 2),
               V::bthd(out.data(), 1, 2, 2, 2), posenc::no_position{});
  for (const float e : out) CHECK(e == 0.0f);
  // No queries, no batch: nothing written.
  posenc::sdpa(CV::bthd(q.data(), 1, 0, 2, 2), CV::bthd(k.data(), 1, 2, 2, 2), CV::bthd(v.data(), 1, 2, 2, 2),
               V::bthd(out.data(), 1, 0, 2, 2), posenc::no_position{});
  posenc::sdpa(CV::bthd(nullptr, 0, 2, 2, 2), CV::bthd(nullptr, 0, 2, 2, 2), CV::bthd(nullptr, 0, 2, 2, 2),
               V::bthd(nullptr, 0, 2, 2, 2), posenc::no_position{});
  // Positions at both ends of the int64 range, causal: the query at INT64_MAX sees both keys, the
  // one at INT64_MIN only its own; every bias stays finite, so every output is finite.
  const std::vector<std::int64_t> pq{kMin, kMax}, pk{kMin, kMax};
  std::vector<double> w(8);
  const posenc::alibi al({.num_heads = 2});
  std::vector<double> t5t(64, 0.5);
  const posenc::t5_bias t5({.num_heads = 2}, std::span<const double>(t5t));
  const auto run = [&](const auto& enc) {
    posenc::sdpa(CV::bthd(q.data(), 1, 2, 2, 2), CV::bthd(k.data(), 1, 2, 2, 2), CV::bthd(v.data(), 1, 2, 2, 2),
                 V::bthd(out.data(), 1, 2, 2, 2), enc,
                 {.causal = true, .query_positions = pq, .key_positions = pk, .weights = w});
    for (const float e : out) CHECK(std::isfinite(e));
    for (std::size_t h = 0; h < 2; ++h) {
      CHECK(w[h * 4 + 0] == 1.0);  // query INT64_MIN: only key INT64_MIN
      CHECK(w[h * 4 + 1] == 0.0);
      CHECK(w[h * 4 + 2] + w[h * 4 + 3] == Approx(1.0));
    }
  };
  run(posenc::no_position{});
  run(al);
  run(t5);
  run(posenc::rope({.head_dim = 2}));
  run(posenc::combine(posenc::rope({.head_dim = 2}), al));
  // weights of a size that overflows.
  std::vector<double> tiny(1);
  error_of(
      [&] {
        posenc::sdpa(CV::bthd(q.data(), 1, 2, 2, 2), CV::bthd(k.data(), 1, 2, 2, 2), CV::bthd(v.data(), 1, 2, 2, 2),
                     V::bthd(out.data(), 1, 2, 2, 2), posenc::no_position{}, {.weights = tiny});
      },
      "attention.weights");
}

TEST_CASE("kv_cache: capacities whose sizes overflow are config errors naming the parameter", "[extreme][kv]") {
  using posenc::kv_cache;
  const std::ptrdiff_t big = (std::ptrdiff_t{1} << 62) + 1;
  error_of([&] { kv_cache<float> c({.kv_heads = 1, .head_dim = 4, .capacity = big}); }, "kv_cache.capacity");
  error_of(
      [&] {
        kv_cache<float> c({.batch = std::ptrdiff_t{1} << 40, .kv_heads = std::ptrdiff_t{1} << 40, .head_dim = 4});
      },
      "kv_cache.head_dim");
  error_of([&] { kv_cache<double> c({.kv_heads = 1, .head_dim = 1, .value_dim = PTRDIFF_MAX}); }, "kv_cache.value_dim");
  kv_cache<float> c({.kv_heads = 1, .head_dim = 4});
  error_of([&] { c.reserve(PTRDIFF_MAX); }, "kv_cache.capacity");
  CHECK(c.capacity() == 0);
  {  // growth doubles (amortised appends), the doubling itself saturating before any overflow
    kv_cache<float> g({.kv_heads = 1, .head_dim = 4});
    const auto one = ramp(4);
    for (const std::ptrdiff_t want : {1, 2, 4, 4, 8}) {
      const std::vector<std::int64_t> p1{g.length()};
      (void)g.append(posenc::no_position{}, posenc::tensor_view<const float>::bthd(one.data(), 1, 1, 1, 4),
                     posenc::tensor_view<const float>::bthd(one.data(), 1, 1, 1, 4), p1);
      CHECK(g.capacity() == want);
    }
  }
  // Appends at the int64 edges; attention over them uses the true differences.
  const posenc::rope enc({.head_dim = 4});
  const auto k = ramp(8), v = ramp(8), q = ramp(4);
  const std::vector<std::int64_t> p{kMin, kMax};
  (void)c.append(enc, posenc::tensor_view<const float>::bthd(k.data(), 1, 2, 1, 4),
                 posenc::tensor_view<const float>::bthd(v.data(), 1, 2, 1, 4), p);
  CHECK(c.length() == 2);
  CHECK(c.next_position(0) == kMax);  // saturates: one past INT64_MAX is not representable
  std::vector<float> out(4);
  const std::vector<std::int64_t> pq{0};
  std::vector<double> w(2);
  c.attend(enc, posenc::tensor_view<const float>::bthd(q.data(), 1, 1, 1, 4),
           posenc::tensor_view<float>::bthd(out.data(), 1, 1, 1, 4), pq, {.causal = true, .weights = w});
  CHECK(w[0] == 1.0);  // key INT64_MIN <= query 0
  CHECK(w[1] == 0.0);  // key INT64_MAX is in the future
  // A window shift moves positions down by `evict`: below INT64_MIN it is refused before any change.
  kv_cache<float> low({.kv_heads = 1, .head_dim = 4});
  const std::vector<std::int64_t> lp{kMin + 5, kMin + 6, kMin + 1};
  const auto k3 = ramp(12), v3 = ramp(12);
  (void)low.append(enc, posenc::tensor_view<const float>::bthd(k3.data(), 1, 3, 1, 4),
                   posenc::tensor_view<const float>::bthd(v3.data(), 1, 3, 1, 4), lp);
  error_of([&] { low.shift_window(enc, 0, 2); }, "kv_cache.evict");
  CHECK(low.length() == 3);
  CHECK(low.positions()[2] == kMin + 1);
  low.shift_window(enc, 1, 1);  // kMin + 1 - 1 is representable
  CHECK(low.length() == 2);
  CHECK(low.positions()[1] == kMin);
}

// ---------------------------------------------------------------- position helpers

TEST_CASE("positions: helpers never produce a wrapped position", "[extreme][positions]") {
  CHECK(posenc::arange_positions(1, kMax) == std::vector<std::int64_t>{kMax});
  CHECK(posenc::arange_positions(2, kMax - 1) == std::vector<std::int64_t>{kMax - 1, kMax});
  CHECK(posenc::arange_positions(0, kMax).empty());
  CHECK(posenc::arange_positions(2, kMin) == std::vector<std::int64_t>{kMin, kMin + 1});
  error_of([] { (void)posenc::arange_positions(2, kMax); }, "offset");
  const std::vector<int> mask{0, 1, 1, 0};
  CHECK(posenc::positions_from_attention_mask(std::span<const int>(mask), 1, 4, kMax - 1) ==
        std::vector<std::int64_t>{1, kMax - 1, kMax, 1});
  const std::vector<int> three{1, 1, 1};
  error_of([&] { (void)posenc::positions_from_attention_mask(std::span<const int>(three), 1, 3, kMax - 1); }, "offset");
  const std::ptrdiff_t big = std::ptrdiff_t{1} << 32;
  error_of([&] { (void)posenc::positions_from_attention_mask(std::span<const int>(three), big, big); },
           "attention_mask.size");
  error_of([&] { (void)posenc::positions_from_segment_ids(std::span<const int>(three), big, big); },
           "segment_ids.size");
}

// ---------------------------------------------------------------- checkpoint permutation, Eigen views

TEST_CASE("permute_rows: sizes that wrap and gather rows outside the matrix are shape errors", "[extreme][permute]") {
  const std::vector<float> src(8, 1.0f);
  std::vector<float> dst(8);
  const std::vector<std::int64_t> ok{1, 0}, outside{0, 2}, negative{-1, 0};
  posenc::permute_rows(std::span<const float>(src), std::span<float>(dst), ok, 4);
  CHECK(dst == src);
  error_of([&] { posenc::permute_rows(std::span<const float>(src), std::span<float>(dst), outside, 4); },
           "permute_rows.perm");
  error_of([&] { posenc::permute_rows(std::span<const float>(src), std::span<float>(dst), negative, 4); },
           "permute_rows.perm");
  // 2 * 2^63 wraps to 0 in size_t: it must not match empty spans.
  const std::span<const float> none;
  error_of([&] { posenc::permute_rows(none, std::span<float>(), ok, std::size_t{1} << 63); }, "permute_rows.size");
}

TEST_CASE("as_heads: heads * dim that overflows is a shape error", "[extreme][eigen]") {
  posenc::row_matrix<float> m = posenc::row_matrix<float>::Zero(2, 4);
  CHECK(posenc::as_heads(m, 2, 2).heads() == 2);
  error_of([&] { (void)posenc::as_heads(m, std::ptrdiff_t{1} << 32, std::ptrdiff_t{1} << 32); }, "matrix.cols");
}
