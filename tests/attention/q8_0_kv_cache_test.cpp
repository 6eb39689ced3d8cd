// tests/attention/q8_0_kv_cache_test.cpp — kv_cache<float> with q8_0 keys and/or values
// (kv_cache_config::key_type / value_type): configuration errors, quantise-on-append (bit-exact with
// the reference quantiser on the transformed keys), attend through the fused q8_0 path (bit-identical
// to the float call on the dequantised cache) and through sdpa (weights asked), a RoPE schedule
// switch (dequantise -> re-rotate -> requantise) and the drift of repeated window shifts against the
// bound of docs/kv-cache.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/rope/rope.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc::block_q8_0;
using posenc::kv_cache;
using posenc::kv_cache_type;
using posenc_test::error_of;
using posenc_test::tensor4;

namespace {

/// A q8_0 view dequantised into [B, T, H, n] floats.
std::vector<float> dequantized(posenc::tensor_view<const block_q8_0> x) {
  std::vector<float> out;
  for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
    for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
      for (std::ptrdiff_t h = 0; h < x.heads(); ++h) {
        std::vector<float> row(static_cast<std::size_t>(x.dim() * 32));
        posenc::q8_0::dequantize_row_ref(x.row(b, t, h), row.data(), x.dim() * 32);
        out.insert(out.end(), row.begin(), row.end());
      }
  return out;
}

/// A float view copied into [B, T, H, D] order.
std::vector<float> dense(posenc::tensor_view<const float> x) {
  std::vector<float> out;
  for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
    for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
      for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
        for (std::ptrdiff_t d = 0; d < x.dim(); ++d) out.push_back(x(b, t, h, d));
  return out;
}

std::vector<block_q8_0> quantized(const std::vector<float>& x) {
  std::vector<block_q8_0> q(x.size() / 32);
  posenc::q8_0::quantize_row_ref(x.data(), q.data(), static_cast<std::ptrdiff_t>(x.size()));
  return q;
}

bool same_bytes(const std::vector<block_q8_0>& a, posenc::tensor_view<const block_q8_0> b) {
  std::vector<block_q8_0> c;
  for (std::ptrdiff_t i = 0; i < b.batch(); ++i)
    for (std::ptrdiff_t t = 0; t < b.tokens(); ++t)
      for (std::ptrdiff_t h = 0; h < b.heads(); ++h) c.insert(c.end(), b.row(i, t, h), b.row(i, t, h) + b.dim());
  return a.size() == c.size() && std::memcmp(a.data(), c.data(), a.size() * sizeof(block_q8_0)) == 0;
}

}  // namespace

TEST_CASE("kv cache q8_0: configuration errors name the field", "[attention][kv_cache][q8_0]") {
  error_of([] { kv_cache<double>({.kv_heads = 2, .head_dim = 64, .key_type = kv_cache_type::q8_0}); },
           "kv_cache.key_type");
  error_of([] { kv_cache<double>({.kv_heads = 2, .head_dim = 64, .value_type = kv_cache_type::q8_0}); },
           "kv_cache.value_type");
  error_of([] { kv_cache<float>({.kv_heads = 2, .head_dim = 48, .key_type = kv_cache_type::q8_0}); },
           "kv_cache.head_dim");
  error_of([] { kv_cache<float>({.kv_heads = 2, .head_dim = 64, .value_dim = 40, .value_type = kv_cache_type::q8_0}); },
           "kv_cache.value_dim");
  // native values of any dim beside q8_0 keys
  CHECK_NOTHROW(kv_cache<float>({.kv_heads = 2, .head_dim = 64, .value_dim = 40, .key_type = kv_cache_type::q8_0}));
}

