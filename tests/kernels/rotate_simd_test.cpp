// tests/kernels/rotate_simd_test.cpp — every SIMD kernel the machine runs against the scalar oracle.
//
// Sweep: storage float/double/bfloat16/float16, head dims 2..256 (odd pair counts), partial rotary
// with pass-through tail, rotary offset, both pairings, padded token/head strides, unaligned and
// 64-byte aligned rows, in and out of place (also with streaming stores), forward/inverse, table
// rows with and without a gather index. Table mode must be bit-exact; on-the-fly angles are checked
// against their documented bound. ISAs this CPU lacks are reported with WARN and skipped.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <posenc/kernels/rotate.hpp>

namespace {

namespace k = posenc::kernels;
using posenc::bfloat16;
using posenc::compute_t;
using posenc::float16;

// Runs fn() once per SIMD ISA with that ISA active; WARNs for the ones this CPU cannot run.
template <class Fn>
void for_each_simd_isa(Fn fn) {
  for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    if (!k::isa_supported(i)) {
      UNSCOPED_INFO("ISA " << k::isa_name(i) << " not supported on this machine: skipped (see kernels.isa coverage)");
      continue;
    }
    k::scoped_isa use(i);
    REQUIRE(use.active());
    REQUIRE(k::active_isa() == i);
    INFO("isa " << k::isa_name(i));
    fn(i);
  }
}

struct geometry_case {
  int D, R, o;
};

std::vector<geometry_case> geometry_sweep() {
  std::vector<geometry_case> out;
  for (int D :
       {2, 4, 6, 8, 10, 14, 16, 18, 22, 24, 30, 32, 34, 46, 62, 64, 66, 80, 96, 126, 128, 130, 190, 192, 254, 256}) {
    out.push_back({D, D, 0});                                              // full rotary
    if (D >= 6) out.push_back({D, (D / 2) & ~1, 0});                       // partial, tail passes through
    if (D >= 8) out.push_back({D, std::max(2, (D / 3) & ~1), D / 4 | 1});  // offset (odd) + tail
  }
  return out;
}

// A buffer whose first row starts `shift` elements after a 64-byte boundary.
template <class T>
struct rows_buffer {
  std::vector<T> storage;
  std::size_t start = 0;
  rows_buffer(std::size_t n, std::size_t shift) : storage(n + 64) {
    const auto addr = reinterpret_cast<std::uintptr_t>(storage.data());
    start = ((64 - addr % 64) % 64) / sizeof(T) + shift;
  }
  T* data() { return storage.data() + start; }
};

template <class T>
T random_value(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  if constexpr (std::is_same_v<T, double>) {
    return std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
  } else {
    return T(u(rng));
  }
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

std::vector<double> inv_freq(int pairs, double base) {
  std::vector<double> w(static_cast<std::size_t>(pairs));
  for (int i = 0; i < pairs; ++i) w[static_cast<std::size_t>(i)] = std::pow(base, -2.0 * i / (2.0 * pairs));
  return w;
}

}  // namespace

