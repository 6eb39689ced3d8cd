// posenc/kernels/drivers/q8_0.inl — the q8_0 row dequantisation over a target's operations. NO
// include guard: kernels/q8_0.hpp includes it inside each target's region and namespace, after the
// target's operations (kernels/ops/<target>.hpp).

// n % 32 == 0 values: each block's quants widened to float times its scale, lanes<float> at a time
// (exact in fp32: a 7-bit by 11-bit product).
static inline void dequantize_row_q8_0(const block_q8_0* x, float* y, std::ptrdiff_t n) {
  constexpr int W = lanes<float>;
  for (std::ptrdiff_t b = 0; b < n / q8_0::block; ++b) {
    const vec<float> d = set(x[b].scale());
    for (int i = 0; i < q8_0::block; i += W) store(y + b * q8_0::block + i, mul(load(x[b].qs + i), d));
  }
}
