// fuzz/fuzz_attention.cpp — libFuzzer differential harness: posenc::attention against the sdpa oracle.
// Each input picks a small problem (batch, tokens, heads, GQA ratio, head sizes D / Dv), the K/V
// storage (float, bfloat16, float16, independently), the layouts (token- or head-major q, K, V), out
// on q's memory or not, every mask option (causal, sliding_window, attention_chunk, key_lengths,
// key_mask, segments, sinks including +-inf, explicit positions anywhere in int64), logit
// soft-capping, an encoder (none, RoPE, ALiBi, T5, Shaw, xPos, or a combine()d pair) and values with
// NaN / +-Inf / subnormals placed in masked or visible slots. Both run on the same storage-rounded
// inputs (sdpa in double); the harness aborts when
//   - one throws and the other does not,
//   - an output element is NaN in one and not in the other, or infinite in one and not equal in the
//     other,
//   - a finite element differs by more than attention/attention.hpp's bound
//     5e-7 (1 + A) vmax + (Sk + 2) 2^-149 (A = a bound of max |logit| over the visible keys, vmax
//     = max |v| over them (+ Shaw's |aV|)), or with bfloat16 K or V, the bf16 dot products allowed
//     (an input bit) and a CPU that has them, 2^-8 (1 + A) vmax + (Sk + 2) 2^-126,
// except in the rows attention.hpp documents as free to differ: a visible key whose value is not
// finite and whose weight is 0 or below 1e-30 (sdpa skips it, the fp32 path may multiply it by 0).
// xPos runs at |position| <= 200 only (its scale factors overflow far from the centre), and the
// query/key transforms see non-finite K only in masked slots (cos x Inf rounds differently in
// float and double).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fuzzer/FuzzedDataProvider.h>
#include <limits>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/core/half.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

namespace {

using namespace posenc;
using i64 = std::int64_t;
using sz = std::ptrdiff_t;

[[noreturn]] void fail(const char* what, std::size_t i, double got, double want) {
  std::fprintf(stderr, "fuzz_attention: %s at element %zu: attention %.9g, sdpa %.9g\n", what, i, got, want);
  std::abort();
}

struct prng {
  std::uint64_t x;
  std::uint64_t next() {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1p-53 * 4.0 - 2.0); }
};

template <class T>
T store(float x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else
    return T(x);
}

// A special value in storage T: NaN, +inf, -inf, the smallest subnormal, a mid subnormal.
template <class T>
T special(int kind) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  switch (kind) {
    case 0:
      return store<T>(std::numeric_limits<float>::quiet_NaN());
    case 1:
      return store<T>(inf);
    case 2:
      return store<T>(-inf);
    default:
      break;
  }
  if constexpr (std::is_same_v<T, float>)
    return kind == 3 ? std::numeric_limits<float>::denorm_min() : -3e-39f;
  else
    return T::from_bits(kind == 3 ? std::uint16_t{1} : std::uint16_t{0x8033});
}

struct problem {
  sz B, Sq, Sk, Hq, Hkv, D, Dv;
  bool causal;
  std::optional<i64> window, chunk;
  std::optional<double> scale, softcap;
  std::vector<i64> pq, pk, lengths;
  std::vector<std::uint8_t> key_mask;
  std::vector<std::int32_t> sq, sk;
  std::vector<double> sinks;
  bool transform_keys = true;
  [[nodiscard]] attention_options options() const {
    attention_options o;
    o.scale = scale;
    o.causal = causal;
    o.sliding_window = window;
    o.attention_chunk = chunk;
    o.logit_softcap = softcap;
    o.query_positions = pq;
    o.key_positions = pk;
    o.key_lengths = lengths;
    o.key_mask = key_mask;
    o.query_segments = sq;
    o.key_segments = sk;
    o.sinks = sinks;
    o.transform_keys = transform_keys;
    return o;
  }
};

i64 position(FuzzedDataProvider& in, bool small) {
  static constexpr i64 special_pos[] = {std::numeric_limits<i64>::min(),
                                        std::numeric_limits<i64>::min() + 1,
                                        std::numeric_limits<i64>::max(),
                                        std::numeric_limits<i64>::max() - 1,
                                        -1,
                                        0,
                                        1,
                                        i64{1} << 40,
                                        -(i64{1} << 53),
                                        i64{1} << 62};
  if (small) return in.ConsumeIntegralInRange<i64>(-200, 200);
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return special_pos[in.ConsumeIntegralInRange<std::size_t>(0, std::size(special_pos) - 1)];
    case 1:
      return in.ConsumeIntegral<i64>();
    default:
      return in.ConsumeIntegralInRange<i64>(-100, 300);
  }
}

