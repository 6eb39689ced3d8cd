// tests/attention/fast_attention_test.cpp — posenc::attention against the sdpa oracle: random shapes
// (head_dim 32..256, odd token counts, GQA ratios 1/4/8), every encoder and combined pairs, every
// mask kind and their combinations, sinks, fully masked rows, positions near 2^40, float / bfloat16
// / float16 K/V storage, within the documented bound; thread-count invariance (bit-exact); decode
// step == last prefill row; invalid inputs.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "attention_support.hpp"
#include "fast_support.hpp"
#include "support/check.hpp"

using namespace posenc_test;

namespace {

struct rng {
  std::uint64_t x;
  std::uint64_t next() {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::int64_t in(std::int64_t lo, std::int64_t hi) {  // [lo, hi]
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return in(0, 99) < percent; }
};

posenc::t5_bias make_t5(std::ptrdiff_t H, bool bidirectional) {
  const posenc::t5_bias_config c{.num_buckets = 32, .max_distance = 64, .bidirectional = bidirectional, .num_heads = H};
  auto t = random_values(static_cast<std::size_t>(32 * H), 17);
  for (auto& x : t) x *= 4;
  return posenc::t5_bias(c, std::span<const double>(t));
}

posenc::shaw_relative make_shaw(std::ptrdiff_t D, std::ptrdiff_t H, bool per_head, bool value) {
  posenc::shaw_relative_config c{.head_dim = D, .k_left = per_head ? 3 : 5, .k_right = per_head ? 7 : 5};
  c.use_value_term = value;
  c.shared_across_heads = !per_head;
  c.num_heads = H;
  const auto n = static_cast<std::size_t>((per_head ? H : 1) * c.table_rows() * D);
  auto kt = random_values(n, 31), vt = random_values(value ? n : 0, 32);
  return posenc::shaw_relative(c, std::span<const double>(kt), std::span<const double>(vt));
}

posenc_test::slope_bias make_slopes(std::ptrdiff_t H) {
  std::vector<double> s(static_cast<std::size_t>(H));
  for (std::size_t h = 0; h < s.size(); ++h) s[h] = -0.25 / static_cast<double>(h + 1);
  return {s};
}

/// Random masks/positions for shape s (every option kind, often several at once).
fast_masks random_masks(rng& r, const fast_shape& s, bool big_positions_ok) {
  fast_masks m;
  m.causal = r.chance(50);
  if (r.chance(30)) m.window = r.in(1, 40);
  if (r.chance(50)) {  // explicit positions: offsets, gaps, near 2^40
    const std::int64_t base =
        big_positions_ok && r.chance(40) ? (std::int64_t{1} << 40) - r.in(0, 1000) : r.in(-50, 50);
    for (std::ptrdiff_t b = 0; b < s.B; ++b) {
      std::int64_t p = base + r.in(0, 5);
      std::vector<std::int64_t> keys;
      for (std::ptrdiff_t j = 0; j < s.Sk; ++j) {
        keys.push_back(p);
        p += r.chance(10) ? r.in(2, 4) : 1;
      }
      m.pk.insert(m.pk.end(), keys.begin(), keys.end());
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i)  // the queries are the last keys, or random ones
        m.pq.push_back(r.chance(80) ? keys[static_cast<std::size_t>(s.Sk - s.Sq + i >= 0 ? s.Sk - s.Sq + i : 0)]
                                    : keys[static_cast<std::size_t>(r.in(0, s.Sk - 1))]);
    }
  }
  if (r.chance(25))
    for (std::ptrdiff_t b = 0; b < s.B; ++b) m.lengths.push_back(r.in(0, s.Sk));
  if (r.chance(25))
    for (std::ptrdiff_t j = 0; j < s.B * s.Sk; ++j) m.key_mask.push_back(r.chance(85) ? 1 : 0);
  if (r.chance(25)) {
    for (std::ptrdiff_t b = 0; b < s.B; ++b) {
      const std::int64_t cut = r.in(0, s.Sk);
      for (std::ptrdiff_t j = 0; j < s.Sk; ++j) m.sk.push_back(r.chance(5) ? -1 : (j < cut ? 0 : 1));
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i)
        m.sq.push_back(r.chance(5) ? -1 : static_cast<std::int32_t>(r.in(0, 1)));
    }
  }
  if (r.chance(30)) {
    const auto v = random_values(static_cast<std::size_t>(s.Hq), r.next() % 1000);
    for (double x : v) m.sinks.push_back(3 * x);
  }
  if (r.chance(20)) m.scale = 0.05 + 0.2 * static_cast<double>(r.in(0, 10)) / 10;
  return m;
}

