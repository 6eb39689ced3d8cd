// tests/attention/fast_support.hpp — the harness that runs posenc::attention and the sdpa oracle on
// the same (storage-rounded) inputs and measures the error against the documented bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/half.hpp>

#include "attention_support.hpp"

namespace posenc_test {

struct fast_shape {
  std::ptrdiff_t B = 1, Sq = 1, Sk = 1, Hq = 1, Hkv = 1, D = 32, Dv = 32;
};

/// Masks, positions and sinks of one case, owning the data behind the option spans.
struct fast_masks {
  bool causal = false;
  std::optional<std::int64_t> window{};
  std::vector<std::int64_t> pq, pk, lengths;
  std::vector<std::uint8_t> key_mask;
  std::vector<std::int32_t> sq, sk;
  std::vector<double> sinks;
  std::optional<double> scale{};
  bool transform_keys = true;
  [[nodiscard]] posenc::attention_options options() const {
    posenc::attention_options o;
    o.scale = scale;
    o.causal = causal;
    o.sliding_window = window;
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

/// Inputs in storage type T for k and v (float q), and their exact double images for the oracle.
template <class T>
struct fast_inputs {
  fast_shape s;
  std::vector<float> q;
  std::vector<T> k, v;
  std::vector<double> qd, kd, vd;
  bool head_major_kv = false;  ///< run_fast hands K and V over as [batch, heads, seq, dim] copies
  fast_inputs(fast_shape sh, std::uint64_t seed, double qk_amp = 1.0) : s(sh) {
    const auto nq = static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.D),
               nk = static_cast<std::size_t>(s.B * s.Sk * s.Hkv * s.D),
               nv = static_cast<std::size_t>(s.B * s.Sk * s.Hkv * s.Dv);
    const auto rq = random_values(nq, seed), rk = random_values(nk, seed + 1), rv = random_values(nv, seed + 2);
    for (double x : rq) q.push_back(static_cast<float>(x * qk_amp));
    for (double x : rk) k.push_back(T(static_cast<float>(x * qk_amp)));
    for (double x : rv) v.push_back(T(static_cast<float>(x)));
    for (float x : q) qd.push_back(x);
    for (T x : k) kd.push_back(static_cast<double>(static_cast<float>(x)));
    for (T x : v) vd.push_back(static_cast<double>(static_cast<float>(x)));
  }
  [[nodiscard]] double vmax() const {
    double m = 0;
    for (double x : vd) m = std::max(m, std::fabs(x));
    return m;
  }
};

template <class T>
std::vector<float> run_fast(const fast_inputs<T>& in, const auto& enc, const posenc::attention_options& o,
                            const posenc::fast_attention_options& f = {}) {
  const auto& s = in.s;
  std::vector<float> out(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), -7.0f);
  using cv = posenc::tensor_view<const float>;
  using tv = posenc::tensor_view<const T>;
  auto head_major = [&](const std::vector<T>& x, std::ptrdiff_t d) {  // [b][t][h][:] -> [b][h][t][:]
    std::vector<T> y(x.size());
    for (std::ptrdiff_t b = 0; b < s.B; ++b)
      for (std::ptrdiff_t t = 0; t < s.Sk; ++t)
        for (std::ptrdiff_t h = 0; h < s.Hkv; ++h)
          std::copy_n(x.begin() + ((b * s.Sk + t) * s.Hkv + h) * d, d, y.begin() + ((b * s.Hkv + h) * s.Sk + t) * d);
    return y;
  };
  const std::vector<T> kh = in.head_major_kv ? head_major(in.k, s.D) : std::vector<T>{},
                       vh = in.head_major_kv ? head_major(in.v, s.Dv) : std::vector<T>{};
  const auto kv =
      in.head_major_kv ? tv::bhtd(kh.data(), s.B, s.Hkv, s.Sk, s.D) : tv::bthd(in.k.data(), s.B, s.Sk, s.Hkv, s.D);
  const auto vv =
      in.head_major_kv ? tv::bhtd(vh.data(), s.B, s.Hkv, s.Sk, s.Dv) : tv::bthd(in.v.data(), s.B, s.Sk, s.Hkv, s.Dv);
  posenc::attention(cv::bthd(in.q.data(), s.B, s.Sq, s.Hq, s.D), kv, vv,
                    posenc::tensor_view<float>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv), enc, o, f);
  return out;
}

template <class T>
std::vector<double> run_oracle(const fast_inputs<T>& in, const auto& enc, const posenc::attention_options& o) {
  const auto& s = in.s;
  std::vector<double> out(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv));
  using cv = posenc::tensor_view<const double>;
  posenc::sdpa(cv::bthd(in.qd.data(), s.B, s.Sq, s.Hq, s.D), cv::bthd(in.kd.data(), s.B, s.Sk, s.Hkv, s.D),
               cv::bthd(in.vd.data(), s.B, s.Sk, s.Hkv, s.Dv),
               posenc::tensor_view<double>::bthd(out.data(), s.B, s.Sq, s.Hq, s.Dv), enc, o);
  return out;
}

