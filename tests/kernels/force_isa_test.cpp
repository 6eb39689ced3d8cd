// tests/kernels/force_isa_test.cpp — POSENC_FORCE_ISA_SCALAR in one TU of a program whose other TUs
// dispatch at run time: this TU always runs the scalar kernels, ignores set_isa, and its kernel
// symbols live in their own ABI namespace, so the two TUs never share an inline body (ODR trap).
#define POSENC_FORCE_ISA_SCALAR 1

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

#define POSENC_TEST_STR2(x) #x
#define POSENC_TEST_STR(x) POSENC_TEST_STR2(x)
#define POSENC_STRINGIFY_ABI_FOR_TEST POSENC_TEST_STR(POSENC_KERNELS_ABI)

namespace {
namespace k = posenc::kernels;
}

TEST_CASE("POSENC_FORCE_ISA_SCALAR fixes the choice at compile time in its own ABI namespace", "[kernels][isa]") {
  STATIC_REQUIRE(std::string_view(POSENC_STRINGIFY_ABI_FOR_TEST).find("force_scalar") != std::string_view::npos);
  CHECK(k::active_isa() == k::isa::scalar);
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (k::set_isa(i)) {  // the shared choice changes for dispatching TUs, not for this one
      CHECK(k::active_isa() == k::isa::scalar);
    }
  }
  k::reset_isa();

  const k::rope_geometry g{10, 10, 0, k::pairing::interleaved};
  std::vector<float> x(20), ref(20), cs(10), sn(10);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 2.f;
  const std::vector<double> w{1.0, 0.1, 0.01, 0.001, 0.0001};
  const std::vector<std::int64_t> pos{3, 70000};
  k::compute_angles(w.data(), 5, pos.data(), 2, 1.0, cs.data(), sn.data(), 5);
  ref = x;
  k::scalar::rotate(g, k::head_rows<const float>{ref.data(), 2, 1, 10, 10},
                    k::head_rows<float>{ref.data(), 2, 1, 10, 10}, k::angle_rows<float>{cs.data(), sn.data(), 5},
                    k::rotation::forward);
  k::rotate(g, k::head_rows<float>{x.data(), 2, 1, 10, 10}, k::angle_rows<float>{cs.data(), sn.data(), 5});
  CHECK(std::memcmp(x.data(), ref.data(), x.size() * sizeof(float)) == 0);
}
