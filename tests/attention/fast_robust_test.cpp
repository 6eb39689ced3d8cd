// tests/attention/fast_robust_test.cpp — posenc::attention (and sdpa, kv_cache) on inputs real
// engines produce: garbage (NaN / Inf) in masked K/V slots, out on q's memory in any shape and
// layout, NaN and +Inf logits, zero keys. Each case names the behaviour attention.hpp documents.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/rope/rope.hpp>

#include "attention_support.hpp"
#include "fast_support.hpp"

using namespace posenc_test;

namespace {

constexpr float fnan = std::numeric_limits<float>::quiet_NaN();
constexpr float finf = std::numeric_limits<float>::infinity();

using cf = posenc::tensor_view<const float>;
using vf = posenc::tensor_view<float>;
using cd = posenc::tensor_view<const double>;
using vd = posenc::tensor_view<double>;

struct problem {
  std::ptrdiff_t B, Sq, Sk, Hq, Hkv, D, Dv;
  std::vector<float> q, k, v;
  problem(std::ptrdiff_t b, std::ptrdiff_t sq, std::ptrdiff_t sk, std::ptrdiff_t hq, std::ptrdiff_t hkv,
          std::ptrdiff_t d, std::ptrdiff_t dv, std::uint64_t seed)
      : B(b), Sq(sq), Sk(sk), Hq(hq), Hkv(hkv), D(d), Dv(dv) {
    for (double x : random_values(static_cast<std::size_t>(B * Sq * Hq * D), seed)) q.push_back(static_cast<float>(x));
    for (double x : random_values(static_cast<std::size_t>(B * Sk * Hkv * D), seed + 1))
      k.push_back(static_cast<float>(x));
    for (double x : random_values(static_cast<std::size_t>(B * Sk * Hkv * Dv), seed + 2))
      v.push_back(static_cast<float>(x));
  }
  void poison(std::ptrdiff_t b, std::ptrdiff_t j, float x) {  // key/value slot (b, j) of every head
    for (std::ptrdiff_t h = 0; h < Hkv; ++h) {
      for (std::ptrdiff_t d = 0; d < D; ++d) k[static_cast<std::size_t>(((b * Sk + j) * Hkv + h) * D + d)] = x;
      for (std::ptrdiff_t d = 0; d < Dv; ++d) v[static_cast<std::size_t>(((b * Sk + j) * Hkv + h) * Dv + d)] = x;
    }
  }
  [[nodiscard]] std::size_t out_size() const { return static_cast<std::size_t>(B * Sq * Hq * Dv); }
  template <class E>
  std::vector<float> fast(const E& enc, const posenc::attention_options& o) const {
    std::vector<float> out(out_size(), -7.0f);
    posenc::attention(cf::bthd(q.data(), B, Sq, Hq, D), cf::bthd(k.data(), B, Sk, Hkv, D),
                      cf::bthd(v.data(), B, Sk, Hkv, Dv), vf::bthd(out.data(), B, Sq, Hq, Dv), enc, o);
    return out;
  }
  template <class E>
  std::vector<double> oracle(const E& enc, const posenc::attention_options& o) const {
    const std::vector<double> qd(q.begin(), q.end()), kd(k.begin(), k.end()), vd_(v.begin(), v.end());
    std::vector<double> out(out_size(), -7.0);
    posenc::sdpa(cd::bthd(qd.data(), B, Sq, Hq, D), cd::bthd(kd.data(), B, Sk, Hkv, D),
                 cd::bthd(vd_.data(), B, Sk, Hkv, Dv), vd::bthd(out.data(), B, Sq, Hq, Dv), enc, o);
    return out;
  }
};

// Every element finite and within `tol` of the oracle (the problems here have |logit| < 10, |v| <= 1).
void require_close(const std::vector<float>& got, const std::vector<double>& ref, double tol = 2e-5) {
  REQUIRE(got.size() == ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": fast " << got[i] << ", sdpa " << ref[i]);
    REQUIRE(std::isfinite(ref[i]));
    REQUIRE(std::isfinite(got[i]));
    REQUIRE(std::fabs(static_cast<double>(got[i]) - ref[i]) <= tol);
  }
}

}  // namespace

