// posenc/kernels/drivers/rotate.inl — the rotation kernel, written once over an ISA's operations
// (ops/generic.hpp lists them). No include guard: kernels/<isa>.hpp includes it inside that ISA's
// namespace and target region, after its ops; every name below resolves to that ISA's operations.
//
// Same functions, order and contract as kernels/scalar/rotate.hpp (the oracle), bit-exact with it
// in the default exact arithmetic: every product goes through mul_rounded, a*c - b*s and a*s + b*c,
// never an FMA. kernels::arithmetic::fused (set_arithmetic) folds one product into an FMA.

/// a*c - b*s and a*c + b*s: exact (two rounded products, as the scalar oracle) or fused (the
/// second product rounded, the first folded into an FMA; see kernels::arithmetic).
template <bool Fused, class V>
POSENC_OPS_INLINE V rot_diff(V a, V c, V b, V s) {
  if constexpr (Fused)
    return fms(a, c, mul(b, s));
  else
    return sub(mul_rounded(a, c), mul_rounded(b, s));
}
template <bool Fused, class V>
POSENC_OPS_INLINE V rot_sum(V a, V c, V b, V s) {
  if constexpr (Fused)
    return fma(a, c, mul(b, s));
  else
    return add(mul_rounded(a, c), mul_rounded(b, s));
}

/// Pairs [k, kend) one vector at a time, then a partial vector: the part of a row the two-vector
/// loop of rotate_heads leaves (interleaved: kend - k < lanes pairs). Out of line: most rows never
/// get here. (Peeling pairs up to vector alignment for misaligned rows, through this function, was
/// measured 1.5-2x slower than unaligned loads and stores on Zen 4, so rows run unaligned.)
template <pairing Layout, bool Inverse, bool Stream, bool Fused, storage_type T, class C>
__attribute__((noinline)) void rotate_rest(int P, int k, int kend, const T* s, T* d, const C* cos,
                                           const C* sin) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>;
  const V neg = sign_mask(V{}, Inverse);
  if constexpr (Layout == pairing::half_split) {
    for (; k + L <= kend; k += L) {
      const V a = load(s + k), b = load(s + k + P), c = load(cos + k), sn = flip(load(sin + k), neg);
      put<Stream>(d + k, rot_diff<Fused>(a, c, b, sn));
      put<Stream>(d + k + P, rot_sum<Fused>(a, sn, b, c));
    }
    if (const int n = kend - k; n > 0) {
      const V a = load_n(s + k, n), b = load_n(s + k + P, n), c = load_n(cos + k, n),
              sn = flip(load_n(sin + k, n), neg);
      store_n(d + k, rot_diff<Fused>(a, c, b, sn), n);
      store_n(d + k + P, rot_sum<Fused>(a, sn, b, c), n);
    }
  } else if (const int n = kend - k; n > 0) {
    const V odd = even_sign(V{});
    const int n0 = 2 * n < L ? 2 * n : L, n1 = 2 * n - n0;
    const V x0 = load_n(s + 2 * k, n0), x1 = n1 > 0 ? load_n(s + 2 * k + L, n1) : V{}, c = load_n(cos + k, n),
            sn = flip(load_n(sin + k, n), neg);
    store_n(d + 2 * k, rot_sum<Fused>(x0, dup_lo(c), swap_pairs(x0), flip(dup_lo(sn), odd)), n0);
    if (n1 > 0) {
      store_n(d + 2 * k + L, rot_sum<Fused>(x1, dup_hi(c), swap_pairs(x1), flip(dup_hi(sn), odd)), n1);
    }
  }
}

/// One row's results for rotate_heads_regs from its R vectors `in` (element order, loaded in
/// pairs by load2: 4NB half_split, 2NB interleaved), into r (same order).
template <int NB, pairing Layout, bool Fused, class V>
POSENC_OPS_INLINE void regs_row(const V* in, V* r, const V* c, const V* sn) noexcept {
  for (int b = 0; b < NB; ++b) {
    if constexpr (Layout == pairing::half_split) {
      const V x0 = in[2 * b], x1 = in[2 * b + 1], b0 = in[2 * NB + 2 * b], b1 = in[2 * NB + 2 * b + 1];
      r[2 * b] = rot_diff<Fused>(x0, c[2 * b], b0, sn[2 * b]);
      r[2 * b + 1] = rot_diff<Fused>(x1, c[2 * b + 1], b1, sn[2 * b + 1]);
      r[2 * NB + 2 * b] = rot_sum<Fused>(x0, sn[2 * b], b0, c[2 * b]);
      r[2 * NB + 2 * b + 1] = rot_sum<Fused>(x1, sn[2 * b + 1], b1, c[2 * b + 1]);
    } else {
      const V x0 = in[2 * b], x1 = in[2 * b + 1];
      r[2 * b] = rot_sum<Fused>(x0, c[2 * b], swap_pairs(x0), sn[2 * b]);
      r[2 * b + 1] = rot_sum<Fused>(x1, c[2 * b + 1], swap_pairs(x1), sn[2 * b + 1]);
    }
  }
}
template <int R, class T, class V>
POSENC_OPS_INLINE void load_row(const T* x, V* in) noexcept {
  for (int j = 0; j < R; j += 2) {
    load2(x + j * lanes<T>, in[j], in[j + 1]);
    in[j] = in_register(in[j]), in[j + 1] = in_register(in[j + 1]);
  }
}

