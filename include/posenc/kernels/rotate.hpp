// posenc/kernels/rotate.hpp — the public entry points of the rotation kernels.
//
// `kernels::rotate` rotates [tokens, heads, head_dim] rows by per-token cos/sin rows with the best
// kernel for this CPU (kernels/isa.hpp: chosen once, overridable). Variants: a row range for the
// caller's thread pool, a split over a parallel_for (the caller's, or the default pool created
// once: core/parallel.hpp), on-the-fly angles from positions, a fused q+k call, and rotate_token
// (decode: one token's rows in place, every argument in a register). None of the
// kernel entries allocates or throws (except rotate_parallel, whose parallel_for may). See
// kernels/types.hpp for the memory contract and the pairing sketch.
//
// Contract shared by every entry:
//   - geometry: rotary_dim even >= 2, offset >= 0, offset + rotary_dim <= head_dim (POSENC_ASSERT);
//   - rows: elements of a row contiguous; token and head strides arbitrary (in elements, may be
//     negative or larger than head_dim); any alignment (fast cases: 64-byte aligned rows, and
//     contiguous rows at one offset from a line, as ggml's, whose stores stay aligned);
//   - dst may equal src (in place) but must not partially overlap it; out of place, the elements
//     outside the rotary slice are copied; outputs larger than stream_threshold() are written with
//     non-temporal stores (vector-aligned rows only);
//   - angles hold M*cos and M*sin (M = magnitude), C = compute_t<T>; inverse negates sin, so
//     inverse undoes forward when M = 1; a "delta" rotation is forward with delta angles;
//   - results are bit-exact with kernels::scalar (same products and sums, never an FMA) with
//     table angles, whatever the compiler flags, in the default arithmetic::exact mode
//     (arithmetic::fused via set_arithmetic: within the bound documented at kernels::arithmetic);
//     on-the-fly float angles differ from table ones by at most 2e-7 * M (see rotate_positions).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <posenc/core/element.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/kernels/arm/neon.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/scalar/rotate.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/kernels/x86/avx2.hpp>
#include <posenc/kernels/x86/avx512.hpp>

