// tests/kernels/ops_test.cpp — the per-ISA operations layer (kernels/ops/*.hpp) on its own, as a
// driver other than the rotation sees it (the attention tiles): arithmetic against scalar
// arithmetic, horizontal sum/max, widening 16-bit loads, tails that never touch memory past n, and
// the aligned-vector operations of the ISAs that have them.
// One checker, written once, is instantiated per ISA inside its target region as the drivers are.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/ops/avx2.hpp>
#include <posenc/kernels/ops/avx512.hpp>
#include <posenc/kernels/ops/neon.hpp>

#include "support/skip.hpp"

namespace {
namespace k = posenc::kernels;
using posenc::bfloat16;
using posenc::float16;

// What a checker reports: the number of mismatches (0 = pass).
struct ops_report {
  int arithmetic = 0, reductions = 0, widening = 0, tails = 0, realigned = 0;
};
}  // namespace

// The checker body, included inside each ISA namespace + target region below.
#define POSENC_OPS_TEST_BODY                                                                                           \
  /* The aligned-vector operations (has_realign ISAs): realign, lane-range loads and stores, blend_from, */            \
  /* for every k, against their lane definitions; lanes a store leaves out keep their bytes. */                        \
  template <class T>                                                                                                   \
  int check_realign(T) {                                                                                               \
    int bad = 0;                                                                                                       \
    if constexpr (has_realign) {                                                                                       \
      constexpr int N = lanes<T>;                                                                                      \
      alignas(64) T lo[N], hi[N], out[N];                                                                              \
      for (int i = 0; i < N; ++i) lo[i] = T(i + 1), hi[i] = T(-i - 1);                                                 \
      const auto vl = load_aligned(static_cast<const T*>(lo)), vh = load_aligned(static_cast<const T*>(hi));           \
      for (int k = 0; k < N; ++k) {                                                                                    \
        store_aligned(out, realign(vl, vh, realign_index(vl, k)));                                                     \
        for (int i = 0; i < N; ++i) bad += out[i] != (i < k ? lo[N - k + i] : hi[i - k]);                              \
        store_aligned(out, blend_from(vl, vh, k));                                                                     \
        for (int i = 0; i < N; ++i) bad += out[i] != (i < k ? lo[i] : hi[i]);                                          \
        store_aligned(out, load_lanes_from(static_cast<const T*>(lo), k));                                             \
        for (int i = 0; i < N; ++i) bad += out[i] != (i < k ? T(0) : lo[i]);                                           \
        store_aligned(out, load_lanes_below(static_cast<const T*>(lo), k));                                            \
        for (int i = 0; i < N; ++i) bad += out[i] != (i < k ? lo[i] : T(0));                                           \
        for (int i = 0; i < N; ++i) out[i] = T(99);                                                                    \
        store_lanes_from(out, vh, k);                                                                                  \
        for (int i = 0; i < N; ++i) bad += out[i] != (i < k ? T(99) : hi[i]);                                          \
        for (int i = 0; i < N; ++i) out[i] = T(99);                                                                    \
        store_lanes_below(out, vh, k);                                                                                 \
        for (int i = 0; i < N; ++i) bad += out[i] != (i < k ? hi[i] : T(99));                                          \
      }                                                                                                                \
    }                                                                                                                  \
    return bad;                                                                                                        \
  }                                                                                                                    \
  inline ops_report check_ops() {                                                                                      \
    ops_report r;                                                                                                      \
    constexpr int L = lanes<float>;                                                                                    \
    alignas(64) float a[L], b[L], c[L], out[L];                                                                        \
    for (int i = 0; i < L; ++i) a[i] = 0.5f * float(i) - 3.f, b[i] = 1.25f - 0.75f * float(i), c[i] = 0.1f * float(i); \
    const auto va = load(static_cast<const float*>(a)), vb = load(static_cast<const float*>(b));                       \
    const auto vc = load(static_cast<const float*>(c));                                                                \
    store(out, fma(va, vb, vc));                                                                                       \
    for (int i = 0; i < L; ++i) r.arithmetic += out[i] != std::fma(a[i], b[i], c[i]);                                  \
    store(out, max(va, vb));                                                                                           \
    for (int i = 0; i < L; ++i) r.arithmetic += out[i] != std::max(a[i], b[i]);                                        \
    store(out, add(mul(va, set(2.f)), sub(vb, vc)));                                                                   \
    for (int i = 0; i < L; ++i) r.arithmetic += out[i] != (a[i] * 2.f + (b[i] - c[i]));                                \
    store(out, mul_rounded(va, vb));                                                                                   \
    for (int i = 0; i < L; ++i) r.arithmetic += out[i] != a[i] * b[i];                                                 \
    float sum = 0.f, mx = a[0];                                                                                        \
    for (int i = 0; i < L; ++i) sum += a[i], mx = std::max(mx, a[i]);                                                  \
    r.reductions += std::fabs(hsum(va) - sum) > 1e-5f;                                                                 \
    r.reductions += hmax(va) != mx;                                                                                    \
    bfloat16 hb[L];                                                                                                    \
    float16 hf[L];                                                                                                     \
    for (int i = 0; i < L; ++i) hb[i] = bfloat16(a[i]), hf[i] = float16(b[i]);                                         \
    store(out, load(static_cast<const bfloat16*>(hb)));                                                                \
    for (int i = 0; i < L; ++i) r.widening += out[i] != static_cast<float>(hb[i]);                                     \
    store(out, load(static_cast<const float16*>(hf)));                                                                 \
    for (int i = 0; i < L; ++i) r.widening += out[i] != static_cast<float>(hf[i]);                                     \
    for (int n = 0; n <= L; ++n) {                                                                                     \
      float guard[L + 1];                                                                                              \
      for (float& g : guard) g = -7.f;                                                                                 \
      store_n(guard, load_n(static_cast<const float*>(a), n), n);                                                      \
      for (int i = 0; i <= L; ++i) r.tails += guard[i] != (i < n ? a[i] : -7.f);                                       \
      double dg[L + 1], da[L];                                                                                         \
      for (int i = 0; i < L; ++i) da[i] = a[i];                                                                        \
      for (double& g : dg) g = -7.0;                                                                                   \
      const int nd = n < lanes<double> ? n : lanes<double>;                                                            \
      store_n(dg, load_n(static_cast<const double*>(da), nd), nd);                                                     \
      for (int i = 0; i <= L; ++i) r.tails += dg[i] != (i < nd ? da[i] : -7.0);                                        \
      bfloat16 bg[L + 1];                                                                                              \
      for (bfloat16 & g : bg) g = bfloat16(-7.f);                                                                      \
      store_n(bg, load_n(static_cast<const bfloat16*>(hb), n), n);                                                     \
      for (int i = 0; i <= L; ++i) r.tails += bg[i].bits != (i < n ? hb[i] : bfloat16(-7.f)).bits;                     \
    }                                                                                                                  \
    r.realigned += check_realign(float{}) + check_realign(double{});                                                   \
    return r;                                                                                                          \
  }

