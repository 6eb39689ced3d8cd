// posenc/attention/contextual_rows.hpp — hook 6 (contextual positions, CoPE: Golovneva et al. 2024,
// eq. 3-5) for one row of the reference attention, forward and backward, in double.
//
// Row (b, i, h) against its keys j in key order, c_j the gate vectors (keys after hook 2, or values):
//   x_j = q_i . c_j,  g_j = gate(x_j) (0 for a masked key),  s_j = sum_{k >= j} g_k,
//   p_j = min(s_j, max_position()),  t_j = position_logit(h, q_i, p_j).
// The suffix sums run from the last key backward, in the order of the authors' flip-cumsum-flip.
// Backward, given dt_j = dL/dt_j:
//   dq_i += dt_j e_h(p_j) (accumulate_position_query_gradient),  dp_j = dt_j slope_j (0 where capped),
//   dg_k = sum_{j <= k} dp_j,  dx_k = dg_k gate'(x_k),  dq_i += dx_k c_k,  dc_k += dx_k q_i.
// Used by sdpa and sdpa_backward only (one row at a time); the fused attention does not include it.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <posenc/concepts.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc::inline v0::detail {

/// The contextual positions of one attention row (one entry per key of the call).
struct contextual_row {
  std::vector<double> dot;       ///< x_j = q . c_j (0 for masked keys)
  std::vector<double> gate;      ///< g_j (0 for masked keys)
  std::vector<double> position;  ///< p_j, capped at max_position()
  std::vector<unsigned char> visible, capped;

  void resize(std::ptrdiff_t keys) {
    const auto n = static_cast<std::size_t>(keys);
    dot.assign(n, 0.0);
    gate.assign(n, 0.0);
    position.assign(n, 0.0);
    visible.assign(n, 0);
    capped.assign(n, 0);
  }
};

/// Fills `r` for the query row `q` (head_dim values): `c` holds the gate vectors ([B, Sk, Hkv, D]
/// keys or values), read at sequence b, kv head g; `allowed(j)` is the row's mask.
template <class E, class T, class Allowed>
void contextual_forward(const E& e, std::span<const double> q, const tensor_view<const T>& c, std::ptrdiff_t b,
                        std::ptrdiff_t g, Allowed&& allowed, contextual_row& r) {
  const std::ptrdiff_t Sk = c.tokens(), D = c.dim(), cs = c.stride(axis::dim);
  r.resize(Sk);
  for (std::ptrdiff_t j = 0; j < Sk; ++j) {
    if (!allowed(j)) continue;
    const T* cj = c.row(b, j, g);
    double x = 0;
    for (std::ptrdiff_t d = 0; d < D; ++d) x += q[static_cast<std::size_t>(d)] * static_cast<double>(cj[d * cs]);
    r.dot[static_cast<std::size_t>(j)] = x;
    r.gate[static_cast<std::size_t>(j)] = static_cast<double>(e.gate(x));
    r.visible[static_cast<std::size_t>(j)] = 1;
  }
  const double cap = static_cast<double>(e.max_position());
  double run = 0;
  for (std::ptrdiff_t j = Sk - 1; j >= 0; --j) {
    const auto u = static_cast<std::size_t>(j);
    run += r.gate[u];
    r.capped[u] = run > cap ? 1 : 0;
    r.position[u] = run > cap ? cap : run;
  }
}

/// The backward of one row: `dt[j]` = dL/dt_j (0 for masked keys). Adds to dq (head_dim values), to
/// the gate vectors' gradient dc (same layout as c: [B, Sk, Hkv, D] doubles, contiguous) and, when
/// `grad` is non-empty, to the encoder's parameters.
template <class E, class T>
void contextual_backward(const E& e, std::ptrdiff_t h, std::span<const double> q, const contextual_row& r,
                         std::span<const double> dt, const tensor_view<const T>& c, std::ptrdiff_t b, std::ptrdiff_t g,
                         tensor_view<double> dc, std::span<double> dq, std::span<double> grad) {
  const std::ptrdiff_t Sk = c.tokens(), D = c.dim(), cs = c.stride(axis::dim);
  std::vector<double> dp(static_cast<std::size_t>(Sk), 0.0);
  for (std::ptrdiff_t j = 0; j < Sk; ++j) {
    const auto u = static_cast<std::size_t>(j);
    if (dt[u] == 0) continue;
    e.accumulate_position_query_gradient(h, r.position[u], dt[u], dq);
    if constexpr (trainable_contextual_position_encoding<E>)
      if (!grad.empty()) e.accumulate_position_gradient(h, r.position[u], dt[u], q, grad);
    if (!r.capped[u]) dp[u] = dt[u] * static_cast<double>(e.position_logit_slope(h, q, r.position[u]));
  }
  double dg = 0;  // sum of dp_j over j <= k
  for (std::ptrdiff_t k = 0; k < Sk; ++k) {
    const auto u = static_cast<std::size_t>(k);
    dg += dp[u];
    if (!r.visible[u]) continue;  // a masked key's gate is the constant 0
    const double dx = dg * static_cast<double>(e.gate_derivative(r.dot[u]));
    if (dx == 0) continue;
    const T* ck = c.row(b, k, g);
    double* dck = dc.row(b, k, g);
    for (std::ptrdiff_t d = 0; d < D; ++d) {
      dq[static_cast<std::size_t>(d)] += dx * static_cast<double>(ck[d * cs]);
      dck[d] += dx * q[static_cast<std::size_t>(d)];
    }
  }
}

}  // namespace posenc::inline v0::detail