TEMPLATE_TEST_CASE("SIMD rotation is bit-exact with the scalar kernel (table mode)", "[kernels][simd]", float, double,
                   bfloat16, float16) {
  using T = TestType;
  using C = compute_t<T>;
  std::mt19937 rng(42);
  for_each_simd_isa([&](k::isa) {
    std::size_t cases = 0;
    for (const auto& gc : geometry_sweep()) {
      for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
        const k::rope_geometry g{gc.D, gc.R, gc.o, layout};
        const int P = g.pairs();
        // Angle table of 5 rows (padded stride), built by the scalar oracle.
        const std::ptrdiff_t astride = P + 3;
        std::vector<C> cs(static_cast<std::size_t>(5 * astride)), sn(cs.size());
        const auto w = inv_freq(P, 10000.0);
        const std::vector<std::int64_t> pos{7, 0, 4095, 123456, 1 << 30};
        k::scalar::compute_angles(w.data(), P, pos.data(), 5, 1.0, cs.data(), sn.data(), astride);
        const std::vector<std::int64_t> gather{4, 0, 2};
        for (int pad : {0, 3}) {
          for (std::size_t shift : {std::size_t{0}, std::size_t{1}}) {
            const std::ptrdiff_t tokens = 3, heads = 2, hs = gc.D + pad, ts = heads * hs + pad;
            const auto n = static_cast<std::size_t>(tokens * ts);
            rows_buffer<T> src(n, shift);
            for (std::size_t i = 0; i < n; ++i) src.data()[i] = random_value<T>(rng);
            for (bool gathered : {false, true}) {
              const k::angle_rows<C> angles{cs.data(), sn.data(), astride, gathered ? gather.data() : nullptr};
              for (auto dir : {k::rotation::forward, k::rotation::inverse}) {
                for (int mode : {0, 1, 2}) {  // 0 in place, 1 out of place, 2 out of place streaming
                  INFO("D " << gc.D << " R " << gc.R << " o " << gc.o << " layout " << int(layout) << " pad " << pad
                            << " shift " << shift << " gathered " << gathered << " dir " << int(dir) << " mode "
                            << mode);
                  std::vector<T> in(src.data(), src.data() + n);
                  rows_buffer<T> ref_buf(n, shift), out_buf(n, shift);
                  for (std::size_t i = 0; i < n; ++i) ref_buf.data()[i] = out_buf.data()[i] = mode ? T(0.5f) : in[i];
                  const k::head_rows<const T> x{mode ? src.data() : ref_buf.data(), tokens, heads, ts, hs};
                  const k::head_rows<const T> xs{mode ? src.data() : out_buf.data(), tokens, heads, ts, hs};
                  k::scalar::rotate(g, x, k::head_rows<T>{ref_buf.data(), tokens, heads, ts, hs}, angles, dir);
                  k::set_stream_threshold(mode == 2 ? 0 : std::size_t{8} << 20);
                  k::rotate(g, xs, k::head_rows<T>{out_buf.data(), tokens, heads, ts, hs}, angles, dir);
                  k::set_stream_threshold(std::size_t{8} << 20);
                  const std::vector<T> ref(ref_buf.data(), ref_buf.data() + n), out(out_buf.data(), out_buf.data() + n);
                  REQUIRE(same_bits(out, ref));
                  ++cases;
                }
              }
            }
          }
        }
      }
    }
    CHECK(cases > 1000);
  });
}