TEST_CASE("kv cache q8_0: append quantises the transformed keys and the values; attend reads the blocks",
          "[attention][kv_cache][q8_0]") {
  const std::ptrdiff_t B = 2, S = 70, H = 2, Hq = 8, D = 64;
  const posenc::rope enc({.head_dim = static_cast<int>(D)});
  const tensor4<float> k(B, S, H, D, 1), v(B, S, H, D, 2), q(B, 1, Hq, D, 3);
  kv_cache<float> ref({.batch = B, .kv_heads = H, .head_dim = D, .capacity = 16});
  for (const auto kt : {kv_cache_type::native, kv_cache_type::q8_0})
    for (const auto vt : {kv_cache_type::native, kv_cache_type::q8_0}) {
      if (kt == kv_cache_type::native && vt == kv_cache_type::native) continue;
      INFO("keys " << (kt == kv_cache_type::q8_0 ? "q8_0" : "f32") << ", values "
                   << (vt == kv_cache_type::q8_0 ? "q8_0" : "f32"));
      kv_cache<float> c({.batch = B, .kv_heads = H, .head_dim = D, .capacity = 16, .key_type = kt, .value_type = vt});
      kv_cache<float> r({.batch = B, .kv_heads = H, .head_dim = D, .capacity = 16});
      // three appends, so the storage grows twice (the q8_0 rows are moved, not requantised)
      for (const auto& [t0, n] : {std::pair{0, 10}, std::pair{10, 1}, std::pair{11, 59}}) {
        tensor4<float> kk(B, n, H, D), vv(B, n, H, D);
        for (std::ptrdiff_t b = 0; b < B; ++b)
          for (std::ptrdiff_t t = 0; t < n; ++t)
            for (std::ptrdiff_t h = 0; h < H; ++h)
              for (std::ptrdiff_t d = 0; d < D; ++d)
                kk.at(b, t, h, d) = k.at(b, t0 + t, h, d), vv.at(b, t, h, d) = v.at(b, t0 + t, h, d);
        (void)c.append(enc, kk.cview(), vv.cview(), posenc_test::batch_positions(B, n, t0));
        (void)r.append(enc, kk.cview(), vv.cview(), posenc_test::batch_positions(B, n, t0));
      }
      REQUIRE(c.length() == S);
      // stored blocks: the reference quantiser on the float cache's (rotated) keys and its values
      if (kt == kv_cache_type::q8_0) {
        CHECK(c.keys().tokens() == 0);
        CHECK(same_bytes(quantized(dense(r.keys())), c.keys_q8_0()));
      } else {
        CHECK(c.keys_q8_0().tokens() == 0);
      }
      if (vt == kv_cache_type::q8_0) CHECK(same_bytes(quantized(dense(r.values())), c.values_q8_0()));
      // attend: the fused call on the dequantised cache, bit for bit with q in fp32 (the int8 key
      // products of the default, where the CPU has them, are checked to their bound in fast_q8_dot_test.cpp)
      const auto kf = kt == kv_cache_type::q8_0 ? dequantized(c.keys_q8_0()) : dense(c.keys());
      const auto vf = vt == kv_cache_type::q8_0 ? dequantized(c.values_q8_0()) : dense(c.values());
      const auto pq = posenc_test::batch_positions(B, 1, S);
      const auto pk = posenc_test::batch_positions(B, S, 0);
      tensor4<float> got(B, 1, Hq, D), want(B, 1, Hq, D);
      c.attend(enc, q.cview(), got.view(), pq, {.causal = true}, {.q8_0_int8_dot_products = false});
      using cv = posenc::tensor_view<const float>;
      posenc::attention(q.cview(), cv::bthd(kf.data(), B, S, H, D), cv::bthd(vf.data(), B, S, H, D), want.view(), enc,
                        {.causal = true, .query_positions = pq, .key_positions = pk, .transform_keys = false});
      CHECK(std::memcmp(got.data.data(), want.data.data(), got.data.size() * sizeof(float)) == 0);
      // with weights: the sdpa path on the dequantised cache
      std::vector<double> w(static_cast<std::size_t>(B * Hq * S));
      tensor4<float> gw(B, 1, Hq, D);
      c.attend(enc, q.cview(), gw.view(), pq, {.causal = true, .weights = w});
      POSENC_CHECK_CLOSE(gw.data, want.data, 1e-5, 1e-5);
      double wsum = 0;
      for (double x : w) wsum += x;
      CHECK(wsum == Approx(static_cast<double>(B * Hq)).epsilon(1e-9));
    }
}