// A region opens and closes around each ISA: the includes must not be regrouped.
// clang-format off
#if POSENC_HAS_X86_KERNELS
#include <posenc/kernels/ops/begin_avx2.inl>
namespace posenc::inline v0::kernels::inline POSENC_KERNELS_ABI::avx2 {
POSENC_OPS_TEST_BODY
}
#include <posenc/kernels/ops/end_target.inl>

#include <posenc/kernels/ops/begin_avx512.inl>
namespace posenc::inline v0::kernels::inline POSENC_KERNELS_ABI::avx512 {
POSENC_OPS_TEST_BODY
}
#include <posenc/kernels/ops/end_target.inl>
#endif
#if POSENC_HAS_NEON_KERNELS
#include <posenc/kernels/ops/begin_neon.inl>
namespace posenc::inline v0::kernels::inline POSENC_KERNELS_ABI::neon {
POSENC_OPS_TEST_BODY
}
#include <posenc/kernels/ops/end_target.inl>
#endif
// clang-format on

TEST_CASE("every ISA's operations agree with scalar arithmetic and keep their tails", "[kernels][ops]") {
  int ran = 0;
  const auto check = [&](k::isa i, ops_report (*fn)()) {
    if (!k::isa_supported(i)) {
      UNSCOPED_INFO("ISA " << k::isa_name(i) << " not supported on this machine: skipped (see kernels.isa coverage)");
      return;
    }
    INFO("isa " << k::isa_name(i));
    const ops_report r = fn();
    CHECK(r.arithmetic == 0);
    CHECK(r.reductions == 0);
    CHECK(r.widening == 0);
    CHECK(r.tails == 0);
    CHECK(r.realigned == 0);
    ++ran;
  };
#if POSENC_HAS_X86_KERNELS
  check(k::isa::avx2, &k::avx2::check_ops);
  check(k::isa::avx512, &k::avx512::check_ops);
#endif
#if POSENC_HAS_NEON_KERNELS
  check(k::isa::neon, &k::neon::check_ops);
#endif
  static_cast<void>(check);
  if (ran == 0) POSENC_SKIP("no SIMD ISA on this machine");
}