// One run of both on problem p with K storage TK and V storage TV, encoder enc.
template <class TK, class TV, class E>
void run(FuzzedDataProvider& in, problem& p, const E& enc, double growth, bool transforms) {
  prng rng{in.ConsumeIntegral<std::uint64_t>()};
  const auto nq = static_cast<std::size_t>(p.B * p.Sq * p.Hq * p.D),
             nk = static_cast<std::size_t>(p.B * p.Sk * p.Hkv * p.D),
             nv = static_cast<std::size_t>(p.B * p.Sk * p.Hkv * p.Dv),
             no = static_cast<std::size_t>(p.B * p.Sq * p.Hq * p.Dv);
  std::vector<float> q(nq);
  std::vector<TK> k(nk);
  std::vector<TV> v(nv);
  for (auto& x : q) x = rng.uniform();
  for (auto& x : k) x = store<TK>(rng.uniform());
  for (auto& x : v) x = store<TV>(rng.uniform());
  if (in.ConsumeBool()) {  // all of V subnormal
    for (auto& x : v) x = special<TV>(in.ConsumeBool() ? 3 : 4);
  }
  const attention_options o = p.options();
  std::optional<attention_mask> mask;
  try {
    mask.emplace(o, p.B, p.Sq, p.Sk);
  } catch (const posenc::config_error&) {
    return;  // both check the options the same way (the mask is built by both)
  }
  auto visible_key = [&](sz b, sz j) {
    for (sz i = 0; i < p.Sq; ++i)
      if (mask->allowed(b, i, j)) return true;
    return false;
  };
  for (int n = in.ConsumeIntegralInRange<int>(0, 4); n > 0; --n) {  // specials
    const int where = in.ConsumeIntegralInRange<int>(0, 2), kind = in.ConsumeIntegralInRange<int>(0, 4);
    if (where == 0 && !q.empty() && !transforms) {
      q[in.ConsumeIntegralInRange<std::size_t>(0, q.size() - 1)] = special<float>(kind);
    } else if (where == 1 && !k.empty()) {
      const std::size_t i = in.ConsumeIntegralInRange<std::size_t>(0, k.size() - 1);
      const auto b = static_cast<sz>(i) / (p.Sk * p.Hkv * p.D), j = static_cast<sz>(i) / (p.Hkv * p.D) % p.Sk;
      if (!transforms || kind >= 3 || !visible_key(b, j)) k[i] = special<TK>(kind);
    } else if (!v.empty()) {
      v[in.ConsumeIntegralInRange<std::size_t>(0, v.size() - 1)] = special<TV>(kind);
    }
  }
  // the oracle's inputs: the exact images of what posenc::attention reads
  const std::vector<double> qd(q.begin(), q.end());
  std::vector<double> kd(nk), vd(nv);
  for (std::size_t i = 0; i < nk; ++i) kd[i] = static_cast<double>(static_cast<float>(k[i]));
  for (std::size_t i = 0; i < nv; ++i) vd[i] = static_cast<double>(static_cast<float>(v[i]));

  // layouts: K/V head-major copies, q head-major, out on q's memory
  const bool kv_head_major = in.ConsumeBool(), q_head_major = in.ConsumeBool(), alias = in.ConsumeBool();
  auto to_head_major = [&](const auto& x, sz d) {
    std::remove_cvref_t<decltype(x)> y(x.size());
    for (sz b = 0; b < p.B; ++b)
      for (sz t = 0; t < p.Sk; ++t)
        for (sz h = 0; h < p.Hkv; ++h)
          std::copy_n(x.begin() + ((b * p.Sk + t) * p.Hkv + h) * d, d, y.begin() + ((b * p.Hkv + h) * p.Sk + t) * d);
    return y;
  };
  const std::vector<TK> kh = kv_head_major ? to_head_major(k, p.D) : k;
  const std::vector<TV> vh = kv_head_major ? to_head_major(v, p.Dv) : v;
  using ck = tensor_view<const TK>;
  using cv = tensor_view<const TV>;
  const auto kview =
      kv_head_major ? ck::bhtd(kh.data(), p.B, p.Hkv, p.Sk, p.D) : ck::bthd(kh.data(), p.B, p.Sk, p.Hkv, p.D);
  const auto vview =
      kv_head_major ? cv::bhtd(vh.data(), p.B, p.Hkv, p.Sk, p.Dv) : cv::bthd(vh.data(), p.B, p.Sk, p.Hkv, p.Dv);
  std::vector<float> buf(std::max(nq, no) + 1, -7.0f), outbuf(no + 1, -7.0f);
  const auto qview = q_head_major ? tensor_view<float>::bhtd(buf.data(), p.B, p.Hq, p.Sq, p.D)
                                  : tensor_view<float>::bthd(buf.data(), p.B, p.Sq, p.Hq, p.D);
  for (sz b = 0; b < p.B; ++b)
    for (sz i = 0; i < p.Sq; ++i)
      for (sz h = 0; h < p.Hq; ++h)
        for (sz d = 0; d < p.D; ++d)
          qview(b, i, h, d) = q[static_cast<std::size_t>(((b * p.Sq + i) * p.Hq + h) * p.D + d)];
  float* out_data = alias ? buf.data() : outbuf.data();
  const auto oview = tensor_view<float>::bthd(out_data, p.B, p.Sq, p.Hq, p.Dv);

  fast_attention_options f;
  static attention_workspace ws;
  f.workspace = &ws;
  f.executor = [](std::ptrdiff_t n, task_ref t) {
    for (std::ptrdiff_t i = 0; i < n; ++i) t(i);
  };
  f.split_keys = in.ConsumeBool() ? 64 : 128;
  f.query_tile = in.ConsumeIntegralInRange<int>(0, 6);
  f.bf16_dot_products = in.ConsumeBool();
  // bfloat16 K or V with the dot products allowed and AVX-512 kernels on a CPU with AVX512_BF16 (the
  // decode path then takes them): their own bound, attention/attention.hpp; the fp32 bound otherwise
  constexpr bool bf16_kv = std::is_same_v<TK, bfloat16> || std::is_same_v<TV, bfloat16>;
  bool dot_bound = f.bf16_dot_products && bf16_kv && posenc::kernels::active_isa() == posenc::kernels::isa::avx512;
#if POSENC_HAS_X86_KERNELS
  dot_bound = dot_bound && posenc::kernels::detail::has_avx512bf16();
#endif

  std::vector<double> ref(no, -7.0), weights(static_cast<std::size_t>(p.B * p.Hq * p.Sq * p.Sk));
  attention_options ow = o;
  ow.weights = weights;
  bool ref_threw = false, got_threw = false;
  using cd = tensor_view<const double>;
  try {
    sdpa(cd::bthd(qd.data(), p.B, p.Sq, p.Hq, p.D), cd::bthd(kd.data(), p.B, p.Sk, p.Hkv, p.D),
         cd::bthd(vd.data(), p.B, p.Sk, p.Hkv, p.Dv), tensor_view<double>::bthd(ref.data(), p.B, p.Sq, p.Hq, p.Dv), enc,
         ow);
  } catch (const posenc::config_error&) {
    ref_threw = true;
  }
  try {
    attention(tensor_view<const float>(qview), kview, vview, oview, enc, o, f);
  } catch (const posenc::config_error&) {
    got_threw = true;
  }
  if (ref_threw != got_threw) fail(ref_threw ? "only sdpa threw" : "only attention threw", 0, 0, 0);
  if (ref_threw) return;

  // the bound: A from the finite q / k rows (row norms), biases over the visible pairs
  auto maxnorm = [](const std::vector<double>& x, sz d) {
    double m = 0;
    for (std::size_t r = 0; r + static_cast<std::size_t>(d) <= x.size(); r += static_cast<std::size_t>(d)) {
      double n = 0;
      for (sz i = 0; i < d; ++i) n += x[r + static_cast<std::size_t>(i)] * x[r + static_cast<std::size_t>(i)];
      if (std::isfinite(n)) m = std::max(m, std::sqrt(n));
    }
    return m;
  };
  double scale = p.scale ? *p.scale : 1.0 / std::sqrt(static_cast<double>(p.D));
  if constexpr (has_softmax_scale_multiplier<E>) scale *= enc.softmax_scale_multiplier();
  const double qn = maxnorm(qd, p.D) * growth, kn = maxnorm(kd, p.D) * growth;
  double A = std::fabs(scale) * qn * kn, bmax = 0, vmax = relative_kv_encoding<E> ? 1.0 : 0.0;
  const auto ppq = mask->query_positions(), ppk = mask->key_positions();
  for (sz b = 0; b < p.B; ++b)
    for (sz i = 0; i < p.Sq; ++i)
      for (sz j = 0; j < p.Sk; ++j) {
        if (!mask->allowed(b, i, j)) continue;
        for (sz d = 0; d < p.Dv * p.Hkv; ++d) {
          const double x = vd[static_cast<std::size_t>((b * p.Sk + j) * p.Hkv * p.Dv + d)];
          if (std::isfinite(x)) vmax = std::max(vmax, std::fabs(x));
        }
        for (sz h = 0; h < p.Hq; ++h) {
          const i64 x = ppq[static_cast<std::size_t>(b * p.Sq + i)], y = ppk[static_cast<std::size_t>(b * p.Sk + j)];
          double t = 0;
          if constexpr (score_bias_encoding<E>) t += std::fabs(static_cast<double>(enc.bias(h, x, y)));
          if constexpr (relative_kv_encoding<E>) {
            double n = 0;
            for (double e : enc.relative_key(h, x, y)) n += e * e;
            t += std::fabs(scale) * qn * std::sqrt(n);
          }
          bmax = std::max(bmax, t);
        }
      }
  A += bmax;
  const double tol = dot_bound ? 0x1p-8 * (1 + A) * vmax + static_cast<double>(p.Sk + 2) * 0x1p-126
                               : 5e-7 * (1 + A) * vmax + static_cast<double>(p.Sk + 2) * 0x1p-149;
  const sz G = p.Hq / p.Hkv;
  for (sz b = 0; b < p.B; ++b)
    for (sz i = 0; i < p.Sq; ++i)
      for (sz h = 0; h < p.Hq; ++h) {
        // the documented freedom: a visible key with a non-finite value and a weight of (about) 0
        bool free_row = false;
        for (sz j = 0; j < p.Sk && !free_row; ++j) {
          if (!mask->allowed(b, i, j)) continue;
          const double w = weights[static_cast<std::size_t>(((b * p.Hq + h) * p.Sq + i) * p.Sk + j)];
          if (!(std::fabs(w) < 1e-30)) continue;
          for (sz d = 0; d < p.Dv; ++d)
            if (!std::isfinite(vd[static_cast<std::size_t>(((b * p.Sk + j) * p.Hkv + h / G) * p.Dv + d)]))
              free_row = true;
        }
        if (free_row) continue;
        for (sz d = 0; d < p.Dv; ++d) {
          const auto e = static_cast<std::size_t>(((b * p.Sq + i) * p.Hq + h) * p.Dv + d);
          const double want = ref[e], got = static_cast<double>(oview(b, i, h, d));
          if (std::isnan(want) != std::isnan(got)) fail("NaN in one only", e, got, want);
          if (std::isnan(want)) continue;
          if (std::isinf(want) || std::isinf(got)) {
            if (want != got) fail("infinite in one only", e, got, want);
            continue;
          }
          if (!(std::fabs(got - want) <= tol)) {
            std::fprintf(stderr, "A %g vmax %g tol %g\n", A, vmax, tol);
            fail("beyond the bound", e, got, want);
          }
        }
      }
}

