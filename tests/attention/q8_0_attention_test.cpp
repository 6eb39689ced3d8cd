// tests/attention/q8_0_attention_test.cpp — posenc::attention over q8_0 K and/or V (core/q8_0.hpp):
// against sdpa on the dequantised values within the float bound (docs/attention.md), for every
// encoder hook path the float tests take (table and general biases, Shaw key and value terms, the
// query/key transform, xPos), masks, sinks, GQA/MQA, decode splits, head-major caches; bit-identical
// to the float call on the dequantised values (same ISA), and across thread counts; masked keys with
// non-finite blocks; the head-dim and shape errors.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "attention_support.hpp"
#include "fast_support.hpp"
#include "support/check.hpp"

using namespace posenc_test;

namespace {

using posenc::block_q8_0;

struct rng {
  std::uint64_t x;
  std::uint64_t next() {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::int64_t in(std::int64_t lo, std::int64_t hi) { return lo + static_cast<std::int64_t>(next() % (hi - lo + 1)); }
  bool chance(int percent) { return in(0, 99) < percent; }
};

/// The masks of fast_support plus attention chunks and logit soft-capping.
struct q8_masks : fast_masks {
  std::optional<std::int64_t> chunk{};
  std::optional<double> softcap{};
  q8_masks() = default;
  q8_masks(const fast_masks& m) : fast_masks(m) {}  // NOLINT(google-explicit-constructor)
  [[nodiscard]] posenc::attention_options options() const {
    auto o = fast_masks::options();
    o.attention_chunk = chunk;
    o.logit_softcap = softcap;
    return o;
  }
};

/// Which of K and V are handed over as q8_0.
struct q8_which {
  bool k = true, v = true;
};

/// Float inputs whose K / V are the dequantised q8_0 blocks (also kept): the oracle and the float
/// call read the dequantised values, the q8_0 call the blocks.
struct q8_inputs {
  fast_inputs<float> in;
  std::vector<block_q8_0> kq, vq;
  q8_inputs(fast_shape s, std::uint64_t seed, double amp = 1.0) : in(s, seed, amp) {
    auto quant = [](std::vector<float>& x, std::vector<double>& xd, std::vector<block_q8_0>& q) {
      q.resize(x.size() / 32);
      posenc::q8_0::quantize_row_ref(x.data(), q.data(), static_cast<std::ptrdiff_t>(x.size()));
      posenc::q8_0::dequantize_row_ref(q.data(), x.data(), static_cast<std::ptrdiff_t>(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i) xd[i] = x[i];
    };
    quant(in.k, in.kd, kq);
    if (s.Dv % 32 == 0) quant(in.v, in.vd, vq);
  }
};

/// [b][t][h][:] rows (n values each) as [b][h][t][:] (head-major caches).
template <class T>
std::vector<T> head_major(const std::vector<T>& x, const fast_shape& s, std::ptrdiff_t n) {
  if (x.empty()) return {};  // no q8_0 values (Dv not a multiple of 32)
  std::vector<T> y(x.size());
  for (std::ptrdiff_t b = 0; b < s.B; ++b)
    for (std::ptrdiff_t t = 0; t < s.Sk; ++t)
      for (std::ptrdiff_t h = 0; h < s.Hkv; ++h)
        std::copy_n(x.begin() + ((b * s.Sk + t) * s.Hkv + h) * n, n, y.begin() + ((b * s.Hkv + h) * s.Sk + t) * n);
  return y;
}

template <class T>
posenc::tensor_view<const T> kv_view(const std::vector<T>& x, const fast_shape& s, std::ptrdiff_t n, bool hm) {
  using V = posenc::tensor_view<const T>;
  return hm ? V::bhtd(x.data(), s.B, s.Hkv, s.Sk, n) : V::bthd(x.data(), s.B, s.Sk, s.Hkv, n);
}

/// posenc::attention with K / V as q8_0 blocks (per `w`) or as the dequantised floats.
std::vector<float> run_q8(const q8_inputs& x, q8_which w, const auto& enc, const posenc::attention_options& o,
                          const posenc::fast_attention_options& f = {}) {
  const auto& s = x.in.s;
  const bool hm = x.in.head_major_kv;
  std::vector<float> out(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), -7.0f);
  const auto q = posenc::tensor_view<const float>::bthd(x.in.q.data(), s.B, s.Sq, s.Hq, s.D);
  const auto ov = posenc::tensor_view<float>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv);
  const auto kf = hm ? head_major(x.in.k, s, s.D) : x.in.k, vf = hm ? head_major(x.in.v, s, s.Dv) : x.in.v;
  const auto kb = hm ? head_major(x.kq, s, s.D / 32) : x.kq, vb = hm ? head_major(x.vq, s, s.Dv / 32) : x.vq;
  const auto k32 = [&] { return kv_view(kf, s, s.D, hm); };
  const auto v32 = [&] { return kv_view(vf, s, s.Dv, hm); };
  const auto k8 = [&] { return kv_view(kb, s, s.D / 32, hm); };
  const auto v8 = [&] { return kv_view(vb, s, s.Dv / 32, hm); };  // only when Dv % 32 == 0
  if (w.k && w.v)
    posenc::attention(q, k8(), v8(), ov, enc, o, f);
  else if (w.k)
    posenc::attention(q, k8(), v32(), ov, enc, o, f);
  else if (w.v)
    posenc::attention(q, k32(), v8(), ov, enc, o, f);
  else
    posenc::attention(q, k32(), v32(), ov, enc, o, f);
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The bound of q8_0_int8_dot_products on the logits (fast/x86/avx512_vnni-inl.hpp), from the 2-norms of q
/// and k: scale sum_b (max_b |q| / 254) sum_b |k| <= scale |q| sqrt(D) |k| / 254.
template <class E>
double q8_dot_logit_bound(const q8_inputs& x, const E& enc, const posenc::attention_options& o, double growth) {
  const auto& s = x.in.s;
  auto maxnorm = [&](const std::vector<double>& v) {
    double m = 0;
    for (std::size_t r = 0; r < v.size(); r += static_cast<std::size_t>(s.D)) {
      double n = 0;
      for (std::ptrdiff_t i = 0; i < s.D; ++i)
        n += v[r + static_cast<std::size_t>(i)] * v[r + static_cast<std::size_t>(i)];
      m = std::max(m, std::sqrt(n));
    }
    return m * growth;
  };
  double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(s.D));
  if constexpr (posenc::has_softmax_scale_multiplier<E>) scale *= enc.softmax_scale_multiplier();
  return std::fabs(scale) * maxnorm(x.in.qd) * maxnorm(x.in.kd) * std::sqrt(static_cast<double>(s.D)) / 254;
}

/// The q8_0 call against sdpa on the dequantised values (max |out - ref| / ((1 + A) vmax) <= the float
/// bound) and against the float call on the same values (bit for bit), with q in fp32
/// (q8_0_int8_dot_products = false); with the options as given (the int8 key kernel where the CPU has
/// it), within (exp(2 delta) - 1) vmax of that, delta the logit bound of q's quantisation.
template <class E>
void check_q8(const char* what, const q8_inputs& x, q8_which w, const E& enc, const q8_masks& m,
              const posenc::fast_attention_options& f_given, double growth = 1.0) {
  const auto o = m.options();
  posenc::fast_attention_options f = f_given;
  f.q8_0_int8_dot_products = false;
  const auto got = run_q8(x, w, enc, o, f);
  const auto flt = run_q8(x, {false, false}, enc, o, f);
  const auto ref = run_oracle(x.in, enc, o);
  const posenc::attention_mask mask(o, x.in.s.B, x.in.s.Sq, x.in.s.Sk);
  double vmax = x.in.vmax();
  if constexpr (posenc::relative_kv_encoding<E>) vmax += 1.0;  // the Shaw value tables are within [-1, 1]
  const double A = logit_bound(x.in, enc, o, mask, growth);
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::isfinite(got[i]) ? std::fabs(static_cast<double>(got[i]) - ref[i]) : INFINITY);
  const auto& s = x.in.s;
  INFO(what << ": K " << (w.k ? "q8_0" : "f32") << " V " << (w.v ? "q8_0" : "f32") << " B " << s.B << " Sq " << s.Sq
            << " Sk " << s.Sk << " Hq " << s.Hq << " Hkv " << s.Hkv << " D " << s.D << " Dv " << s.Dv << " causal "
            << m.causal << " window " << m.window.value_or(0) << " positions " << !m.pq.empty() << " lengths "
            << !m.lengths.empty() << " key_mask " << !m.key_mask.empty() << " segments " << !m.sq.empty() << " sinks "
            << !m.sinks.empty() << " chunk " << m.chunk.value_or(0) << " softcap " << m.softcap.value_or(0)
            << " head-major " << x.in.head_major_kv << " query_tile " << f.query_tile << " split " << f.split_keys
            << " -> error " << worst / ((1 + A) * vmax));
  CHECK(worst / ((1 + A) * vmax) <= fast_bound);
  CHECK(same_bits(got, flt));
  if (!w.k) return;
  const auto dot = run_q8(x, w, enc, o, f_given);
  double worst_dot = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst_dot = std::max(worst_dot, std::isfinite(dot[i]) ? std::fabs(static_cast<double>(dot[i]) - ref[i]) : INFINITY);
  const double delta = q8_dot_logit_bound(x, enc, o, growth);
  INFO("int8 dot products: error " << worst_dot << ", bound " << (std::expm1(2 * delta) + fast_bound * (1 + A)) * vmax);
  CHECK(worst_dot <= (std::expm1(2 * delta) + fast_bound * (1 + A)) * vmax);
}

