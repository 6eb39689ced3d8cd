// tests/attention/attention_support.hpp — test-local encoders (one per hook), random data and a
// naive double attention written independently of sdpa(), for the attention tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include <posenc/attention/sdpa.hpp>
#include <posenc/concepts.hpp>
#include <posenc/core/tensor_view.hpp>

namespace posenc_test {

/// Positions first, first + 1, ..., first + n - 1 for each of B sequences, row-major [B, n].
inline std::vector<std::int64_t> batch_positions(std::ptrdiff_t B, std::ptrdiff_t n, std::int64_t first) {
  std::vector<std::int64_t> p;
  for (std::ptrdiff_t b = 0; b < B; ++b)
    for (std::ptrdiff_t t = 0; t < n; ++t) p.push_back(first + t);
  return p;
}

/// Deterministic values in [-1, 1) (SplitMix64), so tests are reproducible without <random>.
inline std::vector<double> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<double> out(n);
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : out) {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    v = static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
  return out;
}

template <class T>
std::vector<T> cast_to(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

/// Hook 3 from a dense table [heads][n_q][n_k] indexed by (query position, key position) — used to
/// feed the golden `bias` arrays through sdpa without depending on the encoder headers.
struct table_bias {
  std::ptrdiff_t heads = 0, nq = 0, nk = 0;
  std::vector<double> table;
  [[nodiscard]] std::string_view name() const { return "table_bias"; }
  [[nodiscard]] std::ptrdiff_t num_heads() const { return heads; }
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const {
    return table[static_cast<std::size_t>((h * nq + i) * nk + j)];
  }
};

/// Hook 3: ALiBi in the symmetric-distance-free form slope_h * (pos_k - pos_q).
struct slope_bias {
  std::vector<double> slopes;
  [[nodiscard]] std::string_view name() const { return "slope_bias"; }
  [[nodiscard]] std::ptrdiff_t num_heads() const { return static_cast<std::ptrdiff_t>(slopes.size()); }
  [[nodiscard]] double bias(std::ptrdiff_t h, std::int64_t i, std::int64_t j) const {
    return slopes[static_cast<std::size_t>(h)] * static_cast<double>(j - i);
  }
};

/// Hook 2: plain half-split RoPE from double inv_freq, rotating in T (a naive local reference).
struct local_rope {
  std::vector<double> inv_freq;  // D/2 entries; rotary_dim = head_dim
  [[nodiscard]] std::string_view name() const { return "local_rope"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const { return static_cast<std::ptrdiff_t>(2 * inv_freq.size()); }
  template <class T>
  void rotate(posenc::tensor_view<T> x, std::span<const std::int64_t> pos) const {
    const auto P = static_cast<std::ptrdiff_t>(inv_freq.size());
    for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
        for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
          for (std::ptrdiff_t p = 0; p < P; ++p) {
            const double a = static_cast<double>(pos[static_cast<std::size_t>(b * x.tokens() + t)]) *
                             inv_freq[static_cast<std::size_t>(p)];
            const double c = std::cos(a), s = std::sin(a);
            const double x0 = static_cast<double>(x(b, t, h, p)), x1 = static_cast<double>(x(b, t, h, p + P));
            x(b, t, h, p) = static_cast<T>(x0 * c - x1 * s);
            x(b, t, h, p + P) = static_cast<T>(x0 * s + x1 * c);
          }
  }
  template <class T>
  void transform_q(posenc::tensor_view<T> q, std::span<const std::int64_t> pos) const {
    rotate(q, pos);
  }
  template <class T>
  void transform_k(posenc::tensor_view<T> k, std::span<const std::int64_t> pos) const {
    rotate(k, pos);
  }
};

/// Hook 4: Shaw (t2t) with tables [2 k_max + 1][D], clip(pos_k - pos_q, -k_max, k_max) + k_max.
struct local_shaw {
  std::int64_t k_max = 1;
  std::ptrdiff_t dim = 0;
  std::vector<double> keys, values;
  [[nodiscard]] std::string_view name() const { return "local_shaw"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const { return dim; }
  [[nodiscard]] std::size_t row(std::int64_t i, std::int64_t j) const {
    const std::int64_t c = std::clamp<std::int64_t>(j - i, -k_max, k_max) + k_max;
    return static_cast<std::size_t>(c * dim);
  }
  [[nodiscard]] std::span<const double> relative_key(std::ptrdiff_t, std::int64_t i, std::int64_t j) const {
    return {keys.data() + row(i, j), static_cast<std::size_t>(dim)};
  }
  [[nodiscard]] std::span<const double> relative_value(std::ptrdiff_t, std::int64_t i, std::int64_t j) const {
    if (values.empty()) return {};
    return {values.data() + row(i, j), static_cast<std::size_t>(dim)};
  }
};

/// Hook 2 that is NOT a rotation and NOT relative: q scaled by 1.01^pos, k by 1.02^pos, so q.k
/// depends on absolute positions (a test that relative invariance can fail).
struct local_scale_qk {
  std::ptrdiff_t dim = 0;
  [[nodiscard]] std::string_view name() const { return "local_scale_qk"; }
  [[nodiscard]] std::ptrdiff_t head_dim() const { return dim; }
  template <class T>
  void apply(posenc::tensor_view<T> x, std::span<const std::int64_t> pos, double base) const {
    for (std::ptrdiff_t b = 0; b < x.batch(); ++b)
      for (std::ptrdiff_t t = 0; t < x.tokens(); ++t)
        for (std::ptrdiff_t h = 0; h < x.heads(); ++h)
          for (std::ptrdiff_t d = 0; d < x.dim(); ++d)
            x(b, t, h, d) =
                static_cast<T>(static_cast<double>(x(b, t, h, d)) *
                               std::pow(base, static_cast<double>(pos[static_cast<std::size_t>(b * x.tokens() + t)])));
  }
  template <class T>
  void transform_q(posenc::tensor_view<T> q, std::span<const std::int64_t> pos) const {
    apply(q, pos, 1.01);
  }
  template <class T>
  void transform_k(posenc::tensor_view<T> k, std::span<const std::int64_t> pos) const {
    apply(k, pos, 1.02);
  }
};

/// Contiguous [B, S, H, D] storage with a view.
template <class T>
struct tensor4 {
  std::ptrdiff_t b = 0, s = 0, h = 0, d = 0;
  std::vector<T> data;
  tensor4() = default;
  tensor4(std::ptrdiff_t b_, std::ptrdiff_t s_, std::ptrdiff_t h_, std::ptrdiff_t d_, std::uint64_t seed = 0)
      : b(b_), s(s_), h(h_), d(d_), data(static_cast<std::size_t>(b_ * s_ * h_ * d_)) {
    if (seed != 0) data = cast_to<T>(random_values(data.size(), seed));
  }
  [[nodiscard]] posenc::tensor_view<T> view() { return posenc::tensor_view<T>::bthd(data.data(), b, s, h, d); }
  [[nodiscard]] posenc::tensor_view<const T> cview() const {
    return posenc::tensor_view<const T>::bthd(data.data(), b, s, h, d);
  }
  T& at(std::ptrdiff_t bi, std::ptrdiff_t si, std::ptrdiff_t hi, std::ptrdiff_t di) {
    return data[static_cast<std::size_t>(((bi * s + si) * h + hi) * d + di)];
  }
  const T& at(std::ptrdiff_t bi, std::ptrdiff_t si, std::ptrdiff_t hi, std::ptrdiff_t di) const {
    return data[static_cast<std::size_t>(((bi * s + si) * h + hi) * d + di)];
  }
};

inline bool all_finite(const auto& v) {
  for (auto x : v)
    if (!std::isfinite(static_cast<double>(x))) return false;
  return true;
}

}  // namespace posenc_test