template <class E>
void with_storage(FuzzedDataProvider& in, problem& p, const E& enc, double growth, bool transforms) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {  // one mixed pair: every K and V type, fewer instantiations
    case 0:
      return run<float, float>(in, p, enc, growth, transforms);
    case 1:
      return run<bfloat16, bfloat16>(in, p, enc, growth, transforms);
    case 2:
      return run<float16, float16>(in, p, enc, growth, transforms);
    default:
      return run<bfloat16, float16>(in, p, enc, growth, transforms);
  }
}

std::vector<double> table(prng& r, std::size_t n, double amp) {
  std::vector<double> t(n);
  for (double& x : t) x = amp * static_cast<double>(r.uniform()) / 2;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  problem p{};
  p.B = in.ConsumeIntegralInRange<sz>(1, 2);
  p.Sq = in.ConsumeIntegralInRange<sz>(0, 1) == 0 ? 1 : in.ConsumeIntegralInRange<sz>(0, 20);
  p.Sk = in.ConsumeBool() ? in.ConsumeIntegralInRange<sz>(0, 70) : in.ConsumeIntegralInRange<sz>(0, 140);
  p.Hkv = in.ConsumeIntegralInRange<sz>(1, 2);
  p.Hq = p.Hkv * (sz{1} << in.ConsumeIntegralInRange<int>(0, 3));
  p.D = 2 * in.ConsumeIntegralInRange<sz>(1, 20);
  p.Dv = in.ConsumeIntegralInRange<sz>(1, 40);
  const int encoder = in.ConsumeIntegralInRange<int>(0, 7);
  const bool small_positions = encoder == 5 || in.ConsumeBool();
  p.causal = in.ConsumeBool();
  if (in.ConsumeBool()) p.window = in.ConsumeBool() ? in.ConsumeIntegralInRange<i64>(1, 40) : in.ConsumeIntegral<i64>();
  if (in.ConsumeBool()) p.scale = in.ConsumeFloatingPointInRange<double>(-2.0, 2.0);
  if (in.ConsumeBool()) {
    for (sz x = 0; x < p.B * p.Sq; ++x) p.pq.push_back(position(in, small_positions));
    for (sz x = 0; x < p.B * p.Sk; ++x) p.pk.push_back(position(in, small_positions));
    if (in.ConsumeBool()) {  // mostly ordered, as a cache
      std::sort(p.pk.begin(), p.pk.end());
      std::sort(p.pq.begin(), p.pq.end());
    }
  }
  if (in.ConsumeBool())
    for (sz b = 0; b < p.B; ++b) p.lengths.push_back(in.ConsumeIntegralInRange<i64>(0, p.Sk));
  if (in.ConsumeBool())
    for (sz j = 0; j < p.B * p.Sk; ++j) p.key_mask.push_back(in.ConsumeIntegralInRange<int>(0, 5) != 0);
  if (in.ConsumeBool()) {
    for (sz x = 0; x < p.B * p.Sq; ++x) p.sq.push_back(in.ConsumeIntegralInRange<std::int32_t>(-1, 2));
    for (sz x = 0; x < p.B * p.Sk; ++x) p.sk.push_back(in.ConsumeIntegralInRange<std::int32_t>(-1, 2));
  }
  if (in.ConsumeBool())
    for (sz h = 0; h < p.Hq; ++h) {
      const int kind = in.ConsumeIntegralInRange<int>(0, 5);
      p.sinks.push_back(kind == 0   ? std::numeric_limits<double>::infinity()
                        : kind == 1 ? -std::numeric_limits<double>::infinity()
                                    : in.ConsumeFloatingPointInRange<double>(-4.0, 4.0));
    }
  p.transform_keys = !in.ConsumeBool() || encoder == 0;
  if (in.ConsumeBool()) p.chunk = in.ConsumeBool() ? in.ConsumeIntegralInRange<i64>(1, 40) : in.ConsumeIntegral<i64>();
  if (in.ConsumeBool()) p.softcap = in.ConsumeFloatingPointInRange<double>(0.05, 60.0);
  prng r{in.ConsumeIntegral<std::uint64_t>()};
  const int D = static_cast<int>(p.D);
  try {
    switch (encoder) {
      case 0:
        return with_storage(in, p, no_position{}, 1.0, false), 0;
      case 1:
        return with_storage(in, p, rope({.head_dim = D}), 1.0, true), 0;
      case 2:
        return with_storage(in, p, alibi({.num_heads = p.Hq}), 1.0, false), 0;
      case 3: {
        const auto t = table(r, static_cast<std::size_t>(32 * p.Hq), 8);
        const t5_bias_config c{.num_buckets = 32, .max_distance = 64, .bidirectional = !p.causal, .num_heads = p.Hq};
        return with_storage(in, p, t5_bias(c, std::span<const double>(t)), 1.0, false), 0;
      }
      case 4: {
        shaw_relative_config c{.head_dim = p.D, .k_left = 3, .k_right = 5};
        c.use_value_term = in.ConsumeBool();
        c.shared_across_heads = in.ConsumeBool();
        c.num_heads = p.Hq;
        const auto n = static_cast<std::size_t>((c.shared_across_heads ? 1 : p.Hq) * c.table_rows() * p.D);
        const auto kt = table(r, n, 2), vt = table(r, c.use_value_term ? n : 0, 2);
        return with_storage(in, p, shaw_relative(c, std::span<const double>(kt), std::span<const double>(vt)), 1.0,
                            false),
               0;
      }
      case 5:
        return with_storage(in, p, xpos({.head_dim = D}), 2.0, true), 0;
      case 6:
        return with_storage(in, p, combine(rope({.head_dim = D}), alibi({.num_heads = p.Hq})), 1.0, true), 0;
      default: {
        const auto t = table(r, static_cast<std::size_t>(32 * p.Hq), 8);
        const t5_bias_config c{.num_buckets = 32, .max_distance = 64, .bidirectional = true, .num_heads = p.Hq};
        return with_storage(in, p, combine(rope({.head_dim = D}), t5_bias(c, std::span<const double>(t))), 1.0, true),
               0;
      }
    }
  } catch (const posenc::config_error&) {
    return 0;  // an encoder refusing its configuration
  }
}