posenc::t5_bias make_t5(std::ptrdiff_t H, bool bidirectional) {
  const posenc::t5_bias_config c{.num_buckets = 32, .max_distance = 64, .bidirectional = bidirectional, .num_heads = H};
  auto t = random_values(static_cast<std::size_t>(32 * H), 17);
  for (auto& v : t) v *= 4;
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

posenc_test::slope_bias harmonic_slopes(std::ptrdiff_t H) {
  std::vector<double> s(static_cast<std::size_t>(H));
  for (std::size_t h = 0; h < s.size(); ++h) s[h] = -0.25 / static_cast<double>(h + 1);
  return {s};
}

fast_masks random_masks(rng& r, const fast_shape& s) {
  fast_masks m;
  m.causal = r.chance(50);
  if (r.chance(30)) m.window = r.in(1, 40);
  if (r.chance(50)) {  // explicit positions with gaps
    const std::int64_t base = r.in(-50, 50);
    for (std::ptrdiff_t b = 0; b < s.B; ++b) {
      std::int64_t p = base + r.in(0, 5);
      std::vector<std::int64_t> keys;
      for (std::ptrdiff_t j = 0; j < s.Sk; ++j) {
        keys.push_back(p);
        p += r.chance(10) ? r.in(2, 4) : 1;
      }
      m.pk.insert(m.pk.end(), keys.begin(), keys.end());
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i)
        m.pq.push_back(keys[static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, s.Sk - s.Sq + i))]);
    }
  }
  if (r.chance(25))
    for (std::ptrdiff_t b = 0; b < s.B; ++b) m.lengths.push_back(r.in(0, s.Sk));
  if (r.chance(25))
    for (std::ptrdiff_t j = 0; j < s.B * s.Sk; ++j) m.key_mask.push_back(r.chance(85) ? 1 : 0);
  if (r.chance(25))
    for (std::ptrdiff_t b = 0; b < s.B; ++b) {
      const std::int64_t cut = r.in(0, s.Sk);
      for (std::ptrdiff_t j = 0; j < s.Sk; ++j) m.sk.push_back(j < cut ? 0 : 1);
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i) m.sq.push_back(static_cast<std::int32_t>(r.in(0, 1)));
    }
  if (r.chance(30)) {
    const auto v = random_values(static_cast<std::size_t>(s.Hq), r.next() % 1000);
    for (double x : v) m.sinks.push_back(3 * x);
  }
  return m;
}

