// tests/attention/kv_cache_test.cpp — decode == prefill for every hook, schedule switches under each
// cache policy, StreamingLLM window shift, padded batches, invalid use.
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/rope/rope.hpp>

#include "attention_support.hpp"
#include "support/check.hpp"

using posenc::attention_options;
using posenc::cache_event;
using posenc::kv_cache;
using posenc::rope_cache_policy;
using posenc_test::batch_positions;
using posenc_test::tensor4;

namespace {

template <class T>
tensor4<T> take(const tensor4<T>& x, std::ptrdiff_t first, std::ptrdiff_t count) {
  tensor4<T> r(x.b, count, x.h, x.d);
  for (std::ptrdiff_t b = 0; b < x.b; ++b)
    for (std::ptrdiff_t t = 0; t < count; ++t)
      for (std::ptrdiff_t h = 0; h < x.h; ++h)
        for (std::ptrdiff_t d = 0; d < x.d; ++d) r.at(b, t, h, d) = x.at(b, first + t, h, d);
  return r;
}

template <class T, class E>
tensor4<T> prefill(const tensor4<T>& q, const tensor4<T>& k, const tensor4<T>& v, const E& enc) {
  tensor4<T> out(q.b, q.s, q.h, v.d);
  const auto p = batch_positions(q.b, q.s, 0);
  posenc::sdpa(q.cview(), k.cview(), v.cview(), out.view(), enc,
               {.causal = true, .query_positions = p, .key_positions = p});
  return out;
}

/// Prefill `first` tokens into a cache, then decode the rest one by one; returns every output row.
template <class T, class E>
tensor4<T> decode(const tensor4<T>& q, const tensor4<T>& k, const tensor4<T>& v, const E& enc, std::ptrdiff_t first,
                  kv_cache<T>& cache) {
  tensor4<T> out(q.b, q.s, q.h, v.d);
  auto step = [&](std::ptrdiff_t t0, std::ptrdiff_t n) {
    const auto p = batch_positions(q.b, n, t0);
    CHECK(cache.append(enc, take(k, t0, n).cview(), take(v, t0, n).cview(), p) != cache_event::dropped);
    tensor4<T> o(q.b, n, q.h, v.d);
    cache.attend(enc, take(q, t0, n).cview(), o.view(), p, {.causal = true});
    for (std::ptrdiff_t b = 0; b < q.b; ++b)
      for (std::ptrdiff_t t = 0; t < n; ++t)
        for (std::ptrdiff_t h = 0; h < q.h; ++h)
          for (std::ptrdiff_t d = 0; d < v.d; ++d) out.at(b, t0 + t, h, d) = o.at(b, t, h, d);
  };
  if (first > 0) step(0, first);
  for (std::ptrdiff_t t = first; t < q.s; ++t) step(t, 1);
  return out;
}

template <class T, class E>
void check_prefill_decode(const E& enc, std::ptrdiff_t Hq, std::ptrdiff_t Hkv, std::ptrdiff_t D, double atol) {
  const std::ptrdiff_t B = 2, S = 11;
  const tensor4<T> q(B, S, Hq, D, 3), k(B, S, Hkv, D, 4), v(B, S, Hkv, D, 5);
  const auto full = prefill(q, k, v, enc);
  for (std::ptrdiff_t first : {0, 1, 6}) {
    kv_cache<T> cache({.batch = B, .kv_heads = Hkv, .head_dim = D});
    INFO("encoder " << enc.name() << ", prefill " << first << ", then decode");
    POSENC_CHECK_CLOSE(decode(q, k, v, enc, first, cache).data, full.data, atol, 0);
    CHECK(cache.length() == S);
    CHECK(cache.next_position(1) == S);
  }
}

template <class T>
void prefill_decode_all(double atol) {
  const std::ptrdiff_t D = 16, H = 4;
  std::vector<double> freqs(D / 2), slopes(H);
  for (std::size_t i = 0; i < freqs.size(); ++i) freqs[i] = std::pow(10000.0, -2.0 * double(i) / double(D));
  for (std::size_t h = 0; h < slopes.size(); ++h) slopes[h] = std::pow(2.0, -2.0 * double(h + 1));
  const posenc::rope rope({.head_dim = D});
  const posenc_test::local_shaw shaw{3, D, posenc_test::random_values(7 * D, 8), posenc_test::random_values(7 * D, 9)};
  check_prefill_decode<T>(posenc::no_position{}, H, H, D, atol);
  check_prefill_decode<T>(posenc_test::local_rope{freqs}, H, H, D, atol);
  check_prefill_decode<T>(rope, H, H, D, atol);
  check_prefill_decode<T>(posenc::rope({.head_dim = D, .scaling = posenc::linear_scaling{.factor = 4}}), H, H, D, atol);
  check_prefill_decode<T>(posenc_test::slope_bias{slopes}, H, H, D, atol);
  check_prefill_decode<T>(shaw, H, H, D, atol);
  check_prefill_decode<T>(posenc_test::local_scale_qk{D}, H, H, D, atol);
  check_prefill_decode<T>(posenc::combine(rope, posenc_test::slope_bias{slopes}), H, H, D, atol);
  // GQA and MQA
  check_prefill_decode<T>(posenc::combine(rope, posenc_test::slope_bias{slopes}), H, 2, D, atol);
  check_prefill_decode<T>(rope, H, 1, D, atol);
}

}  // namespace

