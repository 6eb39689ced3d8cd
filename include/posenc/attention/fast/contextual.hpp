// posenc/attention/fast/contextual.hpp — CoPE's contextual positions (Golovneva et al. 2024, eq. 3-5;
// hook 6 in table form) for one row of a key tile, shared by the fused forward and backward.
//
// Row i against the tile's keys j < nk, x_j = q_i . c_j (c: keys or values) as the QK^T kernel gave
// it (scale 1): g_j = sigmoid(cope_gate x_j) (0 for a masked key), the positions
// p_j = min(carry + sum_{k >= j in the tile} g_k, cap) in double, the term t_j interpolated from the
// row's products q_i . e(n) (one per table row n, formed once per query tile). The carry is the sum
// of the row's gates over the key tiles after this one: a work item walks its key tiles from the last
// to the first, so each tile's positions are known when its scores are (online softmax does not care
// about the order of the key tiles). Not here: where the term goes (fast/forward.hpp,
// fast/backward.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include <posenc/attention/fast/call.hpp>
#include <posenc/attention/fast/kernels.hpp>

namespace posenc::inline v0::detail {

/// One row of CoPE over a key tile: x[j] the raw gate products, mr the row's element mask (null: every
/// key visible), cq the row's q . e(n) for n from x0 on (a window holding every position the row can
/// reach in this tile). Writes the gates g[j] (z: TK floats of scratch) and the
/// terms t[j] (t may be x), and, when pos is not null, the uncapped sums pos[j] (capped where > cap);
/// adds the tile's gates to carry.
inline void contextual_tile_row(const call_tables& tab, const kernels::float_tile_kernels& tiles, const float* x,
                                const std::uint8_t* mr, int nk, const float* cq, std::ptrdiff_t x0, double& carry,
                                float* g, float* z, double* pos, float* t) {
  for (int j = 0; j < nk; ++j) z[j] = -tab.cope_gate * x[j];
  tiles.exp(z, g, nk);
  for (int j = 0; j < nk; ++j) g[j] = mr != nullptr && mr[j] == 0 ? 0.0f : 1.0f / (1.0f + g[j]);
  double run = carry;
  for (int j = nk - 1; j >= 0; --j) {
    run += static_cast<double>(g[j]);
    if (pos != nullptr) pos[j] = run;
    const double pc = std::min(run, tab.cope_cap);
    if (!(pc >= 0)) {  // a NaN gate: the row's logits are NaN (as sdpa)
      t[j] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const double f = std::floor(pc);
    const auto lo = static_cast<std::ptrdiff_t>(f) - x0;
    const auto w = static_cast<float>(pc - f);
    t[j] = w > 0 ? cq[lo] * (1.0f - w) + cq[lo + 1] * w : cq[lo];
  }
  carry = run;
}

}  // namespace posenc::inline v0::detail