void random_cases(int cases, std::uint64_t seed) {
  rng r{seed};
  constexpr std::ptrdiff_t dims[] = {32, 64, 96, 128, 256};
  for (int c = 0; c < cases; ++c) {
    fast_shape s;
    s.D = dims[r.in(0, 4)];
    const q8_which w = c % 3 == 0 ? q8_which{true, true} : c % 3 == 1 ? q8_which{true, false} : q8_which{false, true};
    s.Dv = w.v || r.chance(70) ? (r.chance(80) ? s.D : 64) : 40;
    s.Hkv = r.in(1, 2);
    constexpr std::ptrdiff_t groups[] = {1, 4, 8};
    s.Hq = s.Hkv * groups[r.in(0, 2)];
    s.B = r.in(1, 2);
    s.Sk = 2 * r.in(0, s.D >= 128 ? 40 : 75) + 1;
    s.Sq = r.chance(40) ? 1 : std::min<std::ptrdiff_t>(s.Sk, 2 * r.in(0, 20) + 1);
    q8_masks m = random_masks(r, s);
    if (r.chance(20)) m.chunk = r.in(8, 40);
    if (r.chance(20)) m.softcap = r.chance(50) ? 0.5 : 5.0;  // the A of the bound stays the uncapped one
    posenc::fast_attention_options f;
    constexpr int tiles[] = {0, 0, 1, 3, 16};
    f.query_tile = tiles[r.in(0, 4)];
    if (r.chance(40)) f.split_keys = 64;
    q8_inputs x(s, r.next() % 100000);
    x.in.head_major_kv = r.chance(25);
    const posenc::rope rope({.head_dim = static_cast<int>(s.D)});
    const posenc::alibi alibi({.num_heads = s.Hq});
    check_q8("none", x, w, posenc::no_position{}, m, f);
    check_q8("rope (keys transformed from the dequantised values)", x, w, rope, m, f);
    if (s.Dv == s.D && m.pq.empty())  // xPos: bottom-right positions (scales stay near 1)
      check_q8("xpos", x, w, posenc::xpos({.head_dim = static_cast<int>(s.D)}), m, f, 1.6);
    check_q8("alibi", x, w, alibi, m, f);
    if (m.causal)
      check_q8("alibi row shift", x, w,
               posenc::alibi({.num_heads = s.Hq, .mode = posenc::alibi_mode::causal_row_shift}), m, f);
    check_q8("t5 causal", x, w, make_t5(s.Hq, false), m, f);
    if (s.Dv == s.D) check_q8("shaw", x, w, make_shaw(s.D, s.Hq, false, true), m, f);
    check_q8("shaw per head, key term only", x, w, make_shaw(s.D, s.Hq, true, false), m, f);
    check_q8("rope+alibi", x, w, posenc::combine(rope, alibi), m, f);
    check_q8("(rope+t5)+slopes (general path)", x, w,
             posenc::combine(posenc::combine(rope, make_t5(s.Hq, false)), harmonic_slopes(s.Hq)), m, f);
    posenc::fast_attention_options general = f;
    general.max_bias_table = 0;
    check_q8("alibi general path", x, w, alibi, m, general);
    q8_masks raw = m;  // keys read as stored (no transform copy): the tile kernels read the blocks
    raw.transform_keys = false;
    check_q8("rope, keys as stored", x, w, rope, raw, f);
  }
}

}  // namespace