TEST_CASE("fast attention: masked K/V slots contribute nothing whatever their bits", "[attention][fast][robust]") {
  const posenc::no_position none;
  for (const float bad : {fnan, finf, -finf}) {
    for (const std::ptrdiff_t Sq : {std::ptrdiff_t{1}, std::ptrdiff_t{20}}) {  // decode (in place) and prefill (packed)
      INFO("garbage " << bad << ", Sq " << Sq);
      problem p(1, Sq, 100, 4, 2, 64, 64, 11);
      for (std::ptrdiff_t j = 37; j < 100; ++j) p.poison(0, j, bad);
      const std::vector<std::int64_t> len{37};
      posenc::attention_options o{.key_lengths = len};
      require_close(p.fast(none, o), p.oracle(none, o));
      // key_mask holes inside the visible span, and explicit positions
      std::vector<std::uint8_t> km(100, 1);
      for (std::ptrdiff_t j = 3; j < 100; j += 5) km[static_cast<std::size_t>(j)] = 0, p.poison(0, j, bad);
      o = {.key_lengths = len, .key_mask = km};
      require_close(p.fast(none, o), p.oracle(none, o));
    }
  }
}

TEST_CASE("fast attention: causal masking ignores garbage in future slots", "[attention][fast][robust]") {
  const posenc::no_position none;
  for (const float bad : {fnan, finf}) {
    // 30 queries at positions 0..29 (prefill), 70 slots after them never written (positions 30..99).
    problem p(1, 30, 100, 2, 1, 32, 48, 21);
    std::vector<std::int64_t> pq(30), pk(100);
    for (std::int64_t i = 0; i < 30; ++i) pq[static_cast<std::size_t>(i)] = i;
    for (std::int64_t j = 0; j < 100; ++j) pk[static_cast<std::size_t>(j)] = j;
    for (std::ptrdiff_t j = 30; j < 100; ++j) p.poison(0, j, bad);
    const posenc::attention_options o{.causal = true, .query_positions = pq, .key_positions = pk};
    require_close(p.fast(none, o), p.oracle(none, o));
    // one query per step (decode) over the same garbage
    problem d(1, 1, 100, 8, 1, 32, 32, 23);
    for (std::ptrdiff_t j = 30; j < 100; ++j) d.poison(0, j, bad);
    const std::vector<std::int64_t> q1{29};
    const posenc::attention_options o1{.causal = true, .query_positions = q1, .key_positions = pk};
    require_close(d.fast(none, o1), d.oracle(none, o1));
  }
}

TEST_CASE("kv_cache<float>: padding tokens holding NaN are never attended", "[attention][fast][robust]") {
  const posenc::no_position none;
  posenc::kv_cache<float> cache({.batch = 1, .kv_heads = 2, .head_dim = 32});
  problem p(1, 1, 80, 4, 2, 32, 32, 31);
  std::vector<std::int64_t> pos(80);
  std::vector<std::uint8_t> tm(80, 1);
  for (std::int64_t j = 0; j < 80; ++j) pos[static_cast<std::size_t>(j)] = j;
  for (std::ptrdiff_t j = 0; j < 80; j += 7) tm[static_cast<std::size_t>(j)] = 0, p.poison(0, j, fnan);
  (void)cache.append(none, cf::bthd(p.k.data(), 1, 80, 2, 32), cf::bthd(p.v.data(), 1, 80, 2, 32),
                     std::span<const std::int64_t>(pos), tm);
  const std::vector<std::int64_t> qp{80};
  std::vector<float> out(static_cast<std::size_t>(4 * 32));
  cache.attend(none, cf::bthd(p.q.data(), 1, 1, 4, 32), vf::bthd(out.data(), 1, 1, 4, 32), qp);
  const posenc::attention_options o{.key_mask = tm};
  require_close(out, p.oracle(none, o));
}

