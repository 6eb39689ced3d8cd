// tests/attention/fast_bf16_subnormal_test.cpp — subnormal bfloat16 values on the decode path. The
// AVX512_BF16 kernels (fast/x86/avx512_bf16-inl.hpp) flush subnormal inputs and results to 0, so their
// bound carries an absolute term: |out - sdpa| <= 2^-8 (1 + A) max |v| + (Sk + 2) 2^-126; the fp32
// kernels (every CPU) keep 5e-7 (1 + A) max |v| + (Sk + 2) 2^-149 (attention/attention.hpp). The
// AVX512_BF16 case is skipped, with a message, on CPUs without the instruction.
#include <cmath>
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/kernels/isa.hpp>

#include "fast_support.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

// Decode inputs with every V element a subnormal bfloat16 (|v| < 2^-126), keys normal.
fast_inputs<posenc::bfloat16> subnormal_values(const fast_shape& s, std::uint64_t seed) {
  fast_inputs<posenc::bfloat16> in(s, seed);
  for (std::size_t i = 0; i < in.v.size(); ++i) {
    const auto bits = static_cast<std::uint16_t>(1 + (i * 37) % 0x7f) | (i % 3 == 0 ? 0x8000u : 0u);
    in.v[i] = posenc::bfloat16::from_bits(static_cast<std::uint16_t>(bits));
    in.vd[i] = static_cast<double>(static_cast<float>(in.v[i]));
  }
  return in;
}

// max |out - sdpa| and the bound terms of the call.
struct measured {
  double err, A, vmax;
};

measured measure(const fast_inputs<posenc::bfloat16>& in, const posenc::fast_attention_options& f) {
  const fast_masks m;
  const auto o = m.options();
  const auto got = run_fast(in, posenc::no_position{}, o, f);
  const auto ref = run_oracle(in, posenc::no_position{}, o);
  const posenc::attention_mask mask(o, in.s.B, in.s.Sq, in.s.Sk);
  double err = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) err = std::max(err, std::fabs(static_cast<double>(got[i]) - ref[i]));
  return {err, logit_bound(in, posenc::no_position{}, o, mask), in.vmax()};
}

const fast_shape shapes[] = {{.B = 1, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64},
                             {.B = 1, .Sq = 1, .Sk = 77, .Hq = 4, .Hkv = 1, .D = 32, .Dv = 128}};

}  // namespace

TEST_CASE("fp32 kernels: subnormal bfloat16 values within 5e-7 (1 + A) max |v| + (Sk + 2) 2^-149", "[fast][bf16]") {
  std::uint64_t seed = 700;
  for (const auto& s : shapes) {
    const auto in = subnormal_values(s, ++seed);
    const auto r = measure(in, {.bf16_dot_products = false});
    INFO("Sk " << s.Sk << ": error " << r.err << ", max |v| " << r.vmax);
    REQUIRE(r.vmax > 0);
    REQUIRE(r.vmax < 0x1p-126);
    CHECK(r.err <= fast_bound * (1 + r.A) * r.vmax + static_cast<double>(s.Sk + 2) * 0x1p-149);
  }
}

TEST_CASE("bf16_dot_products: subnormal values flushed, within 2^-8 (1 + A) max |v| + (Sk + 2) 2^-126",
          "[fast][bf16dot]") {
  if (!(posenc::kernels::isa_supported(isa::avx512) &&
        posenc::kernels::attention_kernels_for(isa::avx512).bf16_dot.usable())) {
    WARN("skipped: this CPU has no AVX512_BF16 (the subnormal flush of vdpbf16ps is not exercised)");
    return;
  }
  posenc::kernels::scoped_isa use(isa::avx512);
  REQUIRE(use.active());
  std::uint64_t seed = 800;
  for (const auto& s : shapes) {
    const auto in = subnormal_values(s, ++seed);
    const auto r = measure(in, {});
    INFO("Sk " << s.Sk << ": error " << r.err << ", max |v| " << r.vmax);
    CHECK(r.err <= bf16_dot_bound * (1 + r.A) * r.vmax + static_cast<double>(s.Sk + 2) * 0x1p-126);
  }
}
