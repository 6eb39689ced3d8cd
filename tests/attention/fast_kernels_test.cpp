// tests/attention/fast_kernels_test.cpp — the attention tile microkernels of every ISA this machine
// runs against the scalar ones: the vectorised exp within its documented error, and whole
// attention calls (packed prefill path, in-place decode path, float / bfloat16 / float16 K/V)
// within the documented attention bound.
#include <cmath>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/combined.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>

#include "fast_support.hpp"
#include "support/check.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

std::vector<isa> isas_here() {
  std::vector<isa> r;
  for (isa i : {isa::avx2, isa::avx512, isa::neon})
    if (posenc::kernels::isa_supported(i)) r.push_back(i);
  return r;
}

template <class T>
void compare_to_scalar(isa which, const fast_shape& s, const posenc::attention_options& o) {
  const fast_inputs<T> in(s, 77);
  const auto enc =
      posenc::combine(posenc::rope({.head_dim = static_cast<int>(s.D)}), posenc::alibi({.num_heads = s.Hq}));
  std::vector<float> ref, got;
  {
    posenc::kernels::scoped_isa use(isa::scalar);
    ref = run_fast(in, enc, o);
  }
  {
    posenc::kernels::scoped_isa use(which);
    REQUIRE(use.active());
    got = run_fast(in, enc, o);
  }
  const posenc::attention_mask mask(o, s.B, s.Sq, s.Sk);
  const double A = logit_bound(in, enc, o, mask);
  INFO(posenc::kernels::isa_name(which) << " Sq " << s.Sq << " Sk " << s.Sk << " D " << s.D);
  POSENC_CHECK_CLOSE(got, ref, 2 * fast_bound * (1 + A) * in.vmax(), 0);
}

}  // namespace

TEST_CASE("fast kernels: the vectorised exp is within 4e-7 (relative) on every ISA", "[fast][kernels]") {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-87.0f + 175.0f * static_cast<float>(i) / 200000.0f);
  for (float v : {-std::numeric_limits<float>::infinity(), -1000.0f, -87.5f, 0.0f, -0.0f, 1e-30f}) x.push_back(v);
  std::vector<isa> all{isa::scalar};
  for (isa i : isas_here()) all.push_back(i);
  for (isa which : all) {
    const auto k = posenc::attention_kernels::tile_kernels_for(which);
    std::vector<float> y(x.size());
    k.exp(x.data(), y.data(), static_cast<int>(x.size()));
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i] < -87.33f) {
        CHECK(y[i] == 0.0f);  // masked scores (-inf) and underflow give exactly 0
        continue;
      }
      if (x[i] > 88.0f) continue;
      const double e = std::exp(static_cast<double>(x[i]));
      worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - e) / e);
    }
    INFO(posenc::kernels::isa_name(which) << ": worst relative error " << worst);
    CHECK(worst <= 4e-7);
  }
}

TEST_CASE("fast kernels: every ISA's attention agrees with the scalar kernels", "[fast][kernels]") {
  for (isa which : isas_here()) {
    for (bool causal : {false, true}) {
      const posenc::attention_options o{.causal = causal};
      // packed path (>= 16 rows per work item), D and Dv not multiples of any vector width
      compare_to_scalar<float>(which, {.B = 1, .Sq = 70, .Sk = 133, .Hq = 2, .Hkv = 1, .D = 72, .Dv = 72}, o);
      compare_to_scalar<posenc::bfloat16>(which, {.B = 1, .Sq = 40, .Sk = 99, .Hq = 4, .Hkv = 1, .D = 128, .Dv = 128},
                                          o);
      // in-place path (decode: few rows), tails of D, float16 and bfloat16
      compare_to_scalar<float>(which, {.B = 2, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 100, .Dv = 100}, o);
      compare_to_scalar<posenc::float16>(which, {.B = 1, .Sq = 2, .Sk = 257, .Hq = 4, .Hkv = 4, .D = 64, .Dv = 64}, o);
      compare_to_scalar<posenc::bfloat16>(which, {.B = 1, .Sq = 1, .Sk = 5000, .Hq = 4, .Hkv = 1, .D = 128, .Dv = 128},
                                          o);
    }
  }
}