/// The angle vectors of a row whose rotary slice is NB blocks of two vectors, built once into
/// registers: half-split as loaded (sines negated for the inverse), interleaved duplicated per pair
/// with the even lanes' sines negated (the odd lanes' for the inverse).
template <int NB, pairing Layout, bool Inverse, storage_type T, class C, class V>
POSENC_OPS_INLINE void regs_angles(const T* s, const C* cos, const C* sin, V (&c)[2 * NB], V (&sn)[2 * NB]) noexcept {
  constexpr int step = Layout == pairing::half_split ? 2 * lanes<T> : lanes<T>;
  for (int b = 0; b < NB; ++b) {
    if constexpr (Layout == pairing::half_split) {
      pair_angles(s, cos + b * step, c[2 * b], c[2 * b + 1]), pair_angles(s, sin + b * step, sn[2 * b], sn[2 * b + 1]);
      if constexpr (Inverse)
        sn[2 * b] = flip(sn[2 * b], sign_mask(V{}, true)), sn[2 * b + 1] = flip(sn[2 * b + 1], sign_mask(V{}, true));
    } else {
      const V odd = Inverse ? flip(even_sign(V{}), sign_mask(V{}, true)) : even_sign(V{});
      dup_angles(s, cos + b * step, c[2 * b], c[2 * b + 1]), dup_angles(s, sin + b * step, sn[2 * b], sn[2 * b + 1]);
      sn[2 * b] = flip(sn[2 * b], odd), sn[2 * b + 1] = flip(sn[2 * b + 1], odd);
    }
  }
}

/// Interleaved rows, src and dst alike, pairs inside every aligned vector (even shift): the rows are
/// one stream of aligned vectors, vector j of a row (from element j*L - shift) taking the row's angle
/// vectors realigned the same way. The first and last vectors are partial (masked).
template <int R, bool Fused, storage_type T, class V, class I>
POSENC_OPS_INLINE void regs_interleaved_aligned(const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds,
                                                std::ptrdiff_t n, const V (&c)[R], const V (&sn)[R], int shift,
                                                I to_mem) noexcept {
  constexpr int L = lanes<T>;
  if (shift == 0) {  // aligned rows: the angle vectors as built, no partial vectors
    for (std::ptrdiff_t i = 0; i < n; ++i, s += ss, d += ds) {
      for (int j = 0; j < R; ++j) {
        const V x = in_register(load_aligned(s + j * L));
        store_aligned(d + j * L, rot_sum<Fused>(x, c[j], swap_pairs(x), sn[j]));
      }
    }
    return;
  }
  V cw[R], sw[R];
  for (int j = 0; j < R; ++j) {
    cw[j] = realign(c[(j + R - 1) % R], c[j], to_mem), sw[j] = realign(sn[(j + R - 1) % R], sn[j], to_mem);
  }
  const T* u = s - shift;
  T* w = d - shift;
  V x = load_lanes_from(u, shift);
  store_lanes_from(w, rot_sum<Fused>(x, cw[0], swap_pairs(x), sw[0]), shift);
  for (int j = 1; j < R; ++j) {  // constant bounds: the angle vectors stay in registers
    x = in_register(load_aligned(u + j * L));
    store_aligned(w + j * L, rot_sum<Fused>(x, cw[j], swap_pairs(x), sw[j]));
  }
  for (std::ptrdiff_t i = 1; i < n; ++i) {
    u += ss, w += ds;
    for (int j = 0; j < R; ++j) {
      x = in_register(load_aligned(u + j * L));
      store_aligned(w + j * L, rot_sum<Fused>(x, cw[j], swap_pairs(x), sw[j]));
    }
  }
  u += ss, w += ds;
  x = load_lanes_below(u, shift);
  store_lanes_below(w, rot_sum<Fused>(x, cw[0], swap_pairs(x), sw[0]), shift);
}