template <class T, class E>
void check_case(const char* what, const fast_inputs<T>& in, const E& enc, const fast_masks& m,
                const posenc::fast_attention_options& f, double growth = 1.0, double bound = fast_bound) {
  const double e = fast_error(in, enc, m, f, growth);
  INFO(what << ": B " << in.s.B << " Sq " << in.s.Sq << " Sk " << in.s.Sk << " Hq " << in.s.Hq << " Hkv " << in.s.Hkv
            << " D " << in.s.D << " Dv " << in.s.Dv << " causal " << m.causal << " window " << m.window.value_or(0)
            << " positions " << !m.pq.empty() << " lengths " << !m.lengths.empty() << " key_mask "
            << !m.key_mask.empty() << " segments " << !m.sq.empty() << " sinks " << !m.sinks.empty() << " query_tile "
            << f.query_tile << " split " << f.split_keys << " -> error " << e);
  CHECK(e <= bound);
  if (std::getenv("FAST_SHOW")) WARN(what << " " << e);
}

template <class T>
void random_cases(int cases, std::uint64_t seed) {
  rng r{seed};
  constexpr std::ptrdiff_t dims[] = {32, 48, 64, 80, 128, 256};
  for (int c = 0; c < cases; ++c) {
    fast_shape s;
    s.D = dims[r.in(0, 5)];
    s.Dv = r.chance(80) ? s.D : 40;
    s.Hkv = r.in(1, 2);
    constexpr std::ptrdiff_t groups[] = {1, 4, 8};
    s.Hq = s.Hkv * groups[r.in(0, 2)];
    s.B = r.in(1, 2);
    s.Sk = 2 * r.in(0, s.D >= 128 ? 40 : 75) + 1;
    s.Sq = r.chance(30) ? 1 : std::min<std::ptrdiff_t>(s.Sk, 2 * r.in(0, 20) + 1);
    const bool small_pos = r.chance(50);
    const fast_masks m = random_masks(r, s, !small_pos);
    posenc::fast_attention_options f;
    if constexpr (std::is_same_v<T, posenc::bfloat16>) f.bf16_dot_products = false;  // the exact kernels: 5e-7
    constexpr int tiles[] = {0, 0, 1, 3, 16};
    f.query_tile = tiles[r.in(0, 4)];
    if (r.chance(40)) f.split_keys = 64;
    const fast_inputs<T> in(s, r.next() % 100000);
    const posenc::rope rope({.head_dim = static_cast<int>(s.D)});
    const posenc::alibi alibi({.num_heads = s.Hq});
    check_case("none", in, posenc::no_position{}, m, f);
    check_case("rope", in, rope, m, f);
    if (small_pos && s.Dv == s.D) {
      fast_masks mk = m;
      mk.pq.clear(), mk.pk.clear();  // xPos: bottom-right positions (scales stay near 1)
      check_case("xpos", in, posenc::xpos({.head_dim = static_cast<int>(s.D)}), mk, f, 1.6);
    }
    check_case("alibi", in, alibi, m, f);
    check_case("alibi true distance", in,
               posenc::alibi({.num_heads = s.Hq, .mode = posenc::alibi_mode::causal_true_distance}), m, f);
    if (m.causal)
      check_case("alibi row shift", in,
                 posenc::alibi({.num_heads = s.Hq, .mode = posenc::alibi_mode::causal_row_shift}), m, f);
    check_case("t5 bidirectional", in, make_t5(s.Hq, true), m, f);
    check_case("t5 causal", in, make_t5(s.Hq, false), m, f);
    if (s.Dv == s.D) check_case("shaw", in, make_shaw(s.D, s.Hq, false, true), m, f);
    check_case("shaw per head, key term only", in, make_shaw(s.D, s.Hq, true, false), m, f);
    check_case("rope+alibi", in, posenc::combine(rope, alibi), m, f);
    check_case("alibi+t5", in, posenc::combine(alibi, make_t5(s.Hq, true)), m, f);
    if (s.Dv == s.D) check_case("rope+shaw", in, posenc::combine(rope, make_shaw(s.D, s.Hq, false, true)), m, f);
    check_case("(rope+t5)+slopes (general path)", in,
               posenc::combine(posenc::combine(rope, make_t5(s.Hq, false)), make_slopes(s.Hq)), m, f);
    posenc::fast_attention_options general = f;
    general.max_bias_table = 0;  // distance biases through the general per-tile path
    check_case("alibi general path", in, alibi, m, general);
    if constexpr (std::is_same_v<T, posenc::bfloat16>) {
      // the default: AVX512_BF16 dot products where the CPU has them (decode-shaped calls, D / Dv multiples
      // of 32), within their own bound (fast/x86/avx512_bf16-inl.hpp); elsewhere the exact kernels
      posenc::fast_attention_options dot = f;
      dot.bf16_dot_products = true;
      check_case("none, bf16 dot", in, posenc::no_position{}, m, dot, 1.0, bf16_dot_bound);
      check_case("alibi, bf16 dot", in, alibi, m, dot, 1.0, bf16_dot_bound);
      check_case("t5 causal, bf16 dot", in, make_t5(s.Hq, false), m, dot, 1.0, bf16_dot_bound);
      check_case("rope+alibi, bf16 dot", in, posenc::combine(rope, alibi), m, dot, 1.0, bf16_dot_bound);
      if (s.Dv == s.D) check_case("shaw, bf16 dot", in, make_shaw(s.D, s.Hq, false, true), m, dot, 1.0, bf16_dot_bound);
    }
  }
}

}  // namespace

