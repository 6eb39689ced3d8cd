// posenc/kernels/drivers/angles.inl — the cos/sin row builders, written once over an ISA's
// operations (no include guard; see drivers/rotate.inl for how it is included).
//
// Same functions, order and contract as kernels/scalar/angles.hpp. p * w is reduced modulo 2*pi as
// kernels/angle_math.hpp does it (exact two-product, three-part 2*pi; lanes beyond 2^29 turns take
// the scalar exact::reduced_angle), then modulo pi/2; compute_angles evaluates sin/cos in double
// (rounded once to C), row_angles<float> in float after the double reduction (within 2e-7 of exact).

namespace ang {
namespace k = ::posenc::kernels::angle_constants;
using D = vec<double>;
using F = vec<float>;
inline constexpr int LD = lanes<double>;

/// p * w reduced into [-pi, pi] (p = a + b exactly).
POSENC_OPS_INLINE D reduce(std::int64_t p, double a, double b, D w) {
  const D A = set(a), hi = mul(A, w);
  const D lo = add(fms(A, w, hi), mul(set(b), w));
  const D q = nearest(mul(hi, set(k::inv_two_pi)));
  const D r = add(fnma(q, set(k::two_pi_c3), fnma(q, set(k::two_pi_c2), fnma(q, set(k::two_pi_c1), hi))), lo);
  if (const unsigned far = far_lanes(q, k::reduce_limit); far != 0) {
    alignas(64) double rr[LD], ww[LD];
    store(rr, r), store(ww, w);
    for (int i = 0; i < LD; ++i) {
      if (far & (1u << i)) rr[i] = exact::reduced_angle(p, ww[i]);
    }
    return load(static_cast<const double*>(rr));
  }
  return r;
}

/// r = q * pi/2 + y with |y| <= pi/4 (+tiny), q integral.
POSENC_OPS_INLINE D quadrant(D r, D& q) {
  q = nearest(mul(r, set(k::two_over_pi)));
  return fnma(q, set(k::pio2_lo), fnma(q, set(k::pio2_hi), r));
}

/// sin and cos of r in double (a few 1e-17 from exact for |r| <= pi).
POSENC_OPS_INLINE void sincos(D r, D& s, D& c) {
  D q;
  const D y = quadrant(r, q), z = mul(y, y);
  D ps = set(k::sin_d[5]), pc = set(k::cos_d[5]);
  for (int i = 4; i >= 0; --i) ps = fma(ps, z, set(k::sin_d[i])), pc = fma(pc, z, set(k::cos_d[i]));
  const D sp = fma(mul(y, z), ps, y);
  const D hz = mul(set(0.5), z), w = sub(set(1.0), hz);
  const D cp = add(w, fma(mul(z, z), pc, sub(sub(set(1.0), w), hz)));
  by_quadrant(q, sp, cp, s, c);
}

/// sin and cos of q * pi/2 + y in float (|y| <= pi/4; about one float ulp).
POSENC_OPS_INLINE void sincos(F y, ivec q, F& s, F& c) {
  const F z = mul(y, y);
  F ps = set(k::sin_f[2]), pc = set(k::cos_f[2]);
  for (int i = 1; i >= 0; --i) ps = fma(ps, z, set(k::sin_f[i])), pc = fma(pc, z, set(k::cos_f[i]));
  const F sp = fma(mul(y, z), ps, y);
  const F cp = fma(mul(z, z), pc, fnma(set(0.5f), z, set(1.0f)));
  by_quadrant(q, sp, cp, s, c);
}

/// 2 * LD values of M * (cos, sin)(p * w) in float after a double reduction.
POSENC_OPS_INLINE void row_block(std::int64_t p, double a, double b, const double* w, F M, float* co, float* si) {
  D q0, q1;
  const D y0 = quadrant(reduce(p, a, b, load(w)), q0), y1 = quadrant(reduce(p, a, b, load(w + LD)), q1);
  F s, c;
  sincos(narrow(y0, y1), quadrants(q0, q1), s, c);
  store(co, mul(M, c)), store(si, mul(M, s));
}

template <class C>
POSENC_OPS_INLINE void put(C* p, D v) {
  if constexpr (std::is_same_v<C, double>)
    store(p, v);
  else
    store_narrow(p, v);
}
}  // namespace ang

/// See scalar::compute_angles.
template <class C>
inline void compute_angles(const double* inv_freq, int pairs, const std::int64_t* positions, std::ptrdiff_t count,
                           double magnitude, C* cos, C* sin, std::ptrdiff_t stride) noexcept {
  constexpr int L = ang::LD;
  const ang::D M = set(magnitude);
  for (std::ptrdiff_t t = 0; t < count; ++t) {
    double a, b;
    exact::split_position(positions[t], a, b);
    C* co = cos + t * stride;
    C* si = sin + t * stride;
    ang::D s, c;
    int k = 0;
    for (; k + L <= pairs; k += L) {
      ang::sincos(ang::reduce(positions[t], a, b, load(inv_freq + k)), s, c);
      ang::put(co + k, mul(M, c)), ang::put(si + k, mul(M, s));
    }
    if (const int n = pairs - k; n > 0) {
      alignas(64) double w[L] = {}, cc[L], ss[L];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::sincos(ang::reduce(positions[t], a, b, load(static_cast<const double*>(w))), s, c);
      store(cc, mul(M, c)), store(ss, mul(M, s));
      for (int i = 0; i < n; ++i) co[k + i] = static_cast<C>(cc[i]), si[k + i] = static_cast<C>(ss[i]);
    }
  }
}

/// See scalar::row_angles. float: double reduction, float sin/cos (within 2e-7 * M of exact).
template <class C>
inline void row_angles(const double* inv_freq, int pairs, std::int64_t position, double magnitude, C* cos,
                       C* sin) noexcept {
  if constexpr (std::is_same_v<C, double>) {
    self::compute_angles(inv_freq, pairs, &position, 1, magnitude, cos, sin, 0);
  } else {
    constexpr int L = 2 * ang::LD;
    double a, b;
    exact::split_position(position, a, b);
    const ang::F M = set(static_cast<float>(magnitude));
    int k = 0;
    for (; k + L <= pairs; k += L) ang::row_block(position, a, b, inv_freq + k, M, cos + k, sin + k);
    if (const int n = pairs - k; n > 0) {
      alignas(64) double w[L] = {};
      alignas(64) float cc[L], ss[L];
      std::memcpy(w, inv_freq + k, static_cast<std::size_t>(n) * sizeof(double));
      ang::row_block(position, a, b, w, M, cc, ss);
      std::memcpy(cos + k, cc, static_cast<std::size_t>(n) * sizeof(float));
      std::memcpy(sin + k, ss, static_cast<std::size_t>(n) * sizeof(float));
    }
  }
}