/// Half-split rows, exact, src and dst alike, shift > 0: aligned vectors too (3R registers). Vector
/// m's partners lie R/2 vectors ahead (first-half lanes) and behind (second-half lanes; the two meet
/// in the vectors at j = 0 and R/2 of a row). Each vector is loaded once, R/2 steps before its own
/// step, and kept R steps: as the partner ahead, itself, then the original partner behind (in place,
/// its memory is overwritten by then). out = x*c + partner*(-+s): the oracle's two products and sum
/// (a - b = a + -b exactly). c and sn hold the R/2 angle vectors of a half.
template <int R, storage_type T, class V, class I>
POSENC_OPS_INLINE void regs_half_split_aligned(const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds, std::ptrdiff_t n,
                                               const V (&c)[R / 2], const V (&sn)[R / 2], int shift,
                                               I to_mem) noexcept {
  constexpr int L = lanes<T>, H = R / 2;
  V cw[R], sw[R], W[R];
  for (int j = 0; j < R; ++j) {
    const int p = (j + R - 1) % R;
    const V sj = j < H ? flip(sn[j], sign_mask(V{}, true)) : sn[j - H];
    const V sp = p < H ? flip(sn[p], sign_mask(V{}, true)) : sn[p - H];
    cw[j] = realign(c[p % H], c[j % H], to_mem), sw[j] = realign(sp, sj, to_mem);
  }
  const T* u = s - shift;
  T* w = d - shift;
  W[0] = load_lanes_from(u, shift);
  for (int j = 1; j < H; ++j) W[j] = in_register(load_aligned(u + j * L));
  for (int j = H; j < R; ++j) W[j] = V{};
  const auto at = [&](auto jc, const T* ahead_at, bool last_row) POSENC_OPS_LAMBDA_INLINE {
    constexpr int j = decltype(jc)::value, slot = (j + H) % R;
    const V behind = W[slot];
    V ahead{};
    if (!last_row || j < H)
      ahead = in_register(load_aligned(ahead_at));
    else if (j == H)
      ahead = load_lanes_below(ahead_at, shift);
    W[slot] = ahead;
    const V x = W[j];
    const V partner = j == 0   ? blend_from(behind, ahead, shift)
                      : j == H ? blend_from(ahead, behind, shift)
                      : j < H  ? ahead
                               : behind;
    return add(mul_rounded(x, cw[j]), mul_rounded(partner, sw[j]));
  };
  for (std::ptrdiff_t i = 0; i < n; ++i, u += ss, w += ds) {
    const bool last_row = i + 1 == n;
    [&]<int... J>(std::integer_sequence<int, J...>) POSENC_OPS_LAMBDA_INLINE {
      ((J == 0 && i == 0 ? store_lanes_from(w, at(std::integral_constant<int, J>{}, u + (J + H) * L, last_row), shift)
                         : store_aligned(w + J * L, at(std::integral_constant<int, J>{}, u + (J + H) * L, last_row))),
       ...);
    }
    (std::make_integer_sequence<int, R>{});
  }
  // The last vector: the last row's final `shift` lanes (second half: partner behind).
  store_lanes_below(w, add(mul_rounded(W[0], cw[0]), mul_rounded(W[H], sw[0])), shift);
}