TEMPLATE_TEST_CASE("row ranges, the parallel overload and fused q+k equal whole calls", "[kernels][simd]", float,
                   double, bfloat16, float16) {
  using T = TestType;
  using C = compute_t<T>;
  std::mt19937 rng(7);
  const k::rope_geometry g{128, 96, 8, k::pairing::interleaved};
  const std::ptrdiff_t tokens = 9, qh = 4, kh = 2, D = 128;
  const auto w = inv_freq(g.pairs(), 500000.0);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(tokens));
  for (auto& p : pos) p = std::uniform_int_distribution<std::int64_t>(0, std::int64_t{1} << 31)(rng);
  std::vector<C> cs(static_cast<std::size_t>(tokens * g.pairs())), sn(cs.size());
  k::scalar::compute_angles(w.data(), g.pairs(), pos.data(), tokens, 1.0, cs.data(), sn.data(), g.pairs());
  const k::angle_rows<C> angles{cs.data(), sn.data(), g.pairs()};
  std::vector<T> q0(static_cast<std::size_t>(tokens * qh * D)), k0(static_cast<std::size_t>(tokens * kh * D));
  for (auto& v : q0) v = random_value<T>(rng);
  for (auto& v : k0) v = random_value<T>(rng);
  auto rows = [&](std::vector<T>& v, std::ptrdiff_t h) { return k::head_rows<T>{v.data(), tokens, h, h * D, D}; };
  auto crows = [&](std::vector<T>& v, std::ptrdiff_t h) {
    return k::head_rows<const T>{v.data(), tokens, h, h * D, D};
  };

  for_each_simd_isa([&](k::isa) {
    // Reference: whole-tensor scalar rotation of q and k.
    auto qr = q0, kr = k0;
    k::scalar::rotate(g, crows(qr, qh), rows(qr, qh), angles, k::rotation::forward);
    k::scalar::rotate(g, crows(kr, kh), rows(kr, kh), angles, k::rotation::forward);

    auto q = q0;  // rows in uneven ranges
    for (std::ptrdiff_t b = 0, e; b < tokens * qh; b = e) {
      e = std::min(tokens * qh, b + 1 + b % 5);
      k::rotate_rows(g, crows(q, qh), rows(q, qh), angles, k::rotation::forward, b, e);
    }
    CHECK(same_bits(q, qr));

    std::vector<T> out(q0.size());  // 3 threads, out of place (small: runs inline)
    k::rotate_parallel(g, crows(q0, qh), rows(out, qh), angles, k::rotation::forward, 3);
    CHECK(same_bits(out, qr));

    auto qf = q0, kf = k0;  // fused
    k::rotate_qk(g, rows(qf, qh), rows(kf, kh), angles);
    CHECK(same_bits(qf, qr));
    CHECK(same_bits(kf, kr));

    // Fused with on-the-fly angles equals two on-the-fly calls with the same ISA.
    auto qp = q0, kp = k0, qs = q0, ks = k0;
    k::rotate_qk(g, rows(qp, qh), rows(kp, kh), w.data(), pos.data(), 1.25, k::rotation::inverse);
    k::rotate_positions(g, rows(qs, qh), w.data(), pos.data(), 1.25, k::rotation::inverse);
    k::rotate_positions(g, rows(ks, kh), w.data(), pos.data(), 1.25, k::rotation::inverse);
    CHECK(same_bits(qp, qs));
    CHECK(same_bits(kp, ks));

    // q and k in one qkv buffer (k's rows right after q's, v after k: rotated as one row set) give
    // the same bits, and v is not touched.
    const std::ptrdiff_t vh = 2, all = qh + kh + vh;
    std::vector<T> qkv(static_cast<std::size_t>(tokens * all * D));
    for (std::ptrdiff_t t = 0; t < tokens; ++t) {
      for (std::ptrdiff_t i = 0; i < all * D; ++i) {
        const auto at = static_cast<std::size_t>(t * all * D + i);
        qkv[at] = i < qh * D          ? q0[static_cast<std::size_t>(t * qh * D + i)]
                  : i < (qh + kh) * D ? k0[static_cast<std::size_t>(t * kh * D + i - qh * D)]
                                      : T(static_cast<float>(i % 7));
      }
    }
    for (bool on_the_fly : {false, true}) {
      auto buf = qkv;
      const k::head_rows<T> bq{buf.data(), tokens, qh, all * D, D}, bk{buf.data() + qh * D, tokens, kh, all * D, D};
      if (on_the_fly)
        k::rotate_qk(g, bq, bk, w.data(), pos.data(), 1.25, k::rotation::inverse);
      else
        k::rotate_qk(g, bq, bk, angles);
      const auto& qw = on_the_fly ? qs : qr;
      const auto& kw = on_the_fly ? ks : kr;
      bool same = true;
      for (std::ptrdiff_t t = 0; t < tokens; ++t) {
        for (std::ptrdiff_t i = 0; i < all * D; ++i) {
          const auto at = static_cast<std::size_t>(t * all * D + i);
          const T want = i < qh * D          ? qw[static_cast<std::size_t>(t * qh * D + i)]
                         : i < (qh + kh) * D ? kw[static_cast<std::size_t>(t * kh * D + i - qh * D)]
                                             : qkv[at];
          same = same && std::memcmp(&buf[at], &want, sizeof(T)) == 0;
        }
      }
      INFO("on the fly " << on_the_fly);
      CHECK(same);
    }
  });
}