/// The documented bound of attention/attention.hpp: |out - ref| <= 5e-7 (1 + A) vmax, A = max |logit|.
inline constexpr double fast_bound = 5e-7;
/// The bound of the AVX512_BF16 kernels (fast_attention_options::bf16_dot_products, on by default for
/// bfloat16 K/V on the decode path of CPUs with the instruction): |out - ref| <= 2^-8 (1 + A) vmax.
inline constexpr double bf16_dot_bound = 0x1p-8;

/// An upper bound of max |logit| for the call: scale |q|max |k|max (+ Shaw, DeBERTa) + max |bias| over the
/// positions of the call (computed by brute force from the encoder), |q|, |k| after any transform
/// bounded by `growth` (1 for rotations).
template <class T, class E>
double logit_bound(const fast_inputs<T>& in, const E& enc, const posenc::attention_options& o,
                   const posenc::attention_mask& mask, double growth = 1.0) {
  const auto& s = in.s;
  auto maxnorm = [](const std::vector<double>& x, std::ptrdiff_t d) {
    double m = 0;
    for (std::size_t r = 0; r + static_cast<std::size_t>(d) <= x.size(); r += static_cast<std::size_t>(d)) {
      double n = 0;
      for (std::ptrdiff_t i = 0; i < d; ++i)
        n += x[r + static_cast<std::size_t>(i)] * x[r + static_cast<std::size_t>(i)];
      m = std::max(m, std::sqrt(n));
    }
    return m;
  };
  double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(s.D));
  if constexpr (posenc::has_softmax_scale_multiplier<E>) scale *= enc.softmax_scale_multiplier();
  const double qn = maxnorm(in.qd, s.D) * growth, kn = maxnorm(in.kd, s.D) * growth;
  double a = std::fabs(scale) * qn * kn;
  if constexpr (posenc::contextual_position_table_encoding<E>) {  // CoPE: q . e(p), |e(p)| <= max |e(n)|
    double en = 0;
    for (std::int64_t n = 0; n < enc.position_count(); ++n) {
      double x = 0;
      for (double e : enc.position_embedding(0, n)) x += e * e;
      en = std::max(en, std::sqrt(x));
    }
    a += (enc.position_term_scaled() ? std::fabs(scale) : 1.0) * qn * en;
  }
  if constexpr (posenc::score_bias_encoding<E> || posenc::relative_kv_encoding<E> ||
                posenc::relative_query_encoding<E>) {
    double bmax = 0;
    const auto pq = mask.query_positions(), pk = mask.key_positions();
    for (std::ptrdiff_t b = 0; b < s.B; ++b)
      for (std::ptrdiff_t i = 0; i < s.Sq; ++i)
        for (std::ptrdiff_t j = 0; j < s.Sk; ++j) {
          if (!mask.allowed(b, i, j)) continue;
          for (std::ptrdiff_t h = 0; h < s.Hq; ++h) {
            const auto x = pq[static_cast<std::size_t>(b * s.Sq + i)], y = pk[static_cast<std::size_t>(b * s.Sk + j)];
            double t = 0;
            if constexpr (posenc::score_bias_encoding<E>) t += std::fabs(enc.bias(h, x, y));
            if constexpr (posenc::relative_kv_encoding<E>) {
              double n = 0;
              for (double e : enc.relative_key(h, x, y)) n += e * e;
              t += std::fabs(scale) * qn * std::sqrt(n);
            }
            if constexpr (posenc::relative_query_encoding<E>) {  // DeBERTa's p2c: k . aQ
              double n = 0;
              for (double e : enc.relative_query(h, x, y)) n += e * e;
              t += std::fabs(scale) * kn * std::sqrt(n);
            }
            bmax = std::max(bmax, t);
          }
        }
    a += bmax;
  }
  return a;
}

/// Runs both and returns max |out - ref| / ((1 + A) vmax); <= fast_bound is the documented contract.
template <class T, class E>
double fast_error(const fast_inputs<T>& in, const E& enc, const fast_masks& m,
                  const posenc::fast_attention_options& f = {}, double growth = 1.0) {
  const auto o = m.options();
  const auto got = run_fast(in, enc, o, f);
  const auto ref = run_oracle(in, enc, o);
  const posenc::attention_mask mask(o, in.s.B, in.s.Sq, in.s.Sk);
  double vmax = in.vmax();
  if constexpr (posenc::relative_kv_encoding<E>) {
    vmax += 1.0;  // the tests' Shaw value tables are within [-1, 1]
  }
  const double A = logit_bound(in, enc, o, mask, growth);
  double worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::isfinite(got[i]) ? std::fabs(static_cast<double>(got[i]) - ref[i]) : INFINITY);
  return worst / ((1 + A) * vmax);
}

}  // namespace posenc_test