/// n rows of one token whose whole rotary slice is NB blocks of two vectors (P = NB * step): the
/// angle vectors of the row (duplicated and sign-flipped for interleaved) are built once into
/// registers, then every row streams through them in one pass. Decode (one position, every head)
/// spends its time here: no per-block angle reloads and one sequential sweep of each row.
///
/// shift > 0 (has_realign ISAs, T == C): the output rows are contiguous (ds == 2P) and d sits
/// `shift` lanes past a vector boundary (ggml's buffers: 16 bytes past a 64-byte line). No store
/// then splits a cache line: the rows are treated as one flat stream of aligned vectors, whose
/// first and last are partial (masked). With src laid out as dst, interleaved rows (even shift:
/// pairs stay inside a vector) and exact half-split rows of at most 8 vectors are rotated in
/// those aligned vectors directly, by angle vectors realigned once per call (half-split: each
/// vector's partners taken from the vectors R/2 ahead and behind, kept in registers); otherwise
/// each row is computed from unaligned loads and its results realigned (with the previous row's
/// last vector) into aligned stores. In place this is safe: no vector is read after its store.
/// So decode on a 16-byte-offset buffer runs about as fast as on an aligned one (Zen 4); the
/// realigned stores alone reach about three quarters of that, and serve the fused half-split path.
template <int NB, pairing Layout, bool Inverse, bool Fused, storage_type T, class C>
POSENC_OPS_INLINE void rotate_heads_regs(const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds, std::ptrdiff_t n,
                                         const C* cos, const C* sin, int shift) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>;
  constexpr int R = Layout == pairing::half_split ? 4 * NB : 2 * NB;  // vectors per row
  V c[2 * NB], sn[2 * NB];
  regs_angles<NB, Layout, Inverse>(s, cos, sin, c, sn);
  V in[R], r[R];
  if constexpr (has_realign && std::is_same_v<T, C>) {
    const auto to_mem = realign_index(V{}, shift);
    const bool same = shift >= 0 && ss == ds &&
                      reinterpret_cast<std::uintptr_t>(s) % vector_bytes == static_cast<std::size_t>(shift) * sizeof(T);
    if constexpr (Layout == pairing::interleaved) {
      if (same && shift % 2 == 0) return regs_interleaved_aligned<R, Fused>(s, d, ss, ds, n, c, sn, shift, to_mem);
    } else if constexpr (!Fused && R <= 8) {
      if (same && shift > 0) return regs_half_split_aligned<R>(s, d, ss, ds, n, c, sn, shift, to_mem);
    }
    // Otherwise the results are realigned into aligned vectors before they are stored.
    if (shift > 0) {
      T* w = d - shift;
      V last{};
      for (std::ptrdiff_t i = 0; i < n; ++i, w += ds) {
        load_row<R>(s + i * ss, in);
        regs_row<NB, Layout, Fused>(in, r, c, sn);
        if (i == 0)
          store_lanes_from(w, realign(V{}, r[0], to_mem), shift);
        else
          store_aligned(w, realign(last, r[0], to_mem));
        for (int j = 1; j < R; ++j) store_aligned(w + j * L, realign(r[j - 1], r[j], to_mem));
        last = r[R - 1];
      }
      store_lanes_below(w, realign(last, V{}, to_mem), shift);
      return;
    }
  }
  static_cast<void>(shift);
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    load_row<R>(s + i * ss, in);
    regs_row<NB, Layout, Fused>(in, r, c, sn);
    T* y = d + i * ds;
    for (int j = 0; j < R; j += 2) store2<false>(y + j * L, r[j], r[j + 1]);
  }
}