TEMPLATE_TEST_CASE("rotate_parallel on 1, 2 and 7 threads is bit-identical to one thread, inline when small",
                   "[kernels][simd][parallel]", float, bfloat16) {
  using T = TestType;
  using C = compute_t<T>;
  std::mt19937 rng(19);
  const std::ptrdiff_t D = 128, heads = 8, tokens = 600;  // 600 * 8 * 128 elements: >= 1.2 MiB
  const k::rope_geometry g{D, D, 0, k::pairing::half_split};
  const auto w = inv_freq(g.pairs(), 10000.0);
  std::vector<std::int64_t> pos(static_cast<std::size_t>(tokens));
  for (std::size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<std::int64_t>(t * 37 % 4096);
  std::vector<C> cs(static_cast<std::size_t>(tokens * g.pairs())), sn(cs.size());
  k::scalar::compute_angles(w.data(), g.pairs(), pos.data(), tokens, 1.0, cs.data(), sn.data(), g.pairs());
  const k::angle_rows<C> angles{cs.data(), sn.data(), g.pairs()};
  std::vector<T> x(static_cast<std::size_t>(tokens * heads * D));
  for (auto& v : x) v = random_value<T>(rng);
  const k::head_rows<const T> src{x.data(), tokens, heads, heads * D, D};
  const auto into = [&](std::vector<T>& v) { return k::head_rows<T>{v.data(), tokens, heads, heads * D, D}; };
  std::vector<T> one(x.size());
  k::rotate(g, src, into(one), angles);

  for (int threads : {1, 2, 7}) {
    INFO("threads " << threads);
    posenc::thread_pool pool(threads);
    std::ptrdiff_t calls = 0, pieces = 0;
    const posenc::parallel_for pf = [&](std::ptrdiff_t n, posenc::task_ref task) {
      ++calls, pieces += n;
      pool.run(n, task);
    };
    std::vector<T> out(x.size());
    k::rotate_parallel(g, src, into(out), angles, k::rotation::forward, pf);
    CHECK(same_bits(out, one));
    CHECK(calls == 1);
    CHECK(pieces >= 2);
    std::vector<T> in_place = x;  // in place, through the default pool capped at `threads`
    k::rotate_parallel(g, k::head_rows<const T>{in_place.data(), tokens, heads, heads * D, D}, into(in_place), angles,
                       k::rotation::forward, threads);
    CHECK(same_bits(in_place, one));
    // Below parallel_min_bytes the caller's parallel_for is not even called.
    calls = 0;
    const std::ptrdiff_t few = 8;
    std::vector<T> small(static_cast<std::size_t>(few * heads * D)), small_ref(small.size());
    REQUIRE(small.size() * sizeof(T) < k::parallel_min_bytes);
    const k::head_rows<const T> xs{x.data(), few, heads, heads * D, D};
    k::rotate_parallel(g, xs, k::head_rows<T>{small.data(), few, heads, heads * D, D}, angles, k::rotation::forward,
                       pf);
    k::rotate(g, xs, k::head_rows<T>{small_ref.data(), few, heads, heads * D, D}, angles);
    CHECK(calls == 0);
    CHECK(same_bits(small, small_ref));
  }
}

TEMPLATE_TEST_CASE("on-the-fly rows wider than the angle buffer are rotated in slices, same bits",
                   "[kernels][simd][wide]", float, bfloat16) {
  using T = TestType;
  std::mt19937 rng(23);
  const int P = k::max_on_the_fly_pairs + 77;  // one full slice and a partial one
  const std::ptrdiff_t tokens = 3, heads = 2, D = 2 * P + 6;
  const std::vector<std::int64_t> pos{5, 1 << 20, -3};
  const auto w = inv_freq(P, 10000.0);
  std::vector<T> x(static_cast<std::size_t>(tokens * heads * D));
  for (auto& v : x) v = random_value<T>(rng);
  for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
    const k::rope_geometry g{static_cast<int>(D), 2 * P, 3, layout};
    auto check = [&] {
      INFO("layout " << int(layout) << " isa " << k::isa_name(k::active_isa()));
      // Reference: the active ISA's angle rows for all P pairs at once, applied by the scalar kernel.
      std::vector<float> cs(static_cast<std::size_t>(tokens * P)), sn(cs.size());
      for (std::ptrdiff_t t = 0; t < tokens; ++t) {
        k::detail::row_angles_on(k::active_isa(), w.data(), P, pos[static_cast<std::size_t>(t)], 1.0, cs.data() + t * P,
                                 sn.data() + t * P);
      }
      const k::head_rows<const T> src{x.data(), tokens, heads, heads * D, D};
      std::vector<T> ref(x.size()), out(x.size()), q = x, kk = x;
      k::scalar::rotate(g, src, k::head_rows<T>{ref.data(), tokens, heads, heads * D, D},
                        k::angle_rows<float>{cs.data(), sn.data(), P}, k::rotation::forward);
      k::rotate_positions(g, src, k::head_rows<T>{out.data(), tokens, heads, heads * D, D}, w.data(), pos.data(), 1.0);
      CHECK(same_bits(out, ref));
      k::rotate_qk(g, k::head_rows<T>{q.data(), tokens, heads, heads * D, D},
                   k::head_rows<T>{kk.data(), tokens, heads, heads * D, D}, w.data(), pos.data(), 1.0);
      CHECK(same_bits(q, ref));
      CHECK(same_bits(kk, ref));
    };
    {
      k::scoped_isa scalar(k::isa::scalar);
      check();
    }
    for_each_simd_isa([&](k::isa) { check(); });
  }
}