namespace posenc::inline v0::kernels {
inline namespace POSENC_KERNELS_ABI {

/// The rotation kernel family (kernel_table, kernels/isa.hpp) for storage T: the row-range kernel
/// and the one-token in-place kernel of each ISA, with the signatures of kernels/drivers/rotate.inl.
template <storage_type T>
struct rotate_kernels {
  using C = compute_t<T>;
  void (*rows)(const rope_geometry& g, const head_rows<const T>& src, const head_rows<T>& dst,
               const angle_rows<C>& angles, rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end,
               bool stream) noexcept = nullptr;
  void (*token)(pairing layout, rotation dir, int pairs, T* x, std::ptrdiff_t heads, std::ptrdiff_t head_stride,
                const C* cos, const C* sin) noexcept = nullptr;
};

template <storage_type T>
struct kernel_family<rotate_kernels<T>> {
  using C = compute_t<T>;
  template <isa I>
  static consteval rotate_kernels<T> make() {
#if POSENC_HAS_X86_KERNELS
    if constexpr (I == isa::avx512)
      return {&avx512::rotate_rows<T, C>, &avx512::rotate_token_rows<T, C>};
    else if constexpr (I == isa::avx2)
      return {&avx2::rotate_rows<T, C>, &avx2::rotate_token_rows<T, C>};
    else
#endif
#if POSENC_HAS_NEON_KERNELS
        if constexpr (I == isa::neon)
      return {&neon::rotate_rows<T, C>, &neon::rotate_token_rows<T, C>};
    else
#endif
      return {&scalar_rows, &scalar::rotate_token_rows<T, C>};
  }

 private:
  // The oracle takes its views by value (its public signature); the table's takes them by reference.
  static void scalar_rows(const rope_geometry& g, const head_rows<const T>& src, const head_rows<T>& dst,
                          const angle_rows<C>& angles, rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end,
                          bool stream) noexcept {
    scalar::rotate_rows(g, src, dst, angles, dir, row_begin, row_end, stream);
  }
};

namespace detail {
template <class T>
[[nodiscard]] inline head_rows<const T> as_const(head_rows<T> x) noexcept {
  return {x.data, x.tokens, x.heads, x.token_stride, x.head_stride};
}
template <class T>
[[nodiscard]] inline bool wants_stream(head_rows<const T> src, head_rows<T> dst, int head_dim) noexcept {
  const auto bytes = static_cast<std::size_t>(dst.tokens * dst.heads) * static_cast<std::size_t>(head_dim) * sizeof(T);
  return src.data != dst.data && bytes > stream_threshold();
}
template <storage_type T, class C>
POSENC_FORCE_INLINE void rotate_rows_on(isa which, const rope_geometry& g, const head_rows<const T>& src,
                                        const head_rows<T>& dst, const angle_rows<C>& angles, rotation dir,
                                        std::ptrdiff_t begin, std::ptrdiff_t end, bool stream) noexcept {
  kernel_table<rotate_kernels<T>>(which).rows(g, src, dst, angles, dir, begin, end, stream);
}
template <storage_type T, class C>
POSENC_FORCE_INLINE void rotate_token_on(isa which, const rope_geometry& g, T* x, std::ptrdiff_t heads,
                                         std::ptrdiff_t head_stride, const C* cos, const C* sin,
                                         rotation dir) noexcept {
  kernel_table<rotate_kernels<T>>(which).token(g.layout, dir, g.pairs(), x + g.offset, heads, head_stride, cos, sin);
}
// Asks for the lines of token t's rows ahead of use: the on-the-fly entries compute a token's angles
// before touching its rows, and without this the memory system idles meanwhile (DRAM-sized inputs).
template <class T>
inline void prefetch_token(head_rows<const T> x, std::ptrdiff_t t, int head_dim) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  const auto bytes = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(head_dim) * sizeof(T));
  for (std::ptrdiff_t h = 0; h < x.heads; ++h) {
    const auto* row = reinterpret_cast<const char*>(x.row(t, h));
    for (std::ptrdiff_t b = 0; b < bytes; b += 64) __builtin_prefetch(row + b, 0, 3);
  }
#else
  static_cast<void>(x), static_cast<void>(t), static_cast<void>(head_dim);
#endif
}
// A token whose rows have more pairs than the per-token angle buffer holds: the angles are made
// max_on_the_fly_pairs at a time and applied by the scalar kernel (bit-exact with every SIMD one),
// so no pair count can overrun the buffer, in any build. Rows of more than 2048 rotated elements.
template <storage_type T, class C>
inline void rotate_token_wide(isa which, const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                              std::ptrdiff_t t, const double* inv_freq, std::int64_t position, double magnitude,
                              rotation dir, C* cs, C* sn) noexcept {
  const int P = g.pairs();
  for (int k0 = 0; k0 < P; k0 += max_on_the_fly_pairs) {
    const int k1 = std::min(P, k0 + max_on_the_fly_pairs);
    row_angles_on(which, inv_freq + k0, k1 - k0, position, magnitude, cs, sn);
    for (std::ptrdiff_t h = 0; h < src.heads; ++h)
      scalar::rotate_pairs(g, src.row(t, h), dst.row(t, h), cs, sn, dir, k0, k1);
  }
  for (std::ptrdiff_t h = 0; h < src.heads; ++h) scalar::copy_pass_through(g, src.row(t, h), dst.row(t, h));
}
// Token t rotated by on-the-fly angles (the buffer cs/sn holds max_on_the_fly_pairs each).
template <storage_type T, class C>
inline void rotate_token_on_the_fly(isa which, const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                    std::ptrdiff_t t, const double* inv_freq, std::int64_t position, double magnitude,
                                    rotation dir, bool stream, C* cs, C* sn, bool angles_ready) noexcept {
  if (POSENC_UNLIKELY(g.pairs() > max_on_the_fly_pairs)) {
    rotate_token_wide(which, g, src, dst, t, inv_freq, position, magnitude, dir, cs, sn);
    return;
  }
  if (!angles_ready) row_angles_on(which, inv_freq, g.pairs(), position, magnitude, cs, sn);
  rotate_rows_on(which, g, src, dst, angle_rows<C>{cs, sn, 0}, dir, t * src.heads, (t + 1) * src.heads, stream);
}
// k's head rows continue q's (same strides, k's first row right after q's last): a fused qkv
// buffer as llama.cpp and vLLM lay it out. q and k can then be rotated as one set of rows.
template <class T>
[[nodiscard]] inline bool k_follows_q(head_rows<T> q, head_rows<T> k) noexcept {
  return q.token_stride == k.token_stride && q.head_stride == k.head_stride && q.heads > 0 &&
         k.data == q.data + q.heads * q.head_stride;
}
inline void check_geometry(const rope_geometry& g) noexcept {
  POSENC_ASSERT(g.rotary_dim >= 2 && g.rotary_dim % 2 == 0 && g.offset >= 0 && g.offset + g.rotary_dim <= g.head_dim);
  static_cast<void>(g);
}
}  // namespace detail

