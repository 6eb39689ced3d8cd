// CoPE (hook 6: contextual positions, Golovneva et al. 2024) through the fused path: gates and
// positions per key tile, key tiles walked last to first with each row's running gate sum, the term
// interpolated from the row's q . e(n) (attention/fast/contextual.hpp), against sdpa / sdpa_backward
// on the same float inputs. Forward on every ISA within the documented bound 5e-7 (1 + A) max |v|
// (attention/attention.hpp; A bounds max |logit| with the contextual term); backward: dq, dk, dv and
// the embeddings' gradient within 1e-6 (1 + A) max |oracle| (attention/attention_backward.hpp;
// sdpa_backward itself passes finite differences and the authors' autograd, tests/encoders/cope_test.cpp).
// Key and value gates, the term scaled or not (--cope-nodiv), positions capped (few table rows) or
// not, bidirectional, causal, windowed and padded; several query and key tiles per call, so the gate
// sums cross tiles; bit-identical for 1 and 2 threads.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/rope/rope.hpp>

#include "fused_support.hpp"

using namespace posenc_test;

static_assert(posenc::fused_attention_supports<posenc::combined<posenc::rope, posenc::cope>>);

namespace {

/// CoPE over D dims with npos table rows of random embeddings (x amp), key or value gates.
posenc::cope random_cope(std::ptrdiff_t D, std::int64_t npos, bool values, bool scaled = true, double amp = 1.0,
                         std::uint64_t seed = 51) {
  auto t = random_values(static_cast<std::size_t>(npos * D), seed);
  for (double& x : t) x *= amp;
  return posenc::cope(
      {.head_dim = D,
       .npos = npos,
       .gate_source = values ? posenc::contextual_gate_source::values : posenc::contextual_gate_source::keys,
       .scale_position_term = scaled},
      t);
}

/// Several query tiles (16 tokens) against several key tiles (64 keys) per call.
const posenc::fast_attention_options cope_tiles{.query_tile = 16};

/// The fused forward against sdpa on every ISA; `zero` (a zero table) shows the term is seen.
template <class E>
void check_cope_forward(const fast_inputs<float>& in, const E& enc, const E& zero, const fast_masks& m) {
  compare_forward(in, enc, zero, m, cope_tiles);
}

fast_masks cope_causal(std::optional<std::int64_t> window = {}) {
  fast_masks m;
  m.causal = true;
  m.window = window;
  return m;
}

}  // namespace

TEST_CASE("attention: CoPE inside the tiles equals sdpa within the bound on every ISA", "[fast][cope]") {
  const fast_shape s{.B = 2, .Sq = 150, .Sk = 150, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 16};
  const fast_inputs<float> in(s, 23, 1.5);
  fast_masks none, padded;
  padded.lengths = {150, 97};
  for (const bool values : {false, true})
    for (const bool scaled : {true, false}) {
      INFO((values ? "value" : "key") << " gates, term " << (scaled ? "scaled" : "unscaled"));
      // 160 rows: positions up to the key count; 12 rows: most positions capped
      for (const std::int64_t npos : {160, 12}) {
        INFO("npos " << npos);
        const auto enc = random_cope(16, npos, values, scaled), zero = random_cope(16, npos, values, scaled, 0.0);
        check_cope_forward(in, enc, zero, cope_causal());
        check_cope_forward(in, enc, zero, padded);
      }
      const auto enc = random_cope(16, 160, values, scaled), zero = random_cope(16, 160, values, scaled, 0.0);
      check_cope_forward(in, enc, zero, none);
      check_cope_forward(in, enc, zero, cope_causal(40));
    }
  // with RoPE (gates on the rotated q and k), and MHA with fewer queries than keys (decode-like rows)
  const posenc::rope rope({.head_dim = 16});
  check_cope_forward(in, posenc::combine(rope, random_cope(16, 160, false)),
                     posenc::combine(rope, random_cope(16, 160, false, true, 0.0)), cope_causal());
  const fast_shape mha{.B = 1, .Sq = 5, .Sk = 140, .Hq = 3, .Hkv = 3, .D = 32, .Dv = 32};
  check_cope_forward(fast_inputs<float>(mha, 24, 1.5), random_cope(32, 200, true),
                     random_cope(32, 200, true, true, 0.0), cope_causal());
}

TEST_CASE("attention_backward: CoPE dq, dk, dv and the embeddings' gradient against sdpa_backward on every ISA",
          "[fast][cope][backward]") {
  const fast_shape s{.B = 2, .Sq = 90, .Sk = 90, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 16};
  fast_masks padded;
  padded.lengths = {90, 61};
  const posenc::rope rope({.head_dim = 16});
  for (const auto which : every_fused_isa()) {
    INFO("on " << posenc::kernels::isa_name(which));
    posenc::kernels::scoped_isa use(which);
    const auto keys = random_cope(16, 100, false), values = random_cope(16, 100, true, false),
               capped = random_cope(16, 9, false);
    compare_backward(s, keys, cope_causal().options(), static_cast<std::size_t>(keys.parameter_count()), cope_tiles);
    compare_backward(s, values, padded.options(), static_cast<std::size_t>(values.parameter_count()), cope_tiles);
    compare_backward(s, capped, cope_causal(30).options(), static_cast<std::size_t>(capped.parameter_count()),
                     cope_tiles);
    const auto both = posenc::combine(rope, random_cope(16, 100, true));
    compare_backward(s, both, {}, static_cast<std::size_t>(both.parameter_count()), cope_tiles);
  }
}

TEST_CASE("attention: CoPE forward and backward are bit-identical for 1 and 2 threads", "[fast][cope][threads]") {
  const fast_shape s{.B = 1, .Sq = 130, .Sk = 130, .Hq = 2, .Hkv = 1, .D = 16, .Dv = 16};
  const fast_inputs<float> in(s, 9, 1.5);
  const auto dout = random_values(static_cast<std::size_t>(s.B * s.Sq * s.Hq * s.Dv), 10);
  const std::vector<float> doutf(dout.begin(), dout.end());
  const auto enc = random_cope(16, 140, true);
  const auto o = cope_causal().options();
  posenc::thread_pool one(1), two(2);
  posenc::fast_attention_options f1 = cope_tiles, f2 = cope_tiles;
  f1.executor = one.as_parallel_for();
  f2.executor = two.as_parallel_for();
  const auto n = static_cast<std::size_t>(enc.parameter_count());
  const fused_gradients a = run_fused_backward(in, doutf, enc, o, n, f1),
                        b = run_fused_backward(in, doutf, enc, o, n, f2);
  CHECK(a.out == b.out);
  CHECK(a.lse == b.lse);
  CHECK(a.dq == b.dq);
  CHECK(a.dk == b.dk);
  CHECK(a.dv == b.dv);
  CHECK(a.params == b.params);
}