TEST_CASE("attention matches sdpa on random shapes, encoders and masks (float K/V)", "[fast]") {
  random_cases<float>(24, 1);
}

TEST_CASE("attention matches sdpa with bfloat16 and float16 K/V (oracle on the rounded values)", "[fast]") {
  random_cases<posenc::bfloat16>(10, 2);
  random_cases<posenc::float16>(10, 3);
}

TEST_CASE("attention: prefill shapes take the packed path, all tiles kinds, GQA 8", "[fast]") {
  const fast_shape s{.B = 1, .Sq = 129, .Sk = 201, .Hq = 8, .Hkv = 1, .D = 64, .Dv = 64};
  const fast_inputs<float> in(s, 5);
  for (bool causal : {false, true})
    for (int w : {0, 50}) {
      fast_masks m;
      m.causal = causal;
      if (w) m.window = w;
      check_case("prefill", in, posenc::alibi({.num_heads = 8}), m, {});
      check_case("prefill rope+t5", in, posenc::combine(posenc::rope({.head_dim = 64}), make_t5(8, !causal)), m, {});
    }
}

TEST_CASE("attention: rows that attend to nothing give exact zeros", "[fast]") {
  const fast_shape s{.B = 2, .Sq = 5, .Sk = 70, .Hq = 4, .Hkv = 2, .D = 32, .Dv = 32};
  const fast_inputs<float> in(s, 9);
  fast_masks m;
  m.lengths = {0, 70};                      // sequence 0: every key padded
  m.sq = {0, -1, 0, 1, 0, 0, 0, 0, -1, 2};  // negative query segment; segment 2 has no key
  m.sk.assign(140, 0);
  for (std::size_t j = 100; j < 140; ++j) m.sk[j] = 1;
  m.sinks = {0.5, -1, 2, 0};
  const auto out = run_fast(in, posenc::alibi({.num_heads = 4}), m.options());
  const auto ref = run_oracle(in, posenc::alibi({.num_heads = 4}), m.options());
  auto row_is_zero = [&](std::ptrdiff_t b, std::ptrdiff_t i) {
    for (std::ptrdiff_t x = 0; x < s.Hq * s.Dv; ++x)
      if (out[static_cast<std::size_t>((b * s.Sq + i) * s.Hq * s.Dv + x)] != 0.0f) return false;
    return true;
  };
  for (std::ptrdiff_t i = 0; i < 5; ++i) CHECK(row_is_zero(0, i));
  CHECK(row_is_zero(1, 3));  // query segment -1
  CHECK(row_is_zero(1, 4));  // segment 2: no key
  CHECK_FALSE(row_is_zero(1, 0));
  POSENC_CHECK_CLOSE(out, ref, 1e-5, 0);
}