TEST_CASE("kv cache q8_0: a RoPE schedule switch re-rotates the dequantised keys and requantises them",
          "[attention][kv_cache][q8_0]") {
  // dynamic NTK: the frequencies change when the cache passes 40 tokens
  const std::ptrdiff_t B = 1, H = 2, D = 64, first = 30, more = 20;
  const posenc::rope enc({.head_dim = static_cast<int>(D),
                          .scaling = posenc::dynamic_ntk_scaling{.factor = 2, .original_max_position = 40}});
  const tensor4<float> k0(B, first, H, D, 5), v0(B, first, H, D, 6), k1(B, more, H, D, 7), v1(B, more, H, D, 8);
  kv_cache<float> c({.batch = B, .kv_heads = H, .head_dim = D, .key_type = kv_cache_type::q8_0});
  const auto p0 = posenc_test::batch_positions(B, first, 0), p1 = posenc_test::batch_positions(B, more, first);
  CHECK(c.append(enc, k0.cview(), v0.cview(), p0) == posenc::cache_event::none);
  CHECK(c.append(enc, k1.cview(), v1.cview(), p1) == posenc::cache_event::rerotated);
  // exact: the raw keys rotated afresh under the final frequencies
  tensor4<float> want = k0;
  enc.rotate(want.view(), p0, enc.at(first + more));
  const auto got = dequantized(c.keys_q8_0().token_slice(0, first));
  // Two quantisations (before and after the re-rotation): per element <= (1 + sqrt 2) e, e = 9/8 M / 254,
  // M the row's largest RoPE pair norm (<= sqrt 2 max |x|; docs/kv-cache.md).
  for (std::ptrdiff_t t = 0; t < first; ++t)
    for (std::ptrdiff_t h = 0; h < H; ++h) {
      double m = 0;
      for (std::ptrdiff_t d = 0; d < D; ++d) m = std::max(m, std::fabs(static_cast<double>(want.at(0, t, h, d))));
      const double M = std::sqrt(2.0) * m, bound = (1 + std::sqrt(2.0)) * 9 / 8 * M / 254 + 1e-6 * M;
      for (std::ptrdiff_t d = 0; d < D; ++d) {
        const float g = got[static_cast<std::size_t>((t * H + h) * D + d)];
        CHECK(std::fabs(static_cast<double>(g) - want.at(0, t, h, d)) <= bound);
      }
    }
}

