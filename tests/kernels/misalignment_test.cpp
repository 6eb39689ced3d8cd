// tests/kernels/misalignment_test.cpp — every misalignment of the data, 0..63 bytes from a 64-byte
// line (in steps of the element size: a T* is always T-aligned), bit-exact with the scalar oracle on
// every SIMD ISA: rows sharing one misalignment (head strides a multiple of 64 bytes) and rows that
// do not, both layouts, in and out of place (dst shifted like src, or differently), and no byte
// written outside the rows (heads 4, pad 0: the contiguous rows of the aligned-vector paths); in
// place also through the decode entry kernels::rotate_token, one token at a time.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

#include "support/skip.hpp"

namespace {
namespace k = posenc::kernels;
using posenc::bfloat16;
using posenc::compute_t;
using posenc::float16;

// n elements of T starting `shift_bytes` past a 64-byte boundary.
template <class T>
struct shifted {
  std::vector<unsigned char> raw;
  T* data;
  std::size_t begin = 0, end = 0;  // byte range of the data inside raw
  shifted(std::size_t n, std::size_t shift_bytes) : raw(n * sizeof(T) + 128, 0xA5) {
    const auto addr = reinterpret_cast<std::uintptr_t>(raw.data());
    begin = (64 - addr % 64) % 64 + shift_bytes, end = begin + n * sizeof(T);
    data = reinterpret_cast<T*>(raw.data() + begin);
  }
  // No byte outside the data written (the aligned-vector paths mask the first and last vectors).
  [[nodiscard]] bool outside_untouched() const {
    for (std::size_t i = 0; i < raw.size(); ++i)
      if ((i < begin || i >= end) && raw[i] != 0xA5) return false;
    return true;
  }
};
}  // namespace

TEMPLATE_TEST_CASE("rotation at every misalignment 0..63 bytes is bit-exact with the scalar oracle",
                   "[kernels][simd][misaligned]", float, double, bfloat16, float16) {
  using T = TestType;
  using C = compute_t<T>;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  int isas = 0;
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    ++isas;
    for (int D : {64, 96, 128, 130}) {
      for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
        const k::rope_geometry g{D, D == 130 ? 124 : D, D == 130 ? 2 : 0, layout};
        const int P = g.pairs();
        const std::ptrdiff_t tokens = 3;
        std::vector<C> cs(static_cast<std::size_t>(tokens * P)), sn(cs.size());
        for (auto& v : cs) v = static_cast<C>(u(rng));
        for (auto& v : sn) v = static_cast<C>(u(rng));
        const k::angle_rows<C> angles{cs.data(), sn.data(), P};
        for (std::ptrdiff_t heads : {1, 2, 4}) {  // 2: row 0 reads ahead into the last row
          for (std::ptrdiff_t pad : {0, 3}) {     // pad 0 with D 64/128: every row shares the misalignment
            const std::ptrdiff_t hs = D + pad, ts = heads * hs;
            const auto n = static_cast<std::size_t>(tokens * ts);
            for (std::size_t shift = 0; shift < 64; shift += sizeof(T)) {
              shifted<T> src(n, shift), ref(n, shift), out(n, shift), other(n, (shift + 2 * sizeof(T)) % 64),
                  same(n, shift);
              for (std::size_t j = 0; j < n; ++j) src.data[j] = T(u(rng));
              // Padding between rows is never written: start every buffer from the same bytes.
              for (T* b : {ref.data, other.data, same.data})
                std::memcpy(static_cast<void*>(b), src.data, n * sizeof(T));
              const k::head_rows<const T> x{src.data, tokens, heads, ts, hs};
              for (auto dir : {k::rotation::forward, k::rotation::inverse}) {
                INFO("isa " << k::isa_name(i) << " D " << D << " layout " << int(layout) << " heads " << heads
                            << " pad " << pad << " shift " << shift << " dir " << int(dir));
                k::scalar::rotate(g, x, k::head_rows<T>{ref.data, tokens, heads, ts, hs}, angles, dir);
                // in place
                std::memcpy(static_cast<void*>(out.data), src.data, n * sizeof(T));
                k::rotate(g, k::head_rows<T>{out.data, tokens, heads, ts, hs}, angles, dir);
                REQUIRE(std::memcmp(out.data, ref.data, n * sizeof(T)) == 0);
                REQUIRE(out.outside_untouched());
                // in place, token by token through the decode entry
                std::memcpy(static_cast<void*>(out.data), src.data, n * sizeof(T));
                for (std::ptrdiff_t t = 0; t < tokens; ++t)
                  k::rotate_token(g, out.data + t * ts, heads, hs, cs.data() + t * P, sn.data() + t * P, dir);
                REQUIRE(std::memcmp(out.data, ref.data, n * sizeof(T)) == 0);
                REQUIRE(out.outside_untouched());
                // out of place, dst misaligned differently from src
                k::rotate(g, x, k::head_rows<T>{other.data, tokens, heads, ts, hs}, angles, dir);
                REQUIRE(std::memcmp(other.data, ref.data, n * sizeof(T)) == 0);
                // out of place, dst misaligned like src (the peeled path of small calls)
                k::rotate(g, x, k::head_rows<T>{same.data, tokens, heads, ts, hs}, angles, dir);
                REQUIRE(std::memcmp(same.data, ref.data, n * sizeof(T)) == 0);
                REQUIRE((other.outside_untouched() && same.outside_untouched()));
              }
            }
          }
        }
      }
    }
  }
  if (isas == 0) POSENC_SKIP("no SIMD ISA on this machine");
}