TEST_CASE("kv cache: token-by-token decode equals the full prefill (double, every hook, GQA)",
          "[attention][kv_cache]") {
  prefill_decode_all<double>(1e-12);
}

TEST_CASE("kv cache: token-by-token decode equals the full prefill (float)", "[attention][kv_cache]") {
  prefill_decode_all<float>(1e-5);
}

namespace {

posenc::rope dynamic_rope(std::ptrdiff_t D) {
  return posenc::rope({.head_dim = static_cast<int>(D),
                       .scaling = posenc::dynamic_ntk_scaling{.factor = 2, .original_max_position = 6}});
}

posenc::rope longrope_rope(std::ptrdiff_t D) {
  std::vector<double> sf(static_cast<std::size_t>(D / 2)), lf(sf.size());
  for (std::size_t i = 0; i < sf.size(); ++i) {
    sf[i] = 1.0 + 0.1 * double(i);
    lf[i] = 1.5 + 0.7 * double(i);
  }
  return posenc::rope({.head_dim = static_cast<int>(D),
                       .scaling = posenc::longrope_scaling{
                           .short_factor = sf, .long_factor = lf, .original_max_position = 6, .factor = 4.0}});
}

}  // namespace

TEST_CASE("kv cache: a length-dependent schedule switch, re-rotated, equals a fresh prefill of the prefix",
          "[attention][kv_cache]") {
  const std::ptrdiff_t B = 1, S = 14, H = 2, D = 16;
  const tensor4<double> q(B, S, H, D, 13), k(B, S, H, D, 14), v(B, S, H, D, 15);
  for (const auto& enc : {dynamic_rope(D), longrope_rope(D)}) {
    REQUIRE(enc.schedule().length_dependent());
    kv_cache<double> cache({.batch = B, .kv_heads = H, .head_dim = D});
    int rerotations = 0;
    for (std::ptrdiff_t t = 0; t < S; ++t) {
      const std::vector<std::int64_t> p{t};
      const auto ev = cache.append(enc, take(k, t, 1).cview(), take(v, t, 1).cview(), p);
      rerotations += ev == cache_event::rerotated ? 1 : 0;
      tensor4<double> o(B, 1, H, D);
      cache.attend(enc, take(q, t, 1).cview(), o.view(), p, {.causal = true});
      // HF semantics of the prefix [0, t]: every key and the query rotated at length t + 1.
      const auto full = prefill(take(q, 0, t + 1), take(k, 0, t + 1), take(v, 0, t + 1), enc);
      INFO("step " << t);
      POSENC_CHECK_CLOSE(o.data, take(full, t, 1).data, 1e-12, 0);
      // The cached keys equal fresh keys rotated under the schedule at the current length.
      auto fresh = take(k, 0, t + 1);
      const auto pos = posenc::arange_positions(t + 1);
      enc.rotate(fresh.view(), pos, enc.at(t + 1));
      std::vector<double> cached(fresh.data.size());
      const auto kv = cache.keys();
      for (std::ptrdiff_t j = 0; j <= t; ++j)
        for (std::ptrdiff_t h = 0; h < H; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) cached[static_cast<std::size_t>((j * H + h) * D + d)] = kv(0, j, h, d);
      POSENC_CHECK_CLOSE(cached, fresh.data, 1e-12, 0);
      REQUIRE(cache.rotated_with().has_value());
      CHECK(*cache.rotated_with() == enc.at(t + 1));
    }
    CHECK(rerotations >= 1);  // the schedule did switch (dynamic: every step past L0; LongRoPE: once)
  }
}

