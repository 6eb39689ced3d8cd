// posenc/attention/fast/ops/shared_ops.inl — the attention operations that are the shared per-ISA
// operations layer (kernels/ops/<isa>.hpp) under attention's names. NO include guard: included by
// fast/ops/{avx2,avx512,neon}.hpp inside their target region and ISA namespace, after
// `namespace ops = ::posenc::kernels::<isa>; using vf = ops::vec<float>;`.
// clang-format off
static inline vf zero() { return ops::set(0.0f); }
static inline vf set1(float f) { return ops::set(f); }
static inline vf load(const float* p) { return ops::load(p); }
static inline void store(float* p, vf v) { ops::store(p, v); }
static inline vf fmadd(vf a, vf b, vf c) { return ops::fma(a, b, c); }
static inline vf mul(vf a, vf b) { return ops::mul(a, b); }
static inline vf add(vf a, vf b) { return ops::add(a, b); }
static inline vf sub(vf a, vf b) { return ops::sub(a, b); }
static inline vf max(vf a, vf b) { return ops::max(a, b); }
static inline vf load_f(const bfloat16* p) { return ops::load(p); }
static inline vf load_f(const float16* p) { return ops::load(p); }
// clang-format on