/// n contiguous rows of one token (row stride 2P, P a multiple of L) whose output starts `shift` > 0
/// lanes past a vector boundary, src laid out as dst (has_realign, T == C; the register-light
/// variant of rotate_heads_regs' aligned streams, for ISAs with 16 vector registers and the rows
/// that path does not take). The rows are one stream of aligned vectors, the first and last
/// partial (masked), walked pair block by pair block: each block's angle vectors are realigned once
/// (the natural vectors of angle block j - 1 and j give the aligned vector j) and every row runs
/// through them. Vectors inside one half (or, interleaved, any vector: pairs stay inside a vector
/// at even shifts) are independent; half-split vectors m and m + P/L are partners. The two vectors
/// per row that straddle a half boundary (at 0 and P/L) take their partners lane-wise from the
/// straddlers before and after them, so they run as one chain in memory order, each loaded before
/// the one behind it is stored (in place stays safe). Exact half-split only (the fused product
/// order differs between the lanes of a straddler).
template <pairing Layout, bool Inverse, bool Fused, storage_type T>
POSENC_OPS_INLINE void rotate_heads_aligned(int P, const T* s, T* d, std::ptrdiff_t n, const T* cos, const T* sin,
                                            int shift) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>;
  const auto to_mem = realign_index(V{}, shift);
  const V neg = sign_mask(V{}, true);
  const std::ptrdiff_t rs = 2 * static_cast<std::ptrdiff_t>(P);
  const T* u = s - shift;
  T* w = d - shift;
  if constexpr (Layout == pairing::interleaved) {
    const V odd = Inverse ? flip(even_sign(V{}), neg) : even_sign(V{});
    const auto rot = [&](V x, V c, V sn) POSENC_OPS_LAMBDA_INLINE { return rot_sum<Fused>(x, c, swap_pairs(x), sn); };
    V cp, sp, unused;  // the natural (element-aligned) angle vectors of the previous vector: the row's last
    dup_angles(s, cos + P - L, unused, cp), dup_angles(s, sin + P - L, unused, sp);
    sp = flip(sp, odd);
    for (int b = 0; b < P / L; ++b) {
      V c0, c1, s0, s1;
      dup_angles(s, cos + b * L, c0, c1), dup_angles(s, sin + b * L, s0, s1);
      s0 = flip(s0, odd), s1 = flip(s1, odd);
      const V cw0 = realign(cp, c0, to_mem), sw0 = realign(sp, s0, to_mem);
      const V cw1 = realign(c0, c1, to_mem), sw1 = realign(s0, s1, to_mem);
      const std::ptrdiff_t j = 2 * b * L;
      if (b == 0) {  // vector 0 of each row holds the previous row's last `shift` lanes
        V x = load_lanes_from(u, shift);
        store_lanes_from(w, rot(x, cw0, sw0), shift);
        for (std::ptrdiff_t i = 1; i < n; ++i) {
          x = in_register(load_aligned(u + i * rs));
          store_aligned(w + i * rs, rot(x, cw0, sw0));
        }
        x = load_lanes_below(u + n * rs, shift);
        store_lanes_below(w + n * rs, rot(x, cw0, sw0), shift);
      }
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        if (b > 0) {
          const V x = in_register(load_aligned(u + i * rs + j));
          store_aligned(w + i * rs + j, rot(x, cw0, sw0));
        }
        const V x = in_register(load_aligned(u + i * rs + j + L));
        store_aligned(w + i * rs + j + L, rot(x, cw1, sw1));
      }
      cp = c1, sp = s1;
    }
  } else {
    static_assert(!Fused, "the half-split aligned stream is exact only");
    const int H = P / L;
    const auto sines_at = [&](int e)
                              POSENC_OPS_LAMBDA_INLINE { return Inverse ? flip(load(sin + e), neg) : load(sin + e); };
    const auto sines = [&](int q) POSENC_OPS_LAMBDA_INLINE { return sines_at(q * L); };
    // Vectors 1..H-1 of each row (first half) with their partners H ahead (second half), two
    // vectors of each half at a time, rows inner (the shape of the aligned rows' block loop): the
    // angles lie inside the first half, so an unaligned load from the table row at -shift is the
    // realigned vector, loaded once per block (per row: 0.65 of aligned, load-bound).
    const auto block = [&](int m, auto two) POSENC_OPS_LAMBDA_INLINE {
      constexpr bool Two = decltype(two)::value;
      const V c0 = load(cos + m * L - shift), s0 = sines_at(m * L - shift), n0 = flip(s0, neg);
      V c1{}, s1{}, n1{};
      if constexpr (Two) c1 = load(cos + (m + 1) * L - shift), s1 = sines_at((m + 1) * L - shift), n1 = flip(s1, neg);
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        const T* x = u + i * rs + m * L;
        T* y = w + i * rs + m * L;
        const V a0 = in_register(load_aligned(x)), b0 = in_register(load_aligned(x + P));
        if constexpr (Two) {
          const V a1 = in_register(load_aligned(x + L)), b1 = in_register(load_aligned(x + P + L));
          store_aligned(y, add(mul_rounded(a0, c0), mul_rounded(b0, n0)));  // a c - b s
          store_aligned(y + L, add(mul_rounded(a1, c1), mul_rounded(b1, n1)));
          store_aligned(y + P, add(mul_rounded(b0, c0), mul_rounded(a0, s0)));  // b c + a s
          store_aligned(y + P + L, add(mul_rounded(b1, c1), mul_rounded(a1, s1)));
        } else {
          store_aligned(y, add(mul_rounded(a0, c0), mul_rounded(b0, n0)));
          store_aligned(y + P, add(mul_rounded(b0, c0), mul_rounded(a0, s0)));
        }
      }
    };
    int m = 1;
    for (; m + 1 < H; m += 2) block(m, std::true_type{});
    if (m < H) block(m, std::false_type{});
    // The straddlers S_k at u + k P (k = 0..2n), in memory order: S_2i = vector 0 of row i (lanes
    // below shift: row i-1's second half, partner behind; the rest: partner ahead), S_2i+1 = vector
    // H (lanes below shift: first half, partner ahead; the rest: partner behind).
    const V cw = realign(load(cos + (H - 1) * L), load(cos), to_mem);
    const V s_last = sines(H - 1), s_first = sines(0);
    const V sw_even = realign(s_last, flip(s_first, neg), to_mem), sw_odd = realign(flip(s_last, neg), s_first, to_mem);
    V behind{}, x0 = load_lanes_from(u, shift);  // S_2i-1 and S_2i (originals)
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      const T* r = u + i * rs;
      T* y = w + i * rs;
      const V x1 = in_register(load_aligned(r + P));
      const V x2 = i + 1 < n ? in_register(load_aligned(r + rs)) : load_lanes_below(r + rs, shift);
      const V out0 = add(mul_rounded(x0, cw), mul_rounded(blend_from(behind, x1, shift), sw_even));
      if (i == 0)
        store_lanes_from(y, out0, shift);
      else
        store_aligned(y, out0);
      store_aligned(y + P, add(mul_rounded(x1, cw), mul_rounded(blend_from(x2, x0, shift), sw_odd)));
      behind = x1, x0 = x2;
    }
    store_lanes_below(w + n * rs, add(mul_rounded(x0, cw), mul_rounded(behind, sw_even)), shift);
  }
}

