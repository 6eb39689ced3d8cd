// tests/attention/fast_bf16_dot_test.cpp — the AVX512_BF16 kernels (fast_attention_options::
// bf16_dot_products, on by default; fast/x86/avx512_bf16-inl.hpp): bfloat16 K/V on the decode path with the
// default options against sdpa within their documented bound 2^-8 (1 + A) max |v|, in effect by default
// (errors above the exact path's 5e-7 bound, since q and p are rounded to bfloat16), the exact path
// still reachable ({.bf16_dot_products = false}: 5e-7 on the same inputs), and bit-identical for any
// thread count. Skipped, with a message, on CPUs without AVX512_BF16.
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/kernels/isa.hpp>

#include "fast_support.hpp"
#include "support/skip.hpp"

using posenc::kernels::isa;
using namespace posenc_test;

namespace {

bool have_bf16_dot() {
  return posenc::kernels::isa_supported(isa::avx512) &&
         posenc::kernels::attention_kernels_for(isa::avx512).bf16_dot.usable();
}

}  // namespace

TEST_CASE("bf16_dot_products (the default): decode with bfloat16 K/V within 2^-8 (1 + A) max |v| of sdpa",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16 (the option falls back to the default kernels)");
  posenc::kernels::scoped_isa use(isa::avx512);
  REQUIRE(use.active());
  const posenc::fast_attention_options dot{};  // the default options take the dot products here
  const posenc::fast_attention_options exact{.bf16_dot_products = false};
  double worst = 0;
  // decode shapes (G x Sq < 16 rows: the in-place path), odd key counts (a key pair with no partner),
  // D = Dv multiples of 32, GQA ratios 1 / 4 / 8, with and without a bias encoder and padding
  const fast_shape shapes[] = {{.B = 1, .Sq = 1, .Sk = 301, .Hq = 8, .Hkv = 2, .D = 128, .Dv = 128},
                               {.B = 2, .Sq = 1, .Sk = 77, .Hq = 8, .Hkv = 1, .D = 64, .Dv = 64},
                               {.B = 1, .Sq = 3, .Sk = 130, .Hq = 2, .Hkv = 2, .D = 32, .Dv = 96},
                               {.B = 1, .Sq = 1, .Sk = 4500, .Hq = 4, .Hkv = 1, .D = 96, .Dv = 32}};
  std::uint64_t seed = 90;
  for (const auto& s : shapes)
    for (bool causal : {false, true}) {
      const fast_inputs<posenc::bfloat16> in(s, ++seed);
      fast_masks m;
      m.causal = causal;
      if (!causal) m.lengths.assign(static_cast<std::size_t>(s.B), s.Sk - 5);
      const double e1 = fast_error(in, posenc::no_position{}, m, dot);
      const double e2 = fast_error(in, posenc::alibi({.num_heads = static_cast<int>(s.Hq)}), m, dot);
      INFO("Sq " << s.Sq << " Sk " << s.Sk << " Hq " << s.Hq << " Hkv " << s.Hkv << " D " << s.D << " causal " << causal
                 << ": " << e1 << ", " << e2);
      CHECK(e1 <= bf16_dot_bound);
      CHECK(e2 <= bf16_dot_bound);
      worst = std::max({worst, e1, e2});
      // the exact kernels, asked for, on the same inputs keep the fp32 bound
      CHECK(fast_error(in, posenc::no_position{}, m, exact) <= fast_bound);
    }
  INFO("worst " << worst);
  CHECK(worst > fast_bound);  // the default took the dot products: bf16 rounding of q and p shows
}

TEST_CASE("bf16_dot_products: bit-identical for 1 and 2 threads (key chunks merged in a fixed order)",
          "[fast][bf16dot]") {
  if (!have_bf16_dot()) POSENC_SKIP("this CPU has no AVX512_BF16");
  posenc::kernels::scoped_isa use(isa::avx512);
  const fast_inputs<posenc::bfloat16> in({.B = 1, .Sq = 1, .Sk = 4500, .Hq = 8, .Hkv = 2, .D = 64, .Dv = 64}, 5);
  posenc::thread_pool one(1), two(2);
  const posenc::attention_options o{.causal = true};
  const auto a = run_fast(in, posenc::no_position{}, o, {.executor = one.as_parallel_for(), .bf16_dot_products = true});
  const auto b = run_fast(in, posenc::no_position{}, o, {.executor = two.as_parallel_for(), .bf16_dot_products = true});
  CHECK(a == b);
}