TEST_CASE("attention over q8_0 K/V matches sdpa on the dequantised values and the float call bit for bit",
          "[fast][q8_0]") {
  random_cases(30, 7);
}

TEST_CASE("attention over q8_0 K/V: prefill (packed) and decode (in place) shapes, GQA 4 and 8, MQA", "[fast][q8_0]") {
  for (const fast_shape s : {fast_shape{.B = 1, .Sq = 129, .Sk = 201, .Hq = 8, .Hkv = 1, .D = 64, .Dv = 64},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 1000, .Hq = 32, .Hkv = 8, .D = 128, .Dv = 128},
                             fast_shape{.B = 2, .Sq = 3, .Sk = 300, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 77, .Hq = 4, .Hkv = 1, .D = 256, .Dv = 256}})
    for (const bool hm : {false, true}) {
      q8_inputs x(s, 5);
      x.in.head_major_kv = hm;
      for (const bool causal : {false, true}) {
        q8_masks m;
        m.causal = causal;
        const auto enc = posenc::combine(posenc::rope({.head_dim = static_cast<int>(s.D)}), make_t5(s.Hq, !causal));
        for (const std::ptrdiff_t split : {64, 2048}) {
          const posenc::fast_attention_options f{.split_keys = split};
          check_q8("rope+t5", x, {}, enc, m, f);
          check_q8("alibi, K only", x, {true, false}, posenc::alibi({.num_heads = s.Hq}), m, f);
          check_q8("alibi, V only", x, {false, true}, posenc::alibi({.num_heads = s.Hq}), m, f);
        }
      }
    }
}