TEMPLATE_TEST_CASE("on-the-fly rotation matches the table rotation within the sincos bound", "[kernels][simd]", float,
                   double, bfloat16, float16) {
  using T = TestType;
  using C = compute_t<T>;
  std::mt19937 rng(11);
  for (int D : {6, 30, 64, 128, 130, 256}) {
    for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
      const k::rope_geometry g{D, D, 0, layout};
      const std::ptrdiff_t tokens = 6, heads = 3;
      const auto w = inv_freq(g.pairs(), 1e6);
      const std::vector<std::int64_t> pos{0, 1, 65535, 1 << 24, (std::int64_t{1} << 31) - 1, -5};
      std::vector<C> cs(static_cast<std::size_t>(tokens * g.pairs())), sn(cs.size());
      k::scalar::compute_angles(w.data(), g.pairs(), pos.data(), tokens, 1.0, cs.data(), sn.data(), g.pairs());
      std::vector<T> x(static_cast<std::size_t>(tokens * heads * D));
      for (auto& v : x) v = random_value<T>(rng);
      const k::head_rows<const T> src{x.data(), tokens, heads, heads * D, D};
      std::vector<T> ref(x.size()), out(x.size());
      k::scalar::rotate(g, src, k::head_rows<T>{ref.data(), tokens, heads, heads * D, D},
                        k::angle_rows<C>{cs.data(), sn.data(), g.pairs()}, k::rotation::forward);
      auto check = [&] {
        k::rotate_positions(g, src, k::head_rows<T>{out.data(), tokens, heads, heads * D, D}, w.data(), pos.data(),
                            1.0);
        // |x| <= 2: angle error e moves each output by <= 2*sqrt(2)*e; then one rounding of T.
        const double angle_tol = std::is_same_v<C, double> ? 1e-15 : 2e-7;
        const double rel = std::is_same_v<T, bfloat16>  ? 0x1p-8
                           : std::is_same_v<T, float16> ? 0x1p-11
                           : std::is_same_v<T, float>   ? 0x1p-23
                                                        : 0x1p-52;
        const double eps = std::numeric_limits<C>::epsilon();  // rounding inside a*c - b*s
        double worst = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const double r = static_cast<double>(static_cast<C>(ref[i])), o = static_cast<double>(static_cast<C>(out[i]));
          worst = std::max(worst, std::fabs(o - r) - (5.66 * angle_tol + 2 * rel * std::fabs(r) + 8 * eps));
        }
        INFO("D " << D << " layout " << int(layout) << " isa " << k::isa_name(k::active_isa()));
        CHECK(worst <= 0);
      };
      {
        k::scoped_isa scalar(k::isa::scalar);
        check();
        CHECK(same_bits(out, ref));  // the scalar on-the-fly path uses exact angles
      }
      for_each_simd_isa([&](k::isa) { check(); });
    }
  }
}

TEST_CASE("the dispatcher picks a supported ISA and honours the overrides", "[kernels][isa]") {
  // Holds whether or not the user runs the suite with POSENC_ISA set: the variable is saved, the
  // checks below run without it (and with the values they set), and it is restored at the end.
  const char* user_env = std::getenv("POSENC_ISA");
  const std::string saved = user_env ? user_env : "";
  struct restore_env {
    const char* value;
    const std::string& text;
    ~restore_env() {
      if (value)
        setenv("POSENC_ISA", text.c_str(), 1);
      else
        unsetenv("POSENC_ISA");
      k::reset_isa();
    }
  } restore{user_env ? saved.c_str() : nullptr, saved};
  REQUIRE(unsetenv("POSENC_ISA") == 0);
  k::reset_isa();
  const k::isa best = k::active_isa();
  CHECK(k::isa_supported(best));
  CHECK(best == k::best_supported_isa());
  if (user_env) {  // the user's choice, when it names a supported ISA, is what the dispatcher takes
    k::isa wanted{};
    REQUIRE(setenv("POSENC_ISA", saved.c_str(), 1) == 0);
    k::reset_isa();
    CHECK(k::active_isa() == (k::parse_isa(saved, wanted) && k::isa_supported(wanted) ? wanted : best));
    REQUIRE(unsetenv("POSENC_ISA") == 0);
    k::reset_isa();
  }
  CHECK(k::isa_supported(k::isa::scalar));
#if POSENC_ARCH_X86_64
  CHECK_FALSE(k::isa_supported(k::isa::neon));
#elif POSENC_ARCH_AARCH64
  CHECK(k::isa_supported(k::isa::neon));
  CHECK_FALSE(k::isa_supported(k::isa::avx2));
#endif
  for (k::isa i : {k::isa::scalar, k::isa::avx2, k::isa::avx512, k::isa::neon}) {
    k::isa parsed = k::isa::scalar;
    CHECK(k::parse_isa(k::isa_name(i), parsed));
    CHECK(parsed == i);
  }
  k::isa unused{};
  CHECK_FALSE(k::parse_isa("sse9", unused));

  SECTION("API override, scoped") {
    {
      k::scoped_isa s(k::isa::scalar);
      CHECK(s.active());
      CHECK(k::active_isa() == k::isa::scalar);
    }
    CHECK(k::active_isa() == best);
    CHECK(k::set_isa(k::isa::scalar));
    CHECK(k::active_isa() == k::isa::scalar);
    for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
      if (!k::isa_supported(i)) {
        CHECK_FALSE(k::set_isa(i));  // refused, choice unchanged
        CHECK(k::active_isa() == k::isa::scalar);
      }
    }
    k::reset_isa();
    CHECK(k::active_isa() == best);
  }
  SECTION("environment variable POSENC_ISA") {
    REQUIRE(setenv("POSENC_ISA", "scalar", 1) == 0);
    k::reset_isa();
    CHECK(k::active_isa() == k::isa::scalar);
    REQUIRE(setenv("POSENC_ISA", "not-an-isa", 1) == 0);
    k::reset_isa();
    CHECK(k::active_isa() == best);  // unknown names are ignored
    for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
      REQUIRE(setenv("POSENC_ISA", std::string(k::isa_name(i)).c_str(), 1) == 0);
      k::reset_isa();
      CHECK(k::active_isa() == (k::isa_supported(i) ? i : best));  // unsupported names are ignored
    }
    REQUIRE(unsetenv("POSENC_ISA") == 0);
    k::reset_isa();
    CHECK(k::active_isa() == best);
  }
}

