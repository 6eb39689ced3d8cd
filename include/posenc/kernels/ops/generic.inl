// posenc/kernels/ops/generic.inl — generic operations, included (no include guard) at the end of
// each ISA's operations, inside its namespace and target region. Each block is skipped when the
// ISA defined the native operation (POSENC_OPS_NATIVE_*), which it then #undefs here.
//
// Lookup note: the drivers call these unqualified from templates; their arguments (vector types,
// pointers) bring no associated namespace, so everything must be declared before a driver is
// included, which this file at the end of each ops header guarantees.

// ---- bfloat16 <-> fp32 through memory, lane by lane (exact by construction: bfloat16's own code)
#if defined(POSENC_OPS_NATIVE_BF16)
inline constexpr bool native_bf16 = true;
#else
inline constexpr bool native_bf16 = false;
POSENC_OPS_INLINE vec<float> load(const bfloat16* p) {
  alignas(64) float f[lanes<float>];
  for (int i = 0; i < lanes<float>; ++i) f[i] = static_cast<float>(p[i]);
  return load(static_cast<const float*>(f));
}
POSENC_OPS_INLINE void store(bfloat16* p, vec<float> v) {
  alignas(64) float f[lanes<float>];
  store(static_cast<float*>(f), v);
  for (int i = 0; i < lanes<float>; ++i) p[i] = bfloat16(f[i]);
}
POSENC_OPS_INLINE void stream(bfloat16* p, vec<float> v) {
  store(p, v);
}
#endif
#undef POSENC_OPS_NATIVE_BF16

// ---- realigned stores (ops/avx512.hpp): only where a split-line store costs enough to pay for
// the shuffle; elsewhere the driver stores rows unaligned.
#if !defined(POSENC_OPS_NATIVE_REALIGN)
inline constexpr bool has_realign = false;
#endif
#undef POSENC_OPS_NATIVE_REALIGN

// ---- first n lanes through a zeroed buffer
template <class T>
POSENC_OPS_INLINE auto load_n(const T* p, int n) {
  alignas(64) T buf[lanes<float>]{};  // lanes<float> >= lanes of any storage type
  std::memcpy(static_cast<void*>(buf), p, static_cast<std::size_t>(n) * sizeof(T));
  return load(static_cast<const T*>(buf));
}
template <class T, class V>
POSENC_OPS_INLINE void store_n(T* p, V v, int n) {
  alignas(64) T buf[lanes<float>];
  store(static_cast<T*>(buf), v);
  std::memcpy(static_cast<void*>(p), buf, static_cast<std::size_t>(n) * sizeof(T));
}

// ---- streaming: plain stores where the ISA has none
#if !defined(POSENC_OPS_NATIVE_STREAM)
template <class T, class V>
POSENC_OPS_INLINE void stream(T* p, V v) {
  store(p, v);
}
POSENC_OPS_INLINE void fence() {}
#endif
#undef POSENC_OPS_NATIVE_STREAM

template <bool Stream, class T, class V>
POSENC_OPS_INLINE void put(T* p, V v) {
  if constexpr (Stream)
    stream(p, v);
  else
    store(p, v);
}

POSENC_OPS_INLINE void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 3);
#else
  static_cast<void>(p);
#endif
}

// ---- the rotation driver's block of two vectors and its angles, in natural lane order. An ISA may
// overload these for a storage type (AVX2 bfloat16 reorders lanes to save shuffles) as long as
// load2, store2, pair_angles and dup_angles agree on the order.
template <class T>
POSENC_OPS_INLINE void load2(const T* p, decltype(load(p))& v0, decltype(load(p))& v1) {
  v0 = load(p), v1 = load(p + lanes<std::remove_const_t<T>>);
}
template <bool Stream, class T, class V>
POSENC_OPS_INLINE void store2(T* p, V v0, V v1) {
  put<Stream>(p, v0), put<Stream>(p + lanes<T>, v1);
}
template <class T, class C>
POSENC_OPS_INLINE void pair_angles(const T*, const C* c, vec<C>& c0, vec<C>& c1) {
  c0 = load(c), c1 = load(c + lanes<C>);
}
template <class T, class C>
POSENC_OPS_INLINE void dup_angles(const T*, const C* c, vec<C>& c0, vec<C>& c1) {
  const vec<C> x = load(c);
  c0 = dup_lo(x), c1 = dup_hi(x);
}