TEST_CASE("attention over q8_0 K/V is bit-identical for any thread count and execution order",
          "[fast][q8_0][threads]") {
  posenc::thread_pool one(1), two(2);
  posenc::parallel_for reverse = [](std::ptrdiff_t n, posenc::task_ref t) {
    for (std::ptrdiff_t i = n - 1; i >= 0; --i) t(i);
  };
  const auto enc = posenc::combine(posenc::rope({.head_dim = 128}), posenc::alibi({.num_heads = 8}));
  for (const fast_shape s : {fast_shape{.B = 2, .Sq = 77, .Sk = 130, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
                             fast_shape{.B = 1, .Sq = 1, .Sk = 1000, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128}})
    for (const bool hm : {false, true}) {
      q8_inputs x(s, 11);
      x.in.head_major_kv = hm;
      fast_masks m;
      m.causal = true;
      m.sinks = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
      const auto o = m.options();
      posenc::fast_attention_options f{.split_keys = 128};
      f.executor = one.as_parallel_for();
      const auto a = run_q8(x, {}, enc, o, f);
      f.executor = two.as_parallel_for();
      CHECK(same_bits(a, run_q8(x, {}, enc, o, f)));
      f.executor = reverse;
      CHECK(same_bits(a, run_q8(x, {}, enc, o, f)));
      posenc::attention_workspace ws;
      f.workspace = &ws;
      f.executor = {};
      CHECK(same_bits(a, run_q8(x, {}, enc, o, f)));
      CHECK(same_bits(a, run_q8(x, {}, enc, o, f)));  // workspace reused
    }
}

TEST_CASE("attention over q8_0 K/V: masked keys contribute nothing whatever their blocks hold", "[fast][q8_0]") {
  // Keys past each sequence's length hold blocks with infinite and NaN scales (and garbage quants):
  // the result equals the one with zero blocks there, on the packed and the in-place paths.
  for (const fast_shape s : {fast_shape{.B = 2, .Sq = 1, .Sk = 150, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64},
                             fast_shape{.B = 2, .Sq = 40, .Sk = 150, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64}}) {
    q8_inputs clean(s, 3);
    fast_masks m;
    m.lengths = {100, 130};
    auto poison = [&](q8_inputs& x, bool bad) {
      for (std::ptrdiff_t b = 0; b < s.B; ++b)
        for (std::ptrdiff_t t = m.lengths[static_cast<std::size_t>(b)]; t < s.Sk; ++t)
          for (std::ptrdiff_t h = 0; h < s.Hkv; ++h)
            for (std::ptrdiff_t i = 0; i < 2; ++i) {
              const auto at = static_cast<std::size_t>(((b * s.Sk + t) * s.Hkv + h) * 2 + i);
              for (auto* q : {&x.kq, &x.vq}) {
                block_q8_0& blk = (*q)[at];
                blk.d = posenc::float16::from_bits(bad ? (t % 2 ? 0x7c00 : 0x7e00) : 0);
                for (auto& v : blk.qs) v = bad ? static_cast<std::int8_t>(t) : 0;
              }
            }
    };
    q8_inputs dirty = clean;
    poison(clean, false);
    poison(dirty, true);
    const auto enc = posenc::alibi({.num_heads = 8});
    const auto a = run_q8(clean, {}, enc, m.options());
    const auto b = run_q8(dirty, {}, enc, m.options());
    CHECK(same_bits(a, b));
    for (float v : b) CHECK(std::isfinite(v));
  }
}

TEST_CASE("attention over q8_0 K/V: zero keys give zeros, with or without sinks", "[fast][q8_0]") {
  std::vector<float> q(4 * 64, 0.5f), out(4 * 64, -1.0f);
  const std::vector<double> sinks{0.5, 1.0, -1.0, 2.0};
  using bv = posenc::tensor_view<const block_q8_0>;
  for (const bool with_sinks : {false, true}) {
    posenc::attention_options o;
    if (with_sinks) o.sinks = sinks;
    posenc::attention(posenc::tensor_view<const float>::bthd(q.data(), 1, 1, 4, 64), bv::bthd(nullptr, 1, 0, 2, 2),
                      bv::bthd(nullptr, 1, 0, 2, 2), posenc::tensor_view<float>::bthd(out.data(), 1, 1, 4, 64),
                      posenc::no_position{}, o);
    for (float v : out) CHECK(v == 0.0f);
  }
}

TEST_CASE("attention over q8_0 K/V: head dims that are not multiples of 32 and shape mismatches are refused",
          "[fast][q8_0]") {
  std::vector<float> q(2 * 48, 0.1f), v32(5 * 48, 0.1f), out(2 * 48);
  std::vector<block_q8_0> kb(5 * 2), vb(5 * 2);
  using cv = posenc::tensor_view<const float>;
  using bv = posenc::tensor_view<const block_q8_0>;
  const auto ov = posenc::tensor_view<float>::bthd(out.data(), 1, 1, 2, 48);
  // q.dim 48 against q8_0 keys: a config_error naming q.dim
  error_of(
      [&] {
        posenc::attention(cv::bthd(q.data(), 1, 1, 2, 48), bv::bthd(kb.data(), 1, 5, 1, 2),
                          cv::bthd(v32.data(), 1, 5, 1, 48), ov, posenc::no_position{});
      },
      "q.dim");
  // out.dim 48 with q8_0 values
  std::vector<float> q64(2 * 64, 0.1f);
  error_of(
      [&] {
        posenc::attention(cv::bthd(q64.data(), 1, 1, 2, 64), bv::bthd(kb.data(), 1, 5, 1, 2),
                          bv::bthd(vb.data(), 1, 5, 1, 1), ov, posenc::no_position{});
      },
      "out.dim");
  // 2 blocks (64 values) of keys against q.dim 96: the shared shape check, in values
  std::vector<float> q96(2 * 96, 0.1f), o96(2 * 96);
  CHECK_THROWS_WITH(posenc::attention(cv::bthd(q96.data(), 1, 1, 2, 96), bv::bthd(kb.data(), 1, 5, 1, 2),
                                      cv::bthd(v32.data(), 1, 5, 1, 48),
                                      posenc::tensor_view<float>::bthd(o96.data(), 1, 1, 2, 48), posenc::no_position{}),
                    Catch::Contains("k.dim (vs q.dim)"));
}