TEST_CASE("bfloat16 rounding of subnormal, zero and infinite values is bit-exact on every ISA",
          "[kernels][simd][bf16]") {
  // AVX-512 with AVX512_BF16 rounds with VCVTNE2PS2BF16, which reads subnormal inputs as zero; the
  // kernels must fall back to integer rounding for such blocks. Rows mix subnormal, tiny normal,
  // zero and infinite values, in every block position, so both paths and the fallback run (NaN
  // inputs are left out: which of two NaN operands' payloads a sum keeps is not specified).
  const std::uint16_t specials[] = {0x0001, 0x8001, 0x007f, 0x0040, 0x0080, 0x8080, 0x0000, 0x8000,
                                    0x7f80, 0xff80, 0x0002, 0x8003, 0x3f80, 0x00ff, 0x0100, 0x3c00};
  std::mt19937 rng(11);
  for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
    const k::rope_geometry g{128, 128, 0, layout};
    const std::ptrdiff_t tokens = 4, heads = 3, n = tokens * heads * 128;
    std::vector<float> cs(static_cast<std::size_t>(tokens * 64)), sn(cs.size());
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (std::size_t i = 0; i < cs.size(); ++i) cs[i] = u(rng), sn[i] = u(rng);
    cs[3] = 1.f, sn[3] = 0.f;  // a pair that keeps its (subnormal) inputs
    const k::angle_rows<float> angles{cs.data(), sn.data(), 64};
    for (int density : {1, 4, 64}) {  // one special in `density` values (1: every value)
      std::vector<bfloat16> src(static_cast<std::size_t>(n));
      for (std::size_t i = 0; i < src.size(); ++i) {
        const auto r = static_cast<std::uint16_t>(rng());
        src[i] = rng() % static_cast<unsigned>(density) == 0 ? bfloat16::from_bits(specials[r % 16])
                                                             : bfloat16(u(rng) * 1e-37f);  // near the subnormal edge
      }
      std::vector<bfloat16> ref = src;
      const k::head_rows<const bfloat16> x{src.data(), tokens, heads, heads * 128, 128};
      k::scalar::rotate(g, x, k::head_rows<bfloat16>{ref.data(), tokens, heads, heads * 128, 128}, angles,
                        k::rotation::forward);
      for (k::isa i : {k::isa::avx2, k::isa::avx512, k::isa::neon}) {
        if (!k::isa_supported(i)) continue;
        k::scoped_isa use(i);
        std::vector<bfloat16> out = src;
        k::rotate(g, k::head_rows<bfloat16>{out.data(), tokens, heads, heads * 128, 128}, angles);
        INFO("isa " << k::isa_name(i) << " layout " << int(layout) << " density " << density);
        CHECK(std::memcmp(out.data(), ref.data(), out.size() * sizeof(bfloat16)) == 0);
      }
    }
  }
}