// The fused arithmetic does the same operations per lane whatever the buffer's alignment (the
// aligned-stream paths only move lanes), so a fused rotation of a buffer at any misalignment is
// bit-identical to the fused rotation of the same data 64-byte aligned.
TEMPLATE_TEST_CASE("fused rotation at every misalignment equals fused rotation of aligned data",
                   "[kernels][simd][misaligned][fused]", float, double) {
  using T = TestType;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    struct fused_guard {  // back to exact whatever happens
      fused_guard() { k::set_arithmetic(k::arithmetic::fused); }
      ~fused_guard() { k::set_arithmetic(k::arithmetic::exact); }
      fused_guard(const fused_guard&) = delete;
      fused_guard& operator=(const fused_guard&) = delete;
    } fused;
    for (int D : {64, 128}) {
      for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
        const k::rope_geometry g{D, D, 0, layout};
        const int P = g.pairs();
        const std::ptrdiff_t tokens = 2, heads = 4, ts = heads * D;
        const auto n = static_cast<std::size_t>(tokens * ts);
        std::vector<T> cs(static_cast<std::size_t>(tokens * P)), sn(cs.size());
        for (auto& v : cs) v = static_cast<T>(u(rng));
        for (auto& v : sn) v = static_cast<T>(u(rng));
        const k::angle_rows<T> angles{cs.data(), sn.data(), P};
        shifted<T> ref(n, 0);
        for (std::size_t j = 0; j < n; ++j) ref.data[j] = static_cast<T>(u(rng));
        shifted<T> x0(n, 0);
        std::memcpy(static_cast<void*>(x0.data), ref.data, n * sizeof(T));
        k::rotate(g, k::head_rows<T>{ref.data, tokens, heads, ts, D}, angles);
        for (std::size_t shift = sizeof(T); shift < 64; shift += sizeof(T)) {
          INFO("isa " << k::isa_name(i) << " D " << D << " layout " << int(layout) << " shift " << shift);
          shifted<T> out(n, shift);
          std::memcpy(static_cast<void*>(out.data), x0.data, n * sizeof(T));
          k::rotate(g, k::head_rows<T>{out.data, tokens, heads, ts, D}, angles);
          REQUIRE(std::memcmp(out.data, ref.data, n * sizeof(T)) == 0);
          REQUIRE(out.outside_untouched());
        }
      }
    }
  }
}

// kernels::rotate_token (the decode entry) gives rotate()'s bits on every ISA, the scalar one
// included, in both arithmetic modes: decode shapes (one token, 8 to 40 heads, D 64 / 128, a
// partial rotary slice), heads contiguous or strided, forward and inverse.
TEST_CASE("rotate_token equals rotate on a one-token view, every ISA and arithmetic", "[kernels][simd][decode]") {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  struct exact_after {  // back to exact whatever happens
    ~exact_after() { k::set_arithmetic(k::arithmetic::exact); }
  } restore;
  for (k::isa i : {k::isa::scalar, k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) continue;
    k::scoped_isa use(i);
    for (auto mode : {k::arithmetic::exact, k::arithmetic::fused}) {
      k::set_arithmetic(mode);
      for (int D : {64, 128, 130}) {
        for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
          const k::rope_geometry g{D, D == 130 ? 124 : D, D == 130 ? 2 : 0, layout};
          const int P = g.pairs();
          std::vector<float> cs(static_cast<std::size_t>(P)), sn(cs.size());
          for (auto& v : cs) v = u(rng);
          for (auto& v : sn) v = u(rng);
          for (std::ptrdiff_t heads : {1, 8, 32, 40}) {
            for (std::ptrdiff_t hs : {std::ptrdiff_t{D}, std::ptrdiff_t{D + 16}}) {
              const auto n = static_cast<std::size_t>(heads * hs);
              std::vector<float> ref(n), out(n);
              for (auto& v : ref) v = u(rng);
              out = ref;
              for (auto dir : {k::rotation::forward, k::rotation::inverse}) {
                INFO("isa " << k::isa_name(i) << " mode " << int(mode) << " D " << D << " layout " << int(layout)
                            << " heads " << heads << " stride " << hs << " dir " << int(dir));
                k::rotate(g, k::head_rows<float>{ref.data(), 1, heads, heads * hs, hs},
                          k::angle_rows<float>{cs.data(), sn.data(), P}, dir);
                k::rotate_token(g, out.data(), heads, hs, cs.data(), sn.data(), dir);
                REQUIRE(std::memcmp(out.data(), ref.data(), n * sizeof(float)) == 0);
              }
            }
          }
        }
      }
    }
  }
}