TEST_CASE("fast attention: out on q's memory, any D / Dv and layout", "[attention][fast][robust]") {
  const posenc::no_position none;
  struct shape {
    std::ptrdiff_t Sq, Hq, Hkv, D, Dv;
  };
  for (const shape s :
       {shape{5, 4, 2, 192, 128}, shape{5, 4, 2, 64, 128}, shape{1, 8, 1, 128, 64}, shape{40, 4, 4, 64, 64}}) {
    for (const bool head_major_q : {false, true}) {
      INFO("Sq " << s.Sq << " D " << s.D << " Dv " << s.Dv << " head-major q " << head_major_q);
      problem p(2, s.Sq, 70, s.Hq, s.Hkv, s.D, s.Dv, 41);
      const posenc::attention_options o{.causal = true};
      const auto ref = p.oracle(none, o);
      // one buffer holds q (in its layout) and then receives out (token-major [B, Sq, Hq, Dv])
      std::vector<float> buf(std::max(p.q.size(), p.out_size()));
      auto qv = head_major_q ? vf::bhtd(buf.data(), p.B, s.Hq, s.Sq, s.D) : vf::bthd(buf.data(), p.B, s.Sq, s.Hq, s.D);
      for (std::ptrdiff_t b = 0; b < p.B; ++b)
        for (std::ptrdiff_t i = 0; i < s.Sq; ++i)
          for (std::ptrdiff_t h = 0; h < s.Hq; ++h)
            for (std::ptrdiff_t d = 0; d < s.D; ++d)
              qv(b, i, h, d) = p.q[static_cast<std::size_t>(((b * s.Sq + i) * s.Hq + h) * s.D + d)];
      posenc::attention(cf(qv), cf::bthd(p.k.data(), p.B, p.Sk, s.Hkv, s.D),
                        cf::bthd(p.v.data(), p.B, p.Sk, s.Hkv, s.Dv), vf::bthd(buf.data(), p.B, s.Sq, s.Hq, s.Dv), none,
                        o);
      buf.resize(p.out_size());
      require_close(buf, ref);
    }
  }
}

TEST_CASE("fast attention: NaN and +Inf logits as sdpa", "[attention][fast][robust]") {
  const posenc::no_position none;
  for (const std::ptrdiff_t Sq : {std::ptrdiff_t{1}, std::ptrdiff_t{20}}) {
    INFO("Sq " << Sq);
    // one NaN in a visible key: the whole row is NaN, in both
    problem p(1, Sq, 150, 2, 1, 32, 32, 51);
    p.k[static_cast<std::size_t>(77 * 32 + 5)] = fnan;
    const auto got = p.fast(none, {});
    const auto ref = p.oracle(none, {});
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i);
      REQUIRE(std::isnan(ref[i]));
      REQUIRE(std::isnan(got[i]));
    }
    // +inf logits (keys of +inf against positive queries): the weight is shared equally by the +inf keys
    problem r(1, Sq, 150, 2, 1, 32, 32, 53);
    for (float& x : r.q) x = std::fabs(x) + 0.125f;
    for (std::size_t t : {std::size_t{12}, std::size_t{99}, std::size_t{140}})
      for (std::size_t d = 0; d < 32; ++d) r.k[t * 32 + d] = finf;
    const std::vector<std::int64_t> len{141};
    for (const bool sink : {false, true}) {
      const std::vector<double> sinks{0.5, std::numeric_limits<double>::infinity()};
      posenc::attention_options o{.key_lengths = len};
      if (sink) o.sinks = sinks;
      INFO("sinks " << sink);
      require_close(r.fast(none, o), r.oracle(none, o));
    }
  }
}

TEST_CASE("attention over zero keys gives zeros (sdpa, attention, kv_cache)", "[attention][fast][robust]") {
  const posenc::no_position none;
  const std::vector<float> q(2 * 3 * 4 * 32, 0.5f);
  const std::vector<double> qd(q.begin(), q.end());
  const std::vector<std::int64_t> pq{5, 6, 7, 5, 6, 7};
  const std::vector<std::int64_t> pk;
  const std::vector<double> sinks{0.0, 1.0, -2.0, 3.0};
  for (const bool sink : {false, true}) {
    posenc::attention_options o{.causal = true, .query_positions = pq, .key_positions = pk};
    if (sink) o.sinks = sinks;
    std::vector<float> out(q.size(), -7.0f);
    std::vector<double> outd(q.size(), -7.0);
    std::vector<float> none_k;
    posenc::attention(cf::bthd(q.data(), 2, 3, 4, 32), cf::bthd(none_k.data(), 2, 0, 2, 32),
                      cf::bthd(none_k.data(), 2, 0, 2, 32), vf::bthd(out.data(), 2, 3, 4, 32), none, o);
    std::vector<double> none_kd;
    posenc::sdpa(cd::bthd(qd.data(), 2, 3, 4, 32), cd::bthd(none_kd.data(), 2, 0, 2, 32),
                 cd::bthd(none_kd.data(), 2, 0, 2, 32), vd::bthd(outd.data(), 2, 3, 4, 32), none, o);
    for (float x : out) REQUIRE(x == 0.0f);
    for (double x : outd) REQUIRE(x == 0.0);
  }
  const posenc::rope_config rc{.head_dim = 32};
  const posenc::rope rope(rc);
  posenc::kv_cache<float> cache({.batch = 2, .kv_heads = 2, .head_dim = 32});
  std::vector<float> out(q.size(), -7.0f);
  auto attend = [&] {
    std::fill(out.begin(), out.end(), -7.0f);
    cache.attend(rope, cf::bthd(q.data(), 2, 3, 4, 32), vf::bthd(out.data(), 2, 3, 4, 32), pq, {.causal = true});
    for (float x : out) REQUIRE(x == 0.0f);
  };
  attend();  // new
  const std::vector<float> kv(2 * 4 * 2 * 32, 0.25f);
  const std::vector<std::int64_t> pos{0, 1, 2, 3, 0, 1, 2, 3};
  (void)cache.append(rope, cf::bthd(kv.data(), 2, 4, 2, 32), cf::bthd(kv.data(), 2, 4, 2, 32),
                     std::span<const std::int64_t>(pos));
  cache.clear();
  attend();  // after clear()
  (void)cache.append(rope, cf::bthd(kv.data(), 2, 4, 2, 32), cf::bthd(kv.data(), 2, 4, 2, 32),
                     std::span<const std::int64_t>(pos));
  cache.shift_window(rope, 0, 4);
  REQUIRE(cache.length() == 0);
  attend();  // after shift_window evicted everything
}

