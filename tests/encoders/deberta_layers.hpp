// tests/encoders/deberta_layers.hpp — the DeBERTa attention layers of tests/golden/deberta.json
// (gen_deberta.py: HF DisentangledSelfAttention of v1 and v2, shared and separate keys, padding) as
// posenc operands: q, k, v and the projected tables, built with HF's own projections in double.
// Shared by the sdpa golden test (encoders/deberta_test.cpp) and the fused one
// (attention/fused_deberta_test.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <posenc/encoders/deberta.hpp>

#include "support/golden.hpp"

namespace posenc_test::deberta_golden {

using posenc::deberta_relative_config;

inline const nlohmann::json& golden() {
  static const nlohmann::json g = posenc_test::load_golden("deberta.json");
  return g;
}

/// x [rows, in] times W^T [out, in] plus b [out] (empty: none): an nn.Linear in double.
inline std::vector<double> linear(const std::vector<double>& x, std::ptrdiff_t in, const std::vector<double>& w,
                                  const std::vector<double>& b) {
  const auto rows = static_cast<std::ptrdiff_t>(x.size()) / in;
  const auto out = static_cast<std::ptrdiff_t>(w.size()) / in;
  std::vector<double> y(static_cast<std::size_t>(rows * out));
  for (std::ptrdiff_t r = 0; r < rows; ++r)
    for (std::ptrdiff_t o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
      for (std::ptrdiff_t c = 0; c < in; ++c)
        s += x[static_cast<std::size_t>(r * in + c)] * w[static_cast<std::size_t>(o * in + c)];
      y[static_cast<std::size_t>(r * out + o)] = s;
    }
  return y;
}

inline std::vector<double> param(const nlohmann::json& c, const std::string& name) {
  const auto& p = c.at("parameters");
  return p.contains(name) ? flatten(p.at(name)) : std::vector<double>{};
}

/// The layer's q, k, v ([B, S, H, d] row-major), its tables and its encoder, as HF computes them.
struct layer {
  std::ptrdiff_t B = 0, S = 0, H = 0, d = 0;
  std::vector<double> q, k, v;
  std::vector<std::int64_t> lengths;
  deberta_relative_config config;
  std::vector<double> key_table, query_table;
};

inline layer build(const nlohmann::json& c) {
  const auto& cfg = c.at("config");
  layer L;
  L.B = c.at("batch");
  L.S = c.at("seq");
  L.H = cfg.at("num_attention_heads");
  const std::ptrdiff_t hs = cfg.at("hidden_size");
  L.d = hs / L.H;
  L.lengths = c.at("lengths").get<std::vector<std::int64_t>>();
  const auto x = flatten(c.at("hidden_states"));
  const auto rel = flatten(c.at("rel_embeddings"));
  bool c2p = false, p2c = false;
  for (const auto& t : cfg.at("pos_att_type")) (t == "c2p" ? c2p : p2c) = true;
  L.config = {.head_dim = L.d,
              .num_heads = L.H,
              .position_buckets = 0,
              .max_relative_positions = cfg.at("max_relative_positions"),
              .c2p = c2p,
              .p2c = p2c};
  const auto rows = static_cast<std::ptrdiff_t>(rel.size()) / hs;
  if (c.at("version") == "v2") {
    L.config.position_buckets = std::max<std::int64_t>(cfg.at("position_buckets").get<std::int64_t>(), 0);
    L.q = linear(x, hs, param(c, "query_proj.weight"), param(c, "query_proj.bias"));
    L.k = linear(x, hs, param(c, "key_proj.weight"), param(c, "key_proj.bias"));
    L.v = linear(x, hs, param(c, "value_proj.weight"), param(c, "value_proj.bias"));
    const bool shared = cfg.at("share_att_key");
    const std::string kp = shared ? "key_proj" : "pos_key_proj", qp = shared ? "query_proj" : "pos_query_proj";
    if (c2p)
      L.key_table = posenc::deberta_project_positions(rel, rows, param(c, kp + ".weight"), param(c, kp + ".bias"), hs);
    if (p2c)
      L.query_table =
          posenc::deberta_project_positions(rel, rows, param(c, qp + ".weight"), param(c, qp + ".bias"), hs);
  } else {  // v1: in_proj rows per head are [q (d), k (d), v (d)]; q_bias, v_bias added after
    const auto y = linear(x, hs, param(c, "in_proj.weight"), {});
    const auto qb = param(c, "q_bias"), vb = param(c, "v_bias");
    for (std::ptrdiff_t t = 0; t < L.B * L.S; ++t)
      for (std::ptrdiff_t h = 0; h < L.H; ++h)
        for (std::ptrdiff_t e = 0; e < L.d; ++e) {
          const double* r = y.data() + t * 3 * hs + h * 3 * L.d;
          L.q.push_back(r[e] + qb[static_cast<std::size_t>(h * L.d + e)]);
          L.k.push_back(r[L.d + e]);
          L.v.push_back(r[2 * L.d + e] + vb[static_cast<std::size_t>(h * L.d + e)]);
        }
    if (c2p) L.key_table = posenc::deberta_project_positions(rel, rows, param(c, "pos_proj.weight"), {}, hs);
    if (p2c)
      L.query_table =
          posenc::deberta_project_positions(rel, rows, param(c, "pos_q_proj.weight"), param(c, "pos_q_proj.bias"), hs);
  }
  return L;
}

/// The elements of [B, S, ...] (row size `row`) whose token is not padding (HF's padded query rows
/// attend uniformly to every key under its finfo.min mask; posenc's see the valid keys).
inline std::vector<double> valid_rows(const std::vector<double>& x, const layer& L, std::ptrdiff_t row) {
  std::vector<double> r;
  for (std::ptrdiff_t b = 0; b < L.B; ++b)
    for (std::ptrdiff_t i = 0; i < L.lengths[static_cast<std::size_t>(b)]; ++i)
      r.insert(r.end(), x.begin() + (b * L.S + i) * row, x.begin() + (b * L.S + i + 1) * row);
  return r;
}

}  // namespace posenc_test::deberta_golden