TEST_CASE("kv cache: drop_cache empties and reports; keep_stale reproduces HF's stale keys", "[attention][kv_cache]") {
  const std::ptrdiff_t B = 1, S = 10, H = 2, D = 16;
  const tensor4<double> q(B, S, H, D, 23), k(B, S, H, D, 24), v(B, S, H, D, 25);
  const auto enc = longrope_rope(D);
  SECTION("drop_cache") {
    kv_cache<double> cache({.batch = B, .kv_heads = H, .head_dim = D, .policy = rope_cache_policy::drop_cache});
    int drops = 0;
    for (std::ptrdiff_t t = 0; t < S; ++t) {
      const std::vector<std::int64_t> p{t};
      if (cache.append(enc, take(k, t, 1).cview(), take(v, t, 1).cview(), p) == cache_event::dropped) {
        ++drops;
        CHECK(cache.empty());
        CHECK(t == 6);  // the step whose length 7 first exceeds L0 = 6
        const auto all = posenc::arange_positions(t + 1);
        REQUIRE(cache.append(enc, take(k, 0, t + 1).cview(), take(v, 0, t + 1).cview(), all) == cache_event::none);
      }
      tensor4<double> o(B, 1, H, D);
      cache.attend(enc, take(q, t, 1).cview(), o.view(), p, {.causal = true});
      const auto full = prefill(take(q, 0, t + 1), take(k, 0, t + 1), take(v, 0, t + 1), enc);
      POSENC_CHECK_CLOSE(o.data, take(full, t, 1).data, 1e-12, 0);
    }
    CHECK(drops == 1);
  }
  SECTION("keep_stale") {
    kv_cache<double> cache({.batch = B, .kv_heads = H, .head_dim = D, .policy = rope_cache_policy::keep_stale});
    int stale = 0;
    double worst = 0;
    for (std::ptrdiff_t t = 0; t < S; ++t) {
      const std::vector<std::int64_t> p{t};
      stale += cache.append(enc, take(k, t, 1).cview(), take(v, t, 1).cview(), p) == cache_event::kept_stale ? 1 : 0;
      tensor4<double> o(B, 1, H, D);
      cache.attend(enc, take(q, t, 1).cview(), o.view(), p, {.causal = true});
      // HF: each key keeps the rotation of the step that wrote it (length = its position + 1).
      tensor4<double> kh = take(k, 0, t + 1);
      for (std::ptrdiff_t j = 0; j <= t; ++j) {
        auto one = take(k, j, 1);
        const std::vector<std::int64_t> pj{j};
        enc.rotate(one.view(), pj, enc.at(j + 1));
        for (std::ptrdiff_t i = 0; i < H * D; ++i)
          kh.data[static_cast<std::size_t>(j * H * D + i)] = one.data[static_cast<std::size_t>(i)];
      }
      auto qh = take(q, t, 1);
      enc.rotate(qh.view(), p, enc.at(t + 1));
      tensor4<double> expect(B, 1, H, D);
      posenc::sdpa(qh.cview(), kh.cview(), take(v, 0, t + 1).cview(), expect.view(), posenc::no_position{},
                   {.causal = true, .query_positions = p, .key_positions = posenc::arange_positions(t + 1)});
      POSENC_CHECK_CLOSE(o.data, expect.data, 1e-12, 0);
      const auto full = prefill(take(q, 0, t + 1), take(k, 0, t + 1), take(v, 0, t + 1), enc);
      worst = std::max(worst, posenc_test::compare(o.data, take(full, t, 1).data, 0).diff);
    }
    CHECK(stale == 1);
    CHECK(worst > 1e-3);  // stale keys really differ from a fresh prefill
    CHECK_FALSE(cache.rotated_with().has_value());
  }
}