TEST_CASE("fast attention: a non-finite value visible to some queries of a tile only", "[attention][fast][robust]") {
  const posenc::no_position none;
  // queries at positions 40..49 (causal): key 45 is visible to queries 45.. only. Sq 10 with one head
  // runs the in-place kernels with several query tokens, 4 heads the packed ones.
  for (const std::ptrdiff_t H : {std::ptrdiff_t{1}, std::ptrdiff_t{4}}) {
    for (const float bad : {fnan, finf}) {
      INFO("heads " << H << ", value " << bad);
      problem p(1, 10, 100, H, 1, 32, 32, 61);
      for (std::ptrdiff_t d = 0; d < 32; ++d) p.v[static_cast<std::size_t>(45 * 32 + d)] = bad;
      std::vector<std::int64_t> pq(10), pk(100);
      for (std::int64_t i = 0; i < 10; ++i) pq[static_cast<std::size_t>(i)] = 40 + i;
      for (std::int64_t j = 0; j < 100; ++j) pk[static_cast<std::size_t>(j)] = j;
      const posenc::attention_options op{.causal = true, .query_positions = pq, .key_positions = pk};
      const auto got = p.fast(none, op);
      const auto ref = p.oracle(none, op);
      for (std::size_t i = 0; i < got.size(); ++i) {
        const auto token = static_cast<std::int64_t>(i / static_cast<std::size_t>(H * 32));
        INFO("element " << i << ": fast " << got[i] << ", sdpa " << ref[i]);
        REQUIRE(std::isfinite(ref[i]) == (40 + token < 45));
        REQUIRE(std::isnan(got[i]) == std::isnan(ref[i]));
        REQUIRE(std::isfinite(got[i]) == std::isfinite(ref[i]));
        if (std::isfinite(ref[i])) REQUIRE(std::fabs(static_cast<double>(got[i]) - ref[i]) <= 2e-5);
      }
    }
  }
}

TEST_CASE("zero keys with a Shaw value term of another size than v: zeros, nothing read", "[attention][fast][robust]") {
  // Shaw's aV rows have head_dim elements; with no key sdpa never asks for them (nor checks their
  // size against Dv), so neither may the fast path (it built its tables from them, past their end).
  posenc::shaw_relative_config c{.head_dim = 8, .k_left = 2, .k_right = 2};
  c.use_value_term = true;
  c.num_heads = 2;
  const auto n = static_cast<std::size_t>(c.table_rows() * 8);
  const auto kt = random_values(n, 3), vt = random_values(n, 4);
  const posenc::shaw_relative shaw(c, std::span<const double>(kt), std::span<const double>(vt));
  const std::vector<float> q(2 * 8, 0.5f), none;
  std::vector<float> out(2 * 24, -7.0f);
  posenc::attention(cf::bthd(q.data(), 1, 1, 2, 8), cf::bthd(none.data(), 1, 0, 1, 8),
                    cf::bthd(none.data(), 1, 0, 1, 24), vf::bthd(out.data(), 1, 1, 2, 24), shaw, {});
  for (float x : out) REQUIRE(x == 0.0f);
}