/// The rotary slices of n rows of one token (row i at s + i * ss, written to d + i * ds): 2L
/// half_split or L interleaved pairs per step, two vectors each, then rotate_rest. by_block: pair
/// block by pair block, the angles of a block loaded (and shuffled) once for all n rows; else row
/// by row (sequential lines: what streaming stores and the DRAM prefetchers want).
template <pairing Layout, bool Inverse, bool Stream, bool Fused, storage_type T, class C>
POSENC_OPS_INLINE void rotate_heads(int P, const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds, std::ptrdiff_t n,
                                    const C* cos, const C* sin, bool by_block) noexcept {
  using V = vec<T>;
  constexpr int L = lanes<T>, step = Layout == pairing::half_split ? 2 * L : L;
  // A row whose angle vectors fit in half the register file: built once, kept in registers, in
  // either order (decode, and prefill row by row; at DRAM sizes measured the same as per-block).
  if constexpr (!Stream && vector_registers >= 32) {
    if (n > 1) {
      int shift = -1;  // contiguous rows: lanes past a vector boundary (see rotate_heads_regs)
      if constexpr (has_realign && std::is_same_v<T, C>) {
        if (ds == 2 * P) shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(d) % vector_bytes / sizeof(T));
      }
      switch (P) {
        case 4 * step:
          return rotate_heads_regs<4, Layout, Inverse, Fused>(s, d, ss, ds, n, cos, sin, shift);
        case 3 * step:
          return rotate_heads_regs<3, Layout, Inverse, Fused>(s, d, ss, ds, n, cos, sin, shift);
        case 2 * step:
          return rotate_heads_regs<2, Layout, Inverse, Fused>(s, d, ss, ds, n, cos, sin, shift);
        default:
          break;
      }
    }
  }
  if constexpr (!Stream && has_realign && std::is_same_v<T, C> && (Layout == pairing::interleaved || !Fused)) {
    // Contiguous rows laid out alike, off a vector boundary, that the register path did not take;
    // cache-resident only (its block order over the rows defeats the DRAM prefetchers: prefill on an
    // offset buffer ran at a third of the row-order path).
    const auto shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(d) % vector_bytes / sizeof(T));
    if (by_block && shift > 0 && ds == 2 * P && ss == ds && P % L == 0 &&
        reinterpret_cast<std::uintptr_t>(s) % vector_bytes == reinterpret_cast<std::uintptr_t>(d) % vector_bytes &&
        (Layout == pairing::half_split || shift % 2 == 0))
      return rotate_heads_aligned<Layout, Inverse, Fused>(P, s, d, n, cos, sin, shift);
  }
  const std::ptrdiff_t rows = by_block ? n : 1;  // rows per pair block
  int k = 0;
  for (std::ptrdiff_t r = 0; r < n; r += rows) {
    for (k = 0; k + step <= P; k += step) {
      V c0, c1, s0, s1;
      if constexpr (Layout == pairing::half_split) {
        pair_angles(s, cos + k, c0, c1), pair_angles(s, sin + k, s0, s1);
        if constexpr (Inverse) s0 = flip(s0, sign_mask(V{}, true)), s1 = flip(s1, sign_mask(V{}, true));
      } else {
        // Even lanes take -sin (forward) or +sin (inverse): one sign flip covers direction and pairing.
        const V odd = Inverse ? flip(even_sign(V{}), sign_mask(V{}, true)) : even_sign(V{});
        dup_angles(s, cos + k, c0, c1), dup_angles(s, sin + k, s0, s1);
        s0 = flip(s0, odd), s1 = flip(s1, odd);
      }
      for (std::ptrdiff_t i = r; i < r + rows; ++i) {
        const T* x = s + i * ss;
        T* y = d + i * ds;
        V x0, x1;
        if constexpr (Layout == pairing::half_split) {
          V b0, b1;
          load2(x + k, x0, x1), load2(x + k + P, b0, b1);
          store2<Stream>(y + k, rot_diff<Fused>(x0, c0, b0, s0), rot_diff<Fused>(x1, c1, b1, s1));
          store2<Stream>(y + k + P, rot_sum<Fused>(x0, s0, b0, c0), rot_sum<Fused>(x1, s1, b1, c1));
        } else {
          load2(x + 2 * k, x0, x1);
          store2<Stream>(y + 2 * k, rot_sum<Fused>(x0, c0, swap_pairs(x0), s0),
                         rot_sum<Fused>(x1, c1, swap_pairs(x1), s1));
        }
      }
    }
  }
  if (k < P) {
    for (std::ptrdiff_t i = 0; i < n; ++i)
      rotate_rest<Layout, Inverse, Stream, Fused>(P, k, P, s + i * ss, d + i * ds, cos, sin);
  }
}