/// Rows [row_begin, row_end) of the token-major row order (row r = token r / heads, head
/// r % heads): the unit callers' thread pools split. `stream` forces non-temporal stores on or off
/// for this range (the whole-tensor entries decide it from the total size).
template <storage_type T, compute_type_of<T> C>
POSENC_FORCE_INLINE void rotate_rows(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst,
                                     angle_rows<C> angles, rotation dir, std::ptrdiff_t row_begin,
                                     std::ptrdiff_t row_end, bool stream = false) noexcept {
  detail::check_geometry(g);
  POSENC_ASSERT(src.tokens == dst.tokens && src.heads == dst.heads);
  POSENC_ASSERT(0 <= row_begin && row_begin <= row_end && row_end <= src.tokens * src.heads);
  detail::rotate_rows_on(active_isa(), g, src, dst, angles, dir, row_begin, row_end, stream);
}

/// dst = R(angles) src for every head row (dst may equal src; partial overlap is not allowed).
/// C is compute_t<T>: float tables for float/bfloat16/float16 storage, double for double.
template <storage_type T, compute_type_of<T> C>
POSENC_FORCE_INLINE void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                                rotation dir = rotation::forward) noexcept {
  rotate_rows(g, src, dst, angles, dir, 0, src.tokens * src.heads, detail::wants_stream(src, dst, g.head_dim));
}

/// In-place convenience overload.
template <storage_type T, compute_type_of<T> C>
POSENC_FORCE_INLINE void rotate(const rope_geometry& g, head_rows<T> x, angle_rows<C> angles,
                                rotation dir = rotation::forward) noexcept {
  rotate(g, detail::as_const(x), x, angles, dir);
}

/// One token's `heads` rows rotated in place by one angle row (decode: a step's q or k): the same
/// bits as rotate() on a [1, heads, head_dim] view of them, through an entry whose arguments all
/// travel in registers (a decode call is ~100 ns; building views in memory cost ~10 of it while
/// the previous call's stores drained). x: head 0's row (head_dim elements), rows head_stride apart.
template <storage_type T, compute_type_of<T> C>
POSENC_FORCE_INLINE void rotate_token(const rope_geometry& g, T* x, std::ptrdiff_t heads, std::ptrdiff_t head_stride,
                                      const C* cos, const C* sin, rotation dir = rotation::forward) noexcept {
  detail::check_geometry(g);
  if (heads <= 0) return;
  detail::rotate_token_on(active_isa(), g, x, heads, head_stride, cos, sin, dir);
}

/// Work below this many bytes (rows x head_dim x element) runs inline in rotate_parallel: waking
/// workers costs more than they save. Larger work is cut into pieces of at least this size.
inline constexpr std::size_t parallel_min_bytes = std::size_t{256} << 10;

namespace detail {
template <storage_type T, class C, class Run>
inline void rotate_split(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                         rotation dir, Run&& run) {
  check_geometry(g);
  POSENC_ASSERT(src.tokens == dst.tokens && src.heads == dst.heads);
  const std::ptrdiff_t rows = src.tokens * src.heads;
  const std::size_t bytes = static_cast<std::size_t>(rows) * static_cast<std::size_t>(g.head_dim) * sizeof(T);
  const bool stream = wants_stream(src, dst, g.head_dim);
  // Pieces of >= 2 * parallel_min_bytes (row order inside, what the DRAM prefetchers want), at most 64.
  const auto pieces =
      std::min<std::ptrdiff_t>({rows, 64, static_cast<std::ptrdiff_t>(bytes / (2 * parallel_min_bytes))});
  if (bytes < parallel_min_bytes || pieces <= 1) {
    rotate_rows(g, src, dst, angles, dir, 0, rows, stream);
    return;
  }
  const auto n = std::max<std::ptrdiff_t>(pieces, 2);
  run(n, [&](std::ptrdiff_t i) { rotate_rows(g, src, dst, angles, dir, rows * i / n, rows * (i + 1) / n, stream); });
}
}  // namespace detail

/// rotate() split into row ranges run through `pf` (the caller's scheduler; empty: the default pool
/// of core/parallel.hpp, created once). Runs inline below parallel_min_bytes. Results are
/// bit-identical to rotate() whatever the split. Throws only what `pf` throws.
template <storage_type T, compute_type_of<T> C>
inline void rotate_parallel(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                            rotation dir, const parallel_for& pf) {
  detail::rotate_split(g, src, dst, angles, dir, [&](std::ptrdiff_t n, auto&& fn) { run_parallel(pf, n, fn); });
}

/// rotate() on at most `threads` threads of the default pool (capped by its size; <= 1: inline).
/// Never starts a thread per call.
template <storage_type T, compute_type_of<T> C>
inline void rotate_parallel(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                            rotation dir, int threads) {
  detail::rotate_split(g, src, dst, angles, dir, [&](std::ptrdiff_t n, auto&& fn) {
    if (threads <= 1) {
      for (std::ptrdiff_t i = 0; i < n; ++i) fn(i);
    } else {
      default_pool().run(n, task_ref(fn), threads);
    }
  });
}

