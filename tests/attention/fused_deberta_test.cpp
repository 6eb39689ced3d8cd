// DeBERTa's disentangled attention through the fused path: c2p (q . K_r gathered by distance, Shaw's
// path) and p2c (k . Q_r per key tile, gathered by the pair's distance) inside the tiles, against
// sdpa / sdpa_backward on the same float inputs. Forward: every ISA within the documented bound
// 5e-7 (1 + A) max |v| (attention/attention.hpp), A bounding max |logit| with both cross terms;
// backward: dq, dk, dv and both tables' gradients within 1e-6 (1 + A) max |oracle|
// (attention/attention_backward.hpp). sdpa_backward itself passes finite differences
// (tests/encoders/deberta_test.cpp). Small buckets (8 of them, 20 positions) so the calls reach the
// log buckets and the saturated rows; several query and key tiles per call. And the whole layers of
// tests/golden/deberta.json (HF DisentangledSelfAttention, v1 and v2, shared and separate keys,
// every pos_att_type, padding) through the fused path against HF's float32 outputs.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/kernels/isa.hpp>

#include "encoders/deberta_layers.hpp"
#include "fused_support.hpp"
#include "support/check.hpp"

using posenc::tensor_view;
using namespace posenc_test;

namespace {

/// A DeBERTa layer's relative terms on random tables: v2/v3 buckets (8 buckets, 20 positions) or v1
/// (no buckets, 12 positions), with the given pos_att_type subset.
posenc::deberta_relative make_deberta(std::ptrdiff_t heads, std::ptrdiff_t D, bool v1, bool c2p, bool p2c,
                                      std::uint64_t seed = 41) {
  auto cfg =
      v1 ? posenc::deberta_relative_config::v1(heads, D, 12) : posenc::deberta_relative_config::v3(heads, D, 8, 20);
  cfg.c2p = c2p;
  cfg.p2c = p2c;
  const auto n = static_cast<std::size_t>(cfg.table_rows() * heads * D);
  const auto kt = c2p ? random_values(n, seed) : std::vector<double>{};
  const auto qt = p2c ? random_values(n, seed + 1) : std::vector<double>{};
  return posenc::deberta_relative(cfg, kt, qt);
}

/// Several query tiles (16 tokens) against several key tiles (64 keys) per call.
const posenc::fast_attention_options small_tiles{.query_tile = 16};

/// The fused forward against sdpa on every ISA; leaving p2c out shows the term is seen.
void check_forward(const fast_inputs<float>& in, const posenc::deberta_relative& enc,
                   const posenc::deberta_relative& without_p2c, const fast_masks& m) {
  compare_forward(in, enc, without_p2c, m, small_tiles);
}

/// The fused backward against sdpa_backward (fused_support.hpp) on several query and key tiles.
void check_backward(const fast_shape& s, const posenc::deberta_relative& enc, const fast_masks& m) {
  compare_backward(s, enc, m.options(), static_cast<std::size_t>(enc.parameter_count()), small_tiles);
}

}  // namespace

TEST_CASE("attention: DeBERTa c2p and p2c inside the tiles equal sdpa within the bound on every ISA",
          "[fast][deberta]") {
  const fast_shape s{.B = 2, .Sq = 150, .Sk = 150, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 16};
  const fast_inputs<float> in(s, 21, 1.5);
  fast_masks none, padded, causal, spread;
  padded.lengths = {150, 97};
  causal.causal = true;
  for (std::int64_t b = 0; b < 2; ++b)  // explicit positions 3 apart: wider distance windows per tile pair
    for (std::int64_t i = 0; i < 150; ++i) spread.pq.push_back(3 * i + b), spread.pk.push_back(3 * i + b);
  for (const bool v1 : {false, true}) {
    INFO((v1 ? "v1" : "v3"));
    const auto both = make_deberta(4, 16, v1, true, true), c2p = make_deberta(4, 16, v1, true, false);
    check_forward(in, both, c2p, none);
    check_forward(in, both, c2p, padded);
    check_forward(in, both, c2p, causal);
    check_forward(in, both, c2p, spread);
    check_forward(in, make_deberta(4, 16, v1, false, true), make_deberta(4, 16, v1, false, false), padded);
  }
  // MHA (one query head per kv head): the per-head tables of a work item's single head
  const fast_shape mha{.B = 1, .Sq = 80, .Sk = 80, .Hq = 3, .Hkv = 3, .D = 32, .Dv = 24};
  check_forward(fast_inputs<float>(mha, 22, 1.5), make_deberta(3, 32, false, true, true),
                make_deberta(3, 32, false, true, false), none);
}

TEST_CASE("attention_backward: DeBERTa dq, dk, dv and both tables' gradients against sdpa_backward",
          "[fast][deberta][backward]") {
  const fast_shape s{.B = 2, .Sq = 70, .Sk = 70, .Hq = 4, .Hkv = 2, .D = 16, .Dv = 16};
  fast_masks padded, causal;
  padded.lengths = {70, 45};
  causal.causal = true;
  check_backward(s, make_deberta(4, 16, false, true, true), padded);
  check_backward(s, make_deberta(4, 16, true, true, true), causal);
  check_backward(s, make_deberta(4, 16, false, false, true), padded);
  check_backward(s, make_deberta(4, 16, true, true, false), {});
}

TEST_CASE("attention: DeBERTa layers through the fused path equal HF DisentangledSelfAttention (float32)",
          "[fast][deberta][golden]") {
  using namespace posenc_test::deberta_golden;
  int cases = 0;
  for (const auto& c : golden().at("cases")) {
    if (c.at("kind") != "layer") continue;
    ++cases;
    INFO(c.at("id").get<std::string>());
    const layer L = build(c);
    const posenc::deberta_relative enc(L.config, L.key_table, L.query_table);
    const std::vector<float> q(L.q.begin(), L.q.end()), k(L.k.begin(), L.k.end()), v(L.v.begin(), L.v.end());
    std::vector<float> o(q.size());
    using cv = tensor_view<const float>;
    posenc::attention(cv::bthd(q.data(), L.B, L.S, L.H, L.d), cv::bthd(k.data(), L.B, L.S, L.H, L.d),
                      cv::bthd(v.data(), L.B, L.S, L.H, L.d), tensor_view<float>::bthd(o.data(), L.B, L.S, L.H, L.d),
                      enc, {.key_lengths = L.lengths});
    const std::ptrdiff_t row = L.H * L.d;
    POSENC_CHECK_CLOSE(valid_rows(std::vector<double>(o.begin(), o.end()), L, row),
                       valid_rows(posenc_test::flatten(c.at("expected").at("context_fp32")), L, row), 2e-6, 0);
  }
  CHECK(cases == 13);
}