/// Rows [row_begin, row_end) with every per-call decision (layout, direction, streaming, pass-through
/// copy) taken once: per token only pointer arithmetic and rotate_heads remain.
template <pairing Layout, bool Inverse, bool Stream, bool Fused, storage_type T, class C>
__attribute__((noinline)) void rotate_tokens(const rope_geometry& g, const head_rows<const T>& src,
                                             const head_rows<T>& dst, const angle_rows<C>& angles,
                                             std::ptrdiff_t row_begin, std::ptrdiff_t row_end) noexcept {
  const int P = g.pairs(), o = g.offset, end = o + g.rotary_dim;
  const bool copy = src.data != dst.data && (o > 0 || end < g.head_dim);
  // Block order where it pays: cache-resident ranges, and 16-bit storage (bound by arithmetic).
  const auto bytes = static_cast<std::size_t>(row_end - row_begin) * static_cast<std::size_t>(g.head_dim) * sizeof(T);
  const bool by_block = !Stream && (sizeof(T) == 2 || bytes <= (std::size_t{256} << 10));
  std::ptrdiff_t t = 0, h = 0;  // (a division costs ~15 cycles: skipped for whole tensors)
  if (row_begin > 0) t = row_begin / src.heads, h = row_begin % src.heads;
  // No software prefetch of the next token's rows and angle row: on Zen 4 it measured slower than
  // the hardware prefetchers for prefill and long table-mode shapes (A/B builds, same run).
  for (std::ptrdiff_t r = row_begin; r < row_end; ++t, h = 0) {
    // (not std::min: GCC does not inline it into the target region, whose tuning is its own)
    const std::ptrdiff_t a = angles.index(t), n = src.heads - h < row_end - r ? src.heads - h : row_end - r;
    rotate_heads<Layout, Inverse, Stream, Fused>(P, src.row(t, h) + o, dst.row(t, h) + o, src.head_stride,
                                                 dst.head_stride, n, angles.cos + a, angles.sin + a, by_block);
    for (std::ptrdiff_t i = h; copy && i < h + n; ++i) {
      std::memcpy(dst.row(t, i), src.row(t, i), static_cast<std::size_t>(o) * sizeof(T));
      std::memcpy(dst.row(t, i) + end, src.row(t, i) + end, static_cast<std::size_t>(g.head_dim - end) * sizeof(T));
    }
    r += n;
  }
}

/// One token's rows, nothing to copy (decode in place): one rotate_heads call in a small frame, so a
/// decode step's second call (k after q) starts its stores while the first call's still drain.
template <pairing Layout, bool Inverse, bool Fused, storage_type T, class C>
__attribute__((noinline)) void rotate_token_heads(int P, const T* s, T* d, std::ptrdiff_t ss, std::ptrdiff_t ds,
                                                  std::ptrdiff_t n, const C* cos, const C* sin) noexcept {
  const bool by_block = sizeof(T) == 2 || static_cast<std::size_t>(n) * 2 * sizeof(T) * P <= (std::size_t{256} << 10);
  rotate_heads<Layout, Inverse, false, Fused>(P, s, d, ss, ds, n, cos, sin, by_block);
}

template <pairing Layout, bool Inverse, bool Stream, bool Fused, storage_type T, class C>
POSENC_OPS_INLINE void rotate_range(const rope_geometry& g, const head_rows<const T>& src, const head_rows<T>& dst,
                                    const angle_rows<C>& angles, std::ptrdiff_t row_begin,
                                    std::ptrdiff_t row_end) noexcept {
  if constexpr (!Stream) {
    if (row_begin == 0 && row_end == src.heads && (src.data == dst.data || g.rotary_dim == g.head_dim)) {
      const std::ptrdiff_t a = angles.index(0);
      return rotate_token_heads<Layout, Inverse, Fused>(g.pairs(), src.data + g.offset, dst.data + g.offset,
                                                        src.head_stride, dst.head_stride, row_end, angles.cos + a,
                                                        angles.sin + a);
    }
  }
  rotate_tokens<Layout, Inverse, Stream, Fused>(g, src, dst, angles, row_begin, row_end);
}

