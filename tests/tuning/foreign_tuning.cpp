// Every x86 kernel table of the library, compiled in a TU tuned for another CPU than the kernels' own
// target regions (tests/CMakeLists.txt builds this file with -mtune=znver3: GCC 12.2's -march=native on
// Zen 4 and Zen 5). GCC inlines across a tuning change only what is always_inline, so every helper
// defined outside the regions and called from them must be; scripts/check-region-calls reads this
// binary and fails on any call from a kernel into such a helper (kernels/ops/begin_avx2.inl says why).
// Running it checks that the kernels so compiled agree with the default-tuned scalar ones.
#include <cstdio>
#include <utility>
#include <vector>

#include <posenc/attention/fast/kernels.hpp>
#include <posenc/kernels/angles.hpp>
#include <posenc/kernels/q8_0.hpp>
#include <posenc/kernels/rotate.hpp>

namespace {

using posenc::kernels::isa;
using posenc::kernels::kernel_table;

// The tables of every ISA, kept alive: stored where the compiler must assume they are read, so every
// kernel they point to is emitted.
const void* volatile kept = nullptr;
template <class Family>
int every_isa() {
  for (const isa i : {isa::scalar, isa::avx2, isa::avx512}) kept = &kernel_table<Family>(i);
  return 1;
}

}  // namespace

int main() {
  namespace k = posenc::kernels;
  const int tables = every_isa<k::attention_kernels>() + every_isa<k::q8_0_rows>() +
                     every_isa<k::rotate_kernels<float>>() + every_isa<k::rotate_kernels<double>>() +
                     every_isa<k::rotate_kernels<posenc::bfloat16>>() +
                     every_isa<k::rotate_kernels<posenc::float16>>() + every_isa<k::angle_kernels<float>>() +
                     every_isa<k::angle_kernels<double>>();
  // One rotation on the active ISA against the scalar one: the foreign tuning changes no result.
  constexpr int D = 64, P = D / 2, T = 5, H = 3;
  std::vector<float> x(T * H * D), a(x.size()), b(x.size()), cs(T * P), sn(T * P);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>((i * 37) % 101) - 0.5f;
  for (std::size_t i = 0; i < cs.size(); ++i) cs[i] = 0.6f + 0.001f * static_cast<float>(i), sn[i] = 0.8f;
  const k::rope_geometry g{.head_dim = D, .rotary_dim = D};
  const k::head_rows<const float> src{x.data(), T, H, H * D, D};
  const k::angle_rows<float> ang{cs.data(), sn.data(), P};
  for (const auto& [which, out] : {std::pair{k::active_isa(), &a}, std::pair{isa::scalar, &b}})
    kernel_table<k::rotate_kernels<float>>(which).rows(g, src, {out->data(), T, H, H * D, D}, ang, k::rotation::forward,
                                                       0, T * H, false);
  if (a != b) {
    std::fprintf(stderr, "foreign_tuning: the %s rotation differs from the scalar one\n",
                 k::isa_name(k::active_isa()).data());
    return 1;
  }
  std::printf("foreign_tuning: %d kernel families; %s rotation == scalar\n", tables,
              k::isa_name(k::active_isa()).data());
  return 0;
}