TEST_CASE("kv cache: StreamingLLM window shift equals recomputing with the shifted positions",
          "[attention][kv_cache]") {
  const std::ptrdiff_t B = 2, S = 12, H = 2, D = 16, sinks = 2, evict = 4;
  const tensor4<double> q(B, S + 1, H, D, 33), k(B, S + 1, H, D, 34), v(B, S + 1, H, D, 35);
  std::vector<double> slopes{0.25, 0.0625};
  auto check_enc = [&](const auto& enc, double atol) {
    kv_cache<double> cache({.batch = B, .kv_heads = H, .head_dim = D});
    (void)cache.append(enc, take(k, 0, S).cview(), take(v, 0, S).cview(), batch_positions(B, S, 0));
    cache.shift_window(enc, sinks, evict);
    REQUIRE(cache.length() == S - evict);
    CHECK(cache.next_position(0) == S - evict);
    // From scratch: tokens [0, sinks) and [sinks + evict, S) at positions 0 .. S - evict - 1.
    tensor4<double> ks(B, S - evict + 1, H, D), vs(B, S - evict + 1, H, D);
    for (std::ptrdiff_t b = 0; b < B; ++b)
      for (std::ptrdiff_t t = 0; t <= S - evict; ++t) {
        const std::ptrdiff_t src = t < sinks ? t : t + evict;
        for (std::ptrdiff_t h = 0; h < H; ++h)
          for (std::ptrdiff_t d = 0; d < D; ++d) {
            ks.at(b, t, h, d) = k.at(b, src, h, d);
            vs.at(b, t, h, d) = v.at(b, src, h, d);
          }
      }
    const auto pos_new = batch_positions(B, 1, S - evict);
    (void)cache.append(enc, take(k, S, 1).cview(), take(v, S, 1).cview(), pos_new);
    tensor4<double> o(B, 1, H, D), expect(B, 1, H, D);
    cache.attend(enc, take(q, S, 1).cview(), o.view(), pos_new, {.causal = true});
    const auto pk = batch_positions(B, S - evict + 1, 0);
    posenc::sdpa(take(q, S, 1).cview(), ks.cview(), vs.cview(), expect.view(), enc,
                 {.causal = true, .query_positions = pos_new, .key_positions = pk});
    POSENC_CHECK_CLOSE(o.data, expect.data, atol, 0);
    return cache.positions().size();
  };
  CHECK(check_enc(posenc::rope({.head_dim = D}), 1e-12) == static_cast<std::size_t>(B * (S - evict + 1)));
  check_enc(posenc::combine(posenc::rope({.head_dim = D, .rotary_dim = 8}), posenc_test::slope_bias{slopes}), 1e-12);
  check_enc(posenc_test::slope_bias{slopes}, 1e-13);
  check_enc(posenc::no_position{}, 1e-13);
  // A non-rotation key transform cannot be shifted.
  kv_cache<double> cache({.batch = B, .kv_heads = H, .head_dim = D});
  (void)cache.append(posenc_test::local_scale_qk{D}, take(k, 0, S).cview(), take(v, 0, S).cview(),
                     batch_positions(B, S, 0));
  CHECK_THROWS_AS(cache.shift_window(posenc_test::local_scale_qk{D}, sinks, evict), posenc::config_error);
  CHECK_THROWS_WITH(cache.shift_window(posenc::no_position{}, 2, 11), Catch::Contains("kv_cache.evict"));
}