/// See kernels::rotate_token: n rows of one token in place (rotary slice of row i at x + i * stride),
/// every argument in a register (no view built in memory on the decode path).
template <storage_type T, class C>
inline void rotate_token_rows(pairing layout, rotation dir, int P, T* x, std::ptrdiff_t n, std::ptrdiff_t stride,
                              const C* cos, const C* sin) noexcept {
  const auto run = [&]<pairing Layout>(std::integral_constant<pairing, Layout>) POSENC_OPS_LAMBDA_INLINE {
    const bool fused = active_arithmetic() == arithmetic::fused;
    if (dir == rotation::inverse) {
      if (fused) return rotate_token_heads<Layout, true, true>(P, x, x, stride, stride, n, cos, sin);
      return rotate_token_heads<Layout, true, false>(P, x, x, stride, stride, n, cos, sin);
    }
    if (fused) return rotate_token_heads<Layout, false, true>(P, x, x, stride, stride, n, cos, sin);
    rotate_token_heads<Layout, false, false>(P, x, x, stride, stride, n, cos, sin);
  };
  if (layout == pairing::half_split)
    run(std::integral_constant<pairing, pairing::half_split>{});
  else
    run(std::integral_constant<pairing, pairing::interleaved>{});
}

/// Streaming stores need every rotary slice vector_bytes-aligned (and, half_split, its second half).
template <class T>
[[nodiscard]] inline bool stream_aligned(const rope_geometry& g, head_rows<T> dst) noexcept {
  if constexpr (!has_stream) {
    return false;
  } else {
    constexpr auto B = static_cast<std::ptrdiff_t>(vector_bytes), E = static_cast<std::ptrdiff_t>(sizeof(T));
    return reinterpret_cast<std::uintptr_t>(dst.data + g.offset) % vector_bytes == 0 && dst.token_stride * E % B == 0 &&
           dst.head_stride * E % B == 0 && (g.layout == pairing::interleaved || g.pairs() * E % B == 0);
  }
}

template <pairing Layout, bool Stream, bool Fused, storage_type T, class C>
inline void rotate_range_dir(const rope_geometry& g, const head_rows<const T>& src, const head_rows<T>& dst,
                             const angle_rows<C>& angles, rotation dir, std::ptrdiff_t row_begin,
                             std::ptrdiff_t row_end) noexcept {
  if (dir == rotation::inverse)
    rotate_range<Layout, true, Stream, Fused>(g, src, dst, angles, row_begin, row_end);
  else
    rotate_range<Layout, false, Stream, Fused>(g, src, dst, angles, row_begin, row_end);
}

template <pairing Layout, bool Stream, storage_type T, class C>
inline void rotate_range_mode(const rope_geometry& g, const head_rows<const T>& src, const head_rows<T>& dst,
                              const angle_rows<C>& angles, rotation dir, std::ptrdiff_t row_begin,
                              std::ptrdiff_t row_end) noexcept {
  if (active_arithmetic() == arithmetic::fused)
    rotate_range_dir<Layout, Stream, true>(g, src, dst, angles, dir, row_begin, row_end);
  else
    rotate_range_dir<Layout, Stream, false>(g, src, dst, angles, dir, row_begin, row_end);
}

/// See scalar::rotate_rows. `stream`: non-temporal stores when every output row is aligned for them.
template <storage_type T, class C>
inline void rotate_rows(const rope_geometry& g, const head_rows<const T>& src, const head_rows<T>& dst,
                        const angle_rows<C>& angles, rotation dir, std::ptrdiff_t row_begin, std::ptrdiff_t row_end,
                        bool stream = false) noexcept {
  if (src.heads <= 0 || row_begin >= row_end) return;
  stream = stream && stream_aligned(g, dst);
  if (g.layout == pairing::half_split) {
    if (stream)
      rotate_range_mode<pairing::half_split, has_stream>(g, src, dst, angles, dir, row_begin, row_end);
    else
      rotate_range_mode<pairing::half_split, false>(g, src, dst, angles, dir, row_begin, row_end);
  } else {
    if (stream)
      rotate_range_mode<pairing::interleaved, has_stream>(g, src, dst, angles, dir, row_begin, row_end);
    else
      rotate_range_mode<pairing::interleaved, false>(g, src, dst, angles, dir, row_begin, row_end);
  }
  if (stream) fence();
}

/// See scalar::rotate_row. `stream`: non-temporal stores where the output is aligned for them.
template <storage_type T, class C>
inline void rotate_row(const rope_geometry& g, const T* src, T* dst, const C* cos, const C* sin, rotation dir,
                       bool stream = false) noexcept {
  self::rotate_rows(g, head_rows<const T>{src, 1, 1, 0, 0}, head_rows<T>{dst, 1, 1, 0, 0}, angle_rows<C>{cos, sin, 0},
                    dir, 0, 1, stream);
}

/// See scalar::rotate.
template <storage_type T, class C>
inline void rotate(const rope_geometry& g, head_rows<const T> src, head_rows<T> dst, angle_rows<C> angles,
                   rotation dir) noexcept {
  self::rotate_rows(g, src, dst, angles, dir, 0, src.tokens * src.heads);
}