TEST_CASE("kv cache q8_0: drift of repeated window shifts stays within (N + 1) sqrt 2 e",
          "[attention][kv_cache][q8_0]") {
  // N shifts of a q8_0 cache (each: dequantise the moved keys, rotate by -evict, requantise) against a
  // float cache shifted the same way (exact rotations up to fp32 rounding) and against that float
  // cache quantised once at the end (docs/kv-cache.md states the bound).
  const std::ptrdiff_t B = 2, H = 2, D = 64, S = 200, sinks = 4, evict = 3, N = 24;
  const posenc::rope enc({.head_dim = static_cast<int>(D)});
  const tensor4<float> k(B, S, H, D, 11), v(B, S, H, D, 12);
  kv_cache<float> c(
      {.batch = B, .kv_heads = H, .head_dim = D, .key_type = kv_cache_type::q8_0, .value_type = kv_cache_type::q8_0});
  kv_cache<float> f({.batch = B, .kv_heads = H, .head_dim = D});
  (void)c.append(enc, k.cview(), v.cview(), posenc_test::batch_positions(B, S, 0));
  (void)f.append(enc, k.cview(), v.cview(), posenc_test::batch_positions(B, S, 0));
  const auto values_before = dequantized(c.values_q8_0());
  for (int i = 0; i < N; ++i) {
    c.shift_window(enc, sinks, evict);
    f.shift_window(enc, sinks, evict);
  }
  REQUIRE(c.length() == S - N * evict);
  CHECK(std::equal(c.positions().begin(), c.positions().end(), f.positions().begin(), f.positions().end()));
  const auto got = dequantized(c.keys_q8_0()), exact = dense(f.keys());
  const auto once =
      dequantized(posenc::tensor_view<const block_q8_0>::bthd(quantized(exact).data(), B, c.length(), H, D / 32));
  const auto rows = B * c.length() * H;
  const double r2 = std::sqrt(2.0), growth = 1 + (N + 1) * r2 * 9 / 8 / 254;  // M may grow by the drift itself
  double worst = 0, worst_once = 0;
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    const auto t = (r / H) % c.length();
    double m = 0;
    for (std::ptrdiff_t d = 0; d < D; ++d) m = std::max(m, std::fabs(static_cast<double>(exact[r * D + d])));
    const double M = r2 * m;
    const int shifts = t < sinks ? 0 : N;  // sinks never move
    const double e = 9.0 / 8 * M / 254, bound = (shifts + 1) * r2 * e * growth + 1e-6 * (shifts + 1) * M;
    for (std::ptrdiff_t d = 0; d < D; ++d) {
      const auto i = static_cast<std::size_t>(r * D + d);
      const double err = std::fabs(static_cast<double>(got[i]) - exact[i]);
      const double e1 = std::fabs(static_cast<double>(got[i]) - once[i]);
      worst = std::max(worst, err / bound);
      worst_once = std::max(worst_once, e1 / (bound + e));
    }
  }
  INFO("worst drift / bound " << worst << ", vs quantised once " << worst_once);
  CHECK(worst <= 1.0);
  CHECK(worst_once <= 1.0);
  CHECK(worst > 0.0);  // the shifts do requantise
  // values are moved, never requantised: the kept rows are the original blocks
  const auto values_after = dequantized(c.values_q8_0());
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < c.length(); ++t) {
      const std::ptrdiff_t src = t < sinks ? t : t + N * evict;
      CHECK(std::equal(values_after.begin() + (b * c.length() + t) * H * D,
                       values_after.begin() + (b * c.length() + t + 1) * H * D,
                       values_before.begin() + (b * S + src) * H * D));
    }
}

TEST_CASE("kv cache q8_0: padding tokens holding NaN and Inf are never attended", "[attention][kv_cache][q8_0]") {
  const std::ptrdiff_t B = 1, S = 10, H = 2, Hq = 4, D = 64;
  const posenc::alibi enc({.num_heads = Hq});
  tensor4<float> k(B, S, H, D, 31), v(B, S, H, D, 32);
  const tensor4<float> q(B, 1, Hq, D, 33);
  const std::vector<std::uint8_t> mask{1, 1, 1, 0, 1, 1, 1, 0, 1, 1};
  auto run = [&](float junk) {
    tensor4<float> kk = k, vv = v;
    for (const std::ptrdiff_t t : {3, 7})
      for (std::ptrdiff_t h = 0; h < H; ++h)
        for (std::ptrdiff_t d = 0; d < D; ++d) kk.at(0, t, h, d) = vv.at(0, t, h, d) = d % 5 == 0 ? junk : -junk;
    kv_cache<float> c(
        {.kv_heads = H, .head_dim = D, .key_type = kv_cache_type::q8_0, .value_type = kv_cache_type::q8_0});
    (void)c.append(enc, kk.cview(), vv.cview(), posenc_test::batch_positions(B, S, 0), mask);
    tensor4<float> out(B, 1, Hq, D);
    c.attend(enc, q.cview(), out.view(), posenc_test::batch_positions(B, 1, S), {.causal = true});
    return out.data;
  };
  const auto clean = run(0.0f), nan = run(std::numeric_limits<float>::quiet_NaN()),
             inf = run(std::numeric_limits<float>::infinity());
  for (std::size_t i = 0; i < clean.size(); ++i) {
    CHECK(std::isfinite(clean[i]));
    CHECK(nan[i] == clean[i]);
    CHECK(inf[i] == clean[i]);
  }
}