/// On-the-fly angles: token t is rotated by M * (cos, sin)(positions[t] * inv_freq[k]), computed
/// per token (vectorised, double range reduction) instead of read from a table, for positions no
/// table covers. fp32 angles are within 2e-7 (absolute, times M) of exact at any |position| < 2^31
/// and stay correct beyond; double storage uses compute_angles (docs/design.md §5). `inv_freq` has
/// g.pairs() entries. Rows of more than max_on_the_fly_pairs pairs are handled in slices (slower,
/// same results): no pair count can overrun the per-token buffer.
template <storage_type T>
inline void rotate_positions(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, const double* inv_freq,
                             const std::int64_t* positions, double magnitude,
                             rotation dir = rotation::forward) noexcept {
  using C = compute_t<T>;
  detail::check_geometry(g);
  const isa which = active_isa();
  const bool stream = detail::wants_stream(src, dst, g.head_dim);
  const bool large =
      static_cast<std::size_t>(src.tokens * src.heads) * static_cast<std::size_t>(g.head_dim) * sizeof(T) >
      stream_threshold();
  alignas(64) C cs[2 * max_on_the_fly_pairs];
  for (std::ptrdiff_t t = 0; t < src.tokens; ++t) {
    if (large && t + 1 < src.tokens) detail::prefetch_token(src, t + 1, g.head_dim);
    detail::rotate_token_on_the_fly(which, g, src, dst, t, inv_freq, positions[t], magnitude, dir, stream, cs,
                                    cs + max_on_the_fly_pairs, false);
  }
}

/// In-place convenience overload.
template <storage_type T>
inline void rotate_positions(const rope_geometry& g, head_rows<T> x, const double* inv_freq,
                             const std::int64_t* positions, double magnitude,
                             rotation dir = rotation::forward) noexcept {
  rotate_positions(g, detail::as_const(x), x, inv_freq, positions, magnitude, dir);
}

/// q and k rotated in place in one pass over the tokens (the token's angle row is read once for
/// both). q and k may have different head counts and strides but the same token count.
template <storage_type T, compute_type_of<T> C>
POSENC_FORCE_INLINE void rotate_qk(const rope_geometry& g, head_rows<T> q, head_rows<T> k, angle_rows<C> angles,
                                   rotation dir = rotation::forward) noexcept {
  detail::check_geometry(g);
  POSENC_ASSERT(q.tokens == k.tokens);
  const isa which = active_isa();
  if (detail::k_follows_q(q, k)) {  // one row set: one call, each angle block loaded once for q and k
    const head_rows<T> qk{q.data, q.tokens, q.heads + k.heads, q.token_stride, q.head_stride};
    detail::rotate_rows_on(which, g, detail::as_const(qk), qk, angles, dir, 0, qk.tokens * qk.heads, false);
    return;
  }
  for (std::ptrdiff_t t = 0; t < q.tokens; ++t) {
    detail::rotate_rows_on(which, g, detail::as_const(q), q, angles, dir, t * q.heads, (t + 1) * q.heads, false);
    detail::rotate_rows_on(which, g, detail::as_const(k), k, angles, dir, t * k.heads, (t + 1) * k.heads, false);
  }
}

/// Fused q+k with on-the-fly angles from per-token positions (see rotate_positions): the angles
/// of each token are computed once and used for every q and k head.
template <storage_type T>
inline void rotate_qk(const rope_geometry& g, head_rows<T> q, head_rows<T> k, const double* inv_freq,
                      const std::int64_t* positions, double magnitude, rotation dir = rotation::forward) noexcept {
  using C = compute_t<T>;
  detail::check_geometry(g);
  POSENC_ASSERT(q.tokens == k.tokens);
  const isa which = active_isa();
  alignas(64) C cs[2 * max_on_the_fly_pairs];
  C* sn = cs + max_on_the_fly_pairs;
  if (detail::k_follows_q(q, k)) {
    const head_rows<T> qk{q.data, q.tokens, q.heads + k.heads, q.token_stride, q.head_stride};
    for (std::ptrdiff_t t = 0; t < q.tokens; ++t)
      detail::rotate_token_on_the_fly(which, g, detail::as_const(qk), qk, t, inv_freq, positions[t], magnitude, dir,
                                      false, cs, sn, false);
    return;
  }
  for (std::ptrdiff_t t = 0; t < q.tokens; ++t) {
    detail::rotate_token_on_the_fly(which, g, detail::as_const(q), q, t, inv_freq, positions[t], magnitude, dir, false,
                                    cs, sn, false);
    // k reuses q's angles (computed once per token) unless the row was too wide to keep them.
    detail::rotate_token_on_the_fly(which, g, detail::as_const(k), k, t, inv_freq, positions[t], magnitude, dir, false,
                                    cs, sn, g.pairs() <= max_on_the_fly_pairs);
  }
}

}  // namespace POSENC_KERNELS_ABI
}  // namespace posenc::inline v0::kernels