TEST_CASE("attention: bit-identical for any thread count and execution order", "[fast][threads]") {
  posenc::thread_pool one(1), two(2);
  posenc::parallel_for reverse = [](std::ptrdiff_t n, posenc::task_ref t) {
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) t(i);
  };
  // RoPE + ALiBi: float copies of the rotated q and k; ALiBi alone: bfloat16 keys as stored (the
  // prefill's pair tiles on AVX512_BF16, each work item preparing its q rows).
  const auto check = [&](const auto& enc, const fast_shape& s) {
    const fast_inputs<posenc::bfloat16> in(s, 11);
    fast_masks m;
    m.causal = true;
    m.sinks = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    posenc::fast_attention_options f{.split_keys = 128};
    f.executor = one.as_parallel_for();
    const auto a = run_fast(in, enc, m.options(), f);
    f.executor = two.as_parallel_for();
    const auto b = run_fast(in, enc, m.options(), f);
    f.executor = reverse;
    const auto c = run_fast(in, enc, m.options(), f);
    posenc::attention_workspace ws;
    f.workspace = &ws;
    f.executor = {};
    // The workspace first holds a larger call's values: a buffer read before this call writes it
    // (they grow without zero-filling) would change the result.
    const fast_shape big{.B = 2, .Sq = 150, .Sk = 1100, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64};
    static_cast<void>(run_fast(fast_inputs<posenc::bfloat16>(big, 12), enc, m.options(), f));
    const auto d = run_fast(in, enc, m.options(), f);
    const auto e = run_fast(in, enc, m.options(), f);  // workspace reused
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.data(), d.data(), a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.data(), e.data(), a.size() * sizeof(float)) == 0);
  };
  for (const fast_shape s : {fast_shape{.B = 2, .Sq = 77, .Sk = 130, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 1000, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64}}) {
    check(posenc::combine(posenc::rope({.head_dim = 64}), posenc::alibi({.num_heads = 8})), s);
    check(posenc::alibi({.num_heads = 8}), s);
  }
}