TEST_CASE("kv cache: a left-padded batch decodes like the unpadded sequences", "[attention][kv_cache]") {
  const std::ptrdiff_t S = 6, pad = 2, H = 2, D = 16, extra = 3;
  const tensor4<double> q(2, S + extra, H, D, 43), k(2, S + extra, H, D, 44), v(2, S + extra, H, D, 45);
  const auto enc = posenc::rope({.head_dim = D});
  std::vector<std::uint8_t> mask(2 * S, 1);
  for (std::ptrdiff_t t = 0; t < pad; ++t) mask[static_cast<std::size_t>(S + t)] = 0;
  const auto pos = posenc::positions_from_attention_mask(std::span<const std::uint8_t>(mask), 2, S);
  kv_cache<double> cache({.batch = 2, .kv_heads = H, .head_dim = D});
  (void)cache.append(enc, take(k, 0, S).cview(), take(v, 0, S).cview(), pos, mask);
  tensor4<double> o(2, S, H, D);
  cache.attend(enc, take(q, 0, S).cview(), o.view(), pos, {.causal = true});
  std::vector<double> last_rows;
  for (std::ptrdiff_t t = 0; t < extra; ++t) {
    const std::vector<std::int64_t> p{cache.next_position(0), cache.next_position(1)};
    CHECK(p[1] == p[0] - pad);
    (void)cache.append(enc, take(k, S + t, 1).cview(), take(v, S + t, 1).cview(), p);
    tensor4<double> o1(2, 1, H, D);
    cache.attend(enc, take(q, S + t, 1).cview(), o1.view(), p, {.causal = true});
    for (std::ptrdiff_t i = 0; i < H * D; ++i) last_rows.push_back(o1.data[static_cast<std::size_t>(H * D + i)]);
  }
  // Sequence 1 alone, without padding.
  tensor4<double> q1(1, S - pad + extra, H, D), k1(1, S - pad + extra, H, D), v1(1, S - pad + extra, H, D);
  for (std::ptrdiff_t t = 0; t < S - pad + extra; ++t)
    for (std::ptrdiff_t h = 0; h < H; ++h)
      for (std::ptrdiff_t d = 0; d < D; ++d) {
        q1.at(0, t, h, d) = q.at(1, t + pad, h, d);
        k1.at(0, t, h, d) = k.at(1, t + pad, h, d);
        v1.at(0, t, h, d) = v.at(1, t + pad, h, d);
      }
  const auto alone = prefill(q1, k1, v1, enc);
  POSENC_CHECK_CLOSE(last_rows, take(alone, S - pad, extra).data, 1e-12, 0);
  std::vector<double> prompt_rows;
  for (std::ptrdiff_t t = pad; t < S; ++t)
    for (std::ptrdiff_t i = 0; i < H * D; ++i)
      prompt_rows.push_back(o.data[static_cast<std::size_t>((S + t) * H * D + i)]);
  POSENC_CHECK_CLOSE(prompt_rows, take(alone, 0, S - pad).data, 1e-12, 0);
}

TEST_CASE("kv cache: invalid configuration and use are refused by name", "[attention][kv_cache]") {
  CHECK_THROWS_WITH(kv_cache<float>({.kv_heads = 0, .head_dim = 8}), Catch::Contains("kv_cache.kv_heads"));
  CHECK_THROWS_WITH(kv_cache<float>({.kv_heads = 2, .head_dim = 0}), Catch::Contains("kv_cache.head_dim"));
  CHECK_THROWS_WITH(kv_cache<float>({.batch = 0, .kv_heads = 2, .head_dim = 8}), Catch::Contains("kv_cache.batch"));
  kv_cache<float> cache({.kv_heads = 2, .head_dim = 8});
  const tensor4<float> k(1, 3, 2, 8, 1), v(1, 3, 2, 8, 2), kbad(1, 3, 3, 8, 1), q(1, 1, 4, 8, 3);
  const auto p = posenc::arange_positions(3);
  CHECK_THROWS_WITH((void)cache.append(posenc::no_position{}, kbad.cview(), v.cview(), p), Catch::Contains("k.heads"));
  CHECK_THROWS_WITH((void)cache.append(posenc::no_position{}, k.cview(), v.cview(), std::span(p).first(2)),
                    Catch::Contains("kv_cache.positions"));
  CHECK_THROWS_WITH((void)cache.append(posenc::rope({.head_dim = 4}), k.cview(), v.cview(), p),
                    Catch::Contains("encoder.head_dim"));
  REQUIRE(cache.append(posenc::no_position{}, k.cview(), v.cview(), p) == cache_event::none);
  tensor4<float> o(1, 1, 4, 8);
  const std::vector<std::int64_t> pq{3};
  CHECK_THROWS_WITH(cache.attend(posenc::no_position{}, q.cview(), o.view(), pq, {.key_positions = p}),
                    Catch::Contains("attention.key_positions"));
  cache.attend(posenc::no_position{}, q.cview(), o.view(), pq);
  CHECK(posenc_test::all_finite(o.data));
  cache.truncate(1);
  CHECK(cache.length() == 1);
  CHECK_THROWS_WITH(cache.truncate(2), Catch::Contains("kv_cache.truncate"));
}