TEST_CASE("attention: a head-major K/V cache ([batch, heads, seq, dim]) meets the bound, any thread count", "[fast]") {
  // Head-major keys take one kv head per work item on the in-place path (token-major keys take every
  // head of a token at once): against the oracle, GQA 4 and 8, MQA, key splits, decode and a few rows.
  posenc::thread_pool two(2);
  for (const fast_shape s : {fast_shape{.B = 2, .Sq = 1, .Sk = 300, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 1000, .Hq = 4, .Hkv = 1, .D = 64, .Dv = 64},
                             fast_shape{.B = 1, .Sq = 3, .Sk = 77, .Hq = 8, .Hkv = 8, .D = 64, .Dv = 64},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 5, .Hq = 16, .Hkv = 4, .D = 64, .Dv = 64},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 131, .Hq = 16, .Hkv = 2, .D = 128, .Dv = 128}}) {
    const posenc::rope rope({.head_dim = static_cast<int>(s.D)});
    fast_inputs<float> in(s, 41);
    fast_inputs<posenc::bfloat16> hb(s, 42);
    in.head_major_kv = hb.head_major_kv = true;
    fast_masks m;
    m.causal = true;
    for (const std::ptrdiff_t split : {64, 2048}) {
      posenc::fast_attention_options f{.split_keys = split};
      check_case("head-major none", in, posenc::no_position{}, m, f);
      check_case("head-major rope+alibi", in, posenc::combine(rope, posenc::alibi({.num_heads = s.Hq})), m, f);
      f.bf16_dot_products = false;
      check_case("head-major bf16", hb, rope, m, f);
      f.bf16_dot_products = true;
      check_case("head-major bf16 dot", hb, rope, m, f, 1.0, bf16_dot_bound);
      const auto one = run_fast(in, rope, m.options(), f);
      f.executor = two.as_parallel_for();
      const auto both = run_fast(in, rope, m.options(), f);
      CHECK(std::memcmp(one.data(), both.data(), one.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("attention: a decode step equals the last row of the prefill", "[fast]") {
  const std::ptrdiff_t S = 300, H = 8, Hkv = 2, D = 64;
  const fast_inputs<float> in({.B = 1, .Sq = S, .Sk = S, .Hq = H, .Hkv = Hkv, .D = D, .Dv = D}, 21);
  const auto enc = posenc::combine(posenc::rope({.head_dim = static_cast<int>(D)}), posenc::alibi({.num_heads = H}));
  const posenc::attention_options o{.causal = true};
  const auto full = run_fast(in, enc, o);
  fast_inputs<float> one = in;  // the last query token only, at position S - 1 (bottom-right)
  one.s.Sq = 1;
  one.q.assign(in.q.end() - H * D, in.q.end());
  one.qd.assign(in.qd.end() - H * D, in.qd.end());
  for (std::ptrdiff_t split : {std::ptrdiff_t{64}, std::ptrdiff_t{2048}}) {
    const auto step = run_fast(one, enc, o, {.split_keys = split});
    const std::vector<float> last(full.end() - H * D, full.end());
    const posenc::attention_mask mask(o, 1, S, S);
    const double A = logit_bound(in, enc, o, mask);
    POSENC_CHECK_CLOSE(step, last, 2 * fast_bound * (1 + A) * in.vmax(), 0);
  }
}

TEST_CASE("attention: invalid inputs throw before anything is written, naming the field", "[fast]") {
  const fast_shape s{.B = 1, .Sq = 3, .Sk = 5, .Hq = 2, .Hkv = 1, .D = 8, .Dv = 8};
  const fast_inputs<float> in(s, 1);
  std::vector<double> w(30);
  error_of([&] { run_fast(in, posenc::no_position{}, {.weights = w}); }, "attention.weights");
  error_of([&] { run_fast(in, posenc::no_position{}, {}, {.key_tile = 100}); }, "fast_attention.key_tile");
  error_of([&] { run_fast(in, posenc::no_position{}, {}, {.split_keys = 100}); }, "fast_attention.split_keys");
  const std::vector<double> sinks(3);
  CHECK_THROWS_WITH(run_fast(in, posenc::no_position{}, {.sinks = sinks}), Catch::Contains("attention.sinks"));
  CHECK_THROWS_WITH(run_fast(in, posenc::alibi({.num_heads = 3}), {}), Catch::Contains("encoder.num_heads"));
  std::vector<float> out(48);
  const std::vector<float> k(5 * 9);
  using cv = posenc::tensor_view<const float>;
  CHECK_THROWS_WITH(posenc::attention(cv::bthd(in.q.data(), 1, 3, 2, 8), cv::bthd(k.data(), 1, 5, 1, 9),
                                      cv::bthd(in.v.data(), 1, 5, 1, 8),
                                      posenc::tensor_view<float>::bthd(out.data(), 1, 3, 2, 8), posenc::no_position{}),
                    Catch::Contains("k.dim (vs q.dim)"));
  // out over v's memory: refused as sdpa refuses it (Sk = Sq, Hkv = Hq here so the shapes fit)
  std::vector<float> kv(3 * 2 * 8, 0.5f);
  CHECK_THROWS_WITH(posenc::attention(cv::bthd(in.q.data(), 1, 3, 2, 8), cv::bthd(kv.data(), 1, 3, 2, 8),
                                      cv::bthd(kv.data(), 1, 3, 2, 8),
                                      posenc::tensor_view<float>::bthd(kv.data(), 1, 3, 2, 8), posenc::no_position{}),
                    Catch::Contains("memory disjoint from k and v"));
}

TEST_CASE("attention: out may be q's memory; strided views (dim stride 2) give the same result", "[fast]") {
  const fast_shape s{.B = 1, .Sq = 33, .Sk = 70, .Hq = 4, .Hkv = 2, .D = 32, .Dv = 32};
  const fast_inputs<float> in(s, 41);
  const auto enc = posenc::combine(posenc::rope({.head_dim = 32}), posenc::alibi({.num_heads = 4}));
  const posenc::attention_options o{.causal = true};
  const auto ref = run_fast(in, enc, o);
  // in place: out over the query buffer
  std::vector<float> qo = in.q;
  const auto qv = posenc::tensor_view<float>::bthd(qo.data(), 1, s.Sq, s.Hq, s.D);
  using cv = posenc::tensor_view<const float>;
  posenc::attention(qv, cv::bthd(in.k.data(), 1, s.Sk, s.Hkv, s.D), cv::bthd(in.v.data(), 1, s.Sk, s.Hkv, s.Dv), qv,
                    enc, o);
  CHECK(std::memcmp(qo.data(), ref.data(), ref.size() * sizeof(float)) == 0);
  // every view with dim stride 2 (interleaved with garbage), so the packing / copy paths run
  auto spread = [](const std::vector<float>& x) {
    std::vector<float> y(2 * x.size(), std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < x.size(); ++i) y[2 * i] = x[i];
    return y;
  };
  const auto q2 = spread(in.q), k2 = spread(in.k), v2 = spread(in.v);
  std::vector<float> o2(2 * ref.size());
  auto strided = [](auto* p, std::ptrdiff_t t, std::ptrdiff_t h, std::ptrdiff_t d) {
    using V = posenc::tensor_view<std::remove_pointer_t<decltype(p)>>;
    return V::strided(p, {1, t, h, d}, {2 * t * h * d, 2 * h * d, 2 * d, 2});
  };
  posenc::attention(strided(q2.data(), s.Sq, s.Hq, s.D), strided(k2.data(), s.Sk, s.Hkv, s.D),
                    strided(v2.data(), s.Sk, s.Hkv, s.Dv), strided(o2.data(), s.Sq, s.Hq, s.Dv), enc, o);
  std::vector<float> got(ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) got[i] = o2[2 * i];
  const posenc::attention_mask mask(o, 1, s.Sq, s.Sk);
  POSENC_CHECK_CLOSE(got, ref, 2 * fast_bound * (1 + logit_bound(in, enc, o, mask)) * in.vmax(), 0);
}
