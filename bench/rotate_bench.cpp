// bench/rotate_bench.cpp — rotation kernels against bandwidth anchors, the scalar kernel and a plain loop.
//
// Names: rope/<shape>/<dtype>/<layout>/<variant>. Shapes from real models: decode (1 token, 32 q +
// 8 kv heads, D 128, position 4095), prefill (4096 x 32 x 128), long (32768 x 8 x 128), and mt
// (256 x 8 x 128, split over 1 or 2 threads with rotate_rows). Variants: kernel (dispatching entry,
// table, in place), offset (kernel on data 16 bytes past a 64-byte line, as ggml's buffers are),
// oop (out of place, streaming stores at this size), otf (on-the-fly angles), scalar
// (kernels::scalar), plain (a textbook loop compiled with the same flags), anchor_scale (an
// in-place scale of the same bytes) and anchor_copy_nt (a streaming-store copy of the same bytes),
// both written over the active ISA's operations (kernels/ops): the best this machine does at that
// ISA; mt only: parallel2 (rotate_parallel on 2 threads of the default pool) and inline
// (rotate_parallel on 1 thread: the pool-vs-inline pair); fused (kernel in kernels::arithmetic::fused).
// rope/api/<shape>/fp32/<layout>/{table,otf,auto}: rope::rotate with a cos_sin_table and each
// angle_source (the automatic choice against both explicit ones).
// Every run reports bytes/s (tensor bytes per call) and items/s (elements per call), from CPU time
// (wall time for the mt shape, whose point is thread scaling);
// scripts/bench-ratios turns one JSON run of this binary (and one of the -march=native build)
// into the table of same-run ratios in docs/performance.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include <posenc/kernels/rotate.hpp>
#include <posenc/rope/rope.hpp>

#if POSENC_HAS_X86_KERNELS
#include <immintrin.h>
#endif

namespace {

namespace k = posenc::kernels;
using posenc::bfloat16;

struct shape {
  const char* name;
  std::ptrdiff_t tokens, heads, kv_heads;  // kv_heads > 0: q and k rotated together (decode)
  std::int64_t first_position;
};
constexpr int head_dim = 128;
constexpr shape shapes[] = {
    {"decode", 1, 32, 8, 4095}, {"prefill", 4096, 32, 0, 0}, {"long", 32768, 8, 0, 0}, {"mt", 256, 8, 0, 0}};

// One pool of memory for every benchmark (allocated once, 64-byte aligned): src and dst regions.
struct pool {
  static constexpr std::size_t bytes = std::size_t{32768} * 8 * head_dim * sizeof(float);
  std::unique_ptr<std::byte[]> raw{new std::byte[2 * bytes + 128]};
  std::byte* a = raw.get() + (64 - reinterpret_cast<std::uintptr_t>(raw.get()) % 64) % 64;
  std::byte* b = a + bytes;
  std::string filled;  // what a and b hold now
};
pool& memory() {
  static pool p;
  return p;
}

// src, dst with n elements of T, filled with values in [-1, 1] (refilled only when T or n change).
template <class T>
std::pair<T*, T*> buffers(std::size_t n) {
  pool& p = memory();
  auto* src = reinterpret_cast<T*>(p.a);
  auto* dst = reinterpret_cast<T*>(p.b);
  const std::string key = std::to_string(sizeof(T)) + "/" + std::to_string(n);
  if (p.filled != key) {
    for (std::size_t i = 0; i < n; ++i) src[i] = dst[i] = T(static_cast<float>((i * 7919) % 2001) / 1000.f - 1.f);
    p.filled = key;
  }
  return {src, dst};
}

struct table {
  std::vector<double> inv_freq;
  std::vector<std::int64_t> positions;
  std::vector<float> cos, sin;
};
const table& angles_for(const shape& s) {
  static std::map<const shape*, table> cache;
  auto [it, fresh] = cache.try_emplace(&s);
  table& t = it->second;
  if (fresh) {
    constexpr int P = head_dim / 2;
    for (int i = 0; i < P; ++i) t.inv_freq.push_back(std::pow(500000.0, -2.0 * i / head_dim));
    for (std::ptrdiff_t i = 0; i < s.tokens; ++i) t.positions.push_back(s.first_position + i);
    t.cos.resize(static_cast<std::size_t>(s.tokens * P));
    t.sin.resize(t.cos.size());
    k::compute_angles(t.inv_freq.data(), P, t.positions.data(), s.tokens, 1.0, t.cos.data(), t.sin.data(), P);
  }
  return t;
}

// The textbook loop, in place, compiled with whatever flags this TU has.
template <class T>
void plain_rotate(k::pairing layout, T* x, std::ptrdiff_t rows, std::ptrdiff_t heads, const float* cos,
                  const float* sin) {
  constexpr int P = head_dim / 2;
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    T* row = x + r * head_dim;
    const float* c = cos + (r / heads) * P;
    const float* s = sin + (r / heads) * P;
    if (layout == k::pairing::half_split) {
      for (int i = 0; i < P; ++i) {
        const float a = static_cast<float>(row[i]), b = static_cast<float>(row[i + P]);
        row[i] = T(a * c[i] - b * s[i]);
        row[i + P] = T(a * s[i] + b * c[i]);
      }
    } else {
      for (int i = 0; i < P; ++i) {
        const float a = static_cast<float>(row[2 * i]), b = static_cast<float>(row[2 * i + 1]);
        row[2 * i] = T(a * c[i] - b * s[i]);
        row[2 * i + 1] = T(a * s[i] + b * c[i]);
      }
    }
  }
}

volatile float scale_factor = -1.0f;  // not a constant: the compiler cannot fold the anchor away

}  // namespace

// The anchors, written once over each ISA's operations (as the kernels are): an in-place scale and
// a streaming-store copy, 4 vectors per step, at the ISA the dispatcher runs the kernels with.
#define POSENC_BENCH_ANCHORS                                                                                     \
  void bench_scale(float* x, std::size_t n, float f) {                                                           \
    constexpr std::size_t L = lanes<float>;                                                                      \
    const auto vf = set(f);                                                                                      \
    std::size_t i = 0;                                                                                           \
    for (; i + 4 * L <= n; i += 4 * L) {                                                                         \
      const auto a = load(x + i), b = load(x + i + L), c = load(x + i + 2 * L), d = load(x + i + 3 * L);         \
      store(x + i, mul(a, vf)), store(x + i + L, mul(b, vf));                                                    \
      store(x + i + 2 * L, mul(c, vf)), store(x + i + 3 * L, mul(d, vf));                                        \
    }                                                                                                            \
    for (; i < n; ++i) x[i] *= f;                                                                                \
  }                                                                                                              \
  void bench_copy_nt(const float* src, float* dst, std::size_t n) {                                              \
    constexpr std::size_t L = lanes<float>;                                                                      \
    std::size_t i = 0;                                                                                           \
    for (; i + 4 * L <= n; i += 4 * L) {                                                                         \
      const auto a = load(src + i), b = load(src + i + L), c = load(src + i + 2 * L), d = load(src + i + 3 * L); \
      stream(dst + i, a), stream(dst + i + L, b), stream(dst + i + 2 * L, c), stream(dst + i + 3 * L, d);        \
    }                                                                                                            \
    for (; i < n; ++i) dst[i] = src[i];                                                                          \
    fence();                                                                                                     \
  }

// clang-format off
#if POSENC_HAS_X86_KERNELS
#include <posenc/kernels/ops/begin_avx2.inl>
namespace posenc::inline v0::kernels::inline POSENC_KERNELS_ABI::avx2 {
POSENC_BENCH_ANCHORS
}
#include <posenc/kernels/ops/end_target.inl>

#include <posenc/kernels/ops/begin_avx512.inl>
namespace posenc::inline v0::kernels::inline POSENC_KERNELS_ABI::avx512 {
POSENC_BENCH_ANCHORS
}
#include <posenc/kernels/ops/end_target.inl>
#endif
#if POSENC_HAS_NEON_KERNELS
#include <posenc/kernels/ops/begin_neon.inl>
namespace posenc::inline v0::kernels::inline POSENC_KERNELS_ABI::neon {
POSENC_BENCH_ANCHORS
}
#include <posenc/kernels/ops/end_target.inl>
#endif
// clang-format on

namespace {

void anchor_scale(float* x, std::size_t n) {
  const float f = scale_factor;
  switch (k::active_isa()) {
#if POSENC_HAS_X86_KERNELS
    case k::isa::avx512:
      return k::avx512::bench_scale(x, n, f);
    case k::isa::avx2:
      return k::avx2::bench_scale(x, n, f);
#endif
#if POSENC_HAS_NEON_KERNELS
    case k::isa::neon:
      return k::neon::bench_scale(x, n, f);
#endif
    default:
      for (std::size_t i = 0; i < n; ++i) x[i] *= f;
  }
}

void anchor_copy_nt(const float* src, float* dst, std::size_t n) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(dst) % 64 == 0;
  switch (aligned ? k::active_isa() : k::isa::scalar) {
#if POSENC_HAS_X86_KERNELS
    case k::isa::avx512:
      return k::avx512::bench_copy_nt(src, dst, n);
    case k::isa::avx2:
      return k::avx2::bench_copy_nt(src, dst, n);
#endif
    default:
      std::memcpy(dst, src, n * sizeof(float));
  }
}

constexpr std::string_view variant_names[] = {"kernel",       "parallel2",      "oop",    "otf",    "scalar", "plain",
                                              "anchor_scale", "anchor_copy_nt", "offset", "inline", "fused"};

template <class T>
void run(benchmark::State& state, const shape& s, k::pairing layout, const std::string& variant) {
  constexpr int P = head_dim / 2;
  const k::rope_geometry g{head_dim, head_dim, 0, layout};
  const table& tab = angles_for(s);
  const std::ptrdiff_t heads = s.heads + s.kv_heads;  // decode: q rows then k rows, one buffer
  const auto n = static_cast<std::size_t>(s.tokens * heads * head_dim);
  const std::size_t bytes = n * sizeof(T);
  auto [src, dst] = buffers<T>(n);
  const k::angle_rows<float> angles{tab.cos.data(), tab.sin.data(), P};
  const k::head_rows<T> x{src, s.tokens, heads, heads * head_dim, head_dim};
  const k::head_rows<T> q{src, s.tokens, s.heads, heads * head_dim, head_dim};
  const k::head_rows<T> kk{src + s.heads * head_dim, s.tokens, s.kv_heads, heads * head_dim, head_dim};
  const k::head_rows<const T> cx{src, s.tokens, heads, heads * head_dim, head_dim};
  const k::head_rows<T> y{dst, s.tokens, heads, heads * head_dim, head_dim};
  // The same rows 16 bytes past the 64-byte line (ggml's tensor data sits there).
  T* off = reinterpret_cast<T*>(reinterpret_cast<std::byte*>(src) + 16);
  const k::head_rows<T> ox{off, s.tokens, heads, heads * head_dim, head_dim};
  const k::head_rows<T> oq{off, s.tokens, s.heads, heads * head_dim, head_dim};
  const k::head_rows<T> ok{off + s.heads * head_dim, s.tokens, s.kv_heads, heads * head_dim, head_dim};

  // The variant as a number, so the timed loop compares integers, not strings.
  const auto v = static_cast<int>(std::find(std::begin(variant_names), std::end(variant_names), variant) -
                                  std::begin(variant_names));
  if (v == 10) k::set_arithmetic(k::arithmetic::fused);
  for (auto _ : state) {
    if (v == 0 /* kernel */ || v == 10 /* fused: kernel in the fused arithmetic */) {
      if (s.kv_heads > 0) {
        k::rotate_qk(g, q, kk, angles);
      } else if (state.threads() > 1) {
        const std::ptrdiff_t rows = s.tokens * heads, i = state.thread_index(), nt = state.threads();
        k::rotate_rows(g, cx, x, angles, k::rotation::forward, rows * i / nt, rows * (i + 1) / nt);
      } else {
        k::rotate(g, x, angles);
      }
    } else if (v == 1 /* parallel2 */) {
      k::rotate_parallel(g, cx, x, angles, k::rotation::forward, 2);
    } else if (v == 2 /* oop */) {
      k::rotate(g, cx, y, angles);
    } else if (v == 3 /* otf */) {
      if (s.kv_heads > 0) {
        k::rotate_qk(g, q, kk, tab.inv_freq.data(), tab.positions.data(), 1.0);
      } else {
        k::rotate_positions(g, x, tab.inv_freq.data(), tab.positions.data(), 1.0);
      }
    } else if (v == 4 /* scalar */) {
      k::scalar::rotate(g, cx, x, angles, k::rotation::forward);
    } else if (v == 5 /* plain */) {
      plain_rotate(layout, src, s.tokens * heads, heads, tab.cos.data(), tab.sin.data());
    } else if (v == 6 /* anchor_scale */) {
      anchor_scale(reinterpret_cast<float*>(src), bytes / sizeof(float));
    } else if (v == 7 /* anchor_copy_nt */) {
      anchor_copy_nt(reinterpret_cast<const float*>(src), reinterpret_cast<float*>(dst), bytes / sizeof(float));
    } else if (v == 8 /* offset */) {
      if (s.kv_heads > 0) {
        k::rotate_qk(g, oq, ok, angles);
      } else {
        k::rotate(g, ox, angles);
      }
    } else if (v == 9 /* inline */) {
      k::rotate_parallel(g, cx, x, angles, k::rotation::forward, 1);
    }
    benchmark::DoNotOptimize(src);
    benchmark::ClobberMemory();
  }
  k::set_arithmetic(k::arithmetic::exact);
  const auto share = static_cast<std::int64_t>(state.threads());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(bytes) / share);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n) / share);
  state.SetLabel(k::isa_name(k::active_isa()).data());
}

// The encoder's table entry (rope::rotate with a cos_sin_table) with each angle_source: the
// automatic choice against both explicit ones, in place, fp32. Shapes: decode (1 token x 40 heads
// at position 4095), long (32768 x 8), long1h (262144 x 1: angle rows as large as the head rows).
struct api_shape {
  const char* name;
  std::ptrdiff_t tokens, heads;
  std::int64_t first_position;
};
constexpr api_shape api_shapes[] = {{"decode", 1, 40, 4095}, {"long", 32768, 8, 0}, {"long1h", 262144, 1, 0}};

void run_api(benchmark::State& state, const api_shape& s, k::pairing layout, posenc::angle_source source) {
  const posenc::rope r(posenc::rope_config{.head_dim = head_dim, .theta = 500000.0, .layout = layout});
  const posenc::cos_sin_table<float> tab(r.base_frequencies(), 0, s.first_position + s.tokens);
  std::vector<std::int64_t> positions;
  for (std::ptrdiff_t i = 0; i < s.tokens; ++i) positions.push_back(s.first_position + i);
  const auto n = static_cast<std::size_t>(s.tokens * s.heads * head_dim);
  auto [src, dst] = buffers<float>(n);
  static_cast<void>(dst);
  const auto x = posenc::tensor_view<float>::bthd(src, 1, s.tokens, s.heads, head_dim);
  for (auto _ : state) {
    r.rotate(x, positions, tab, k::rotation::forward, source);
    benchmark::DoNotOptimize(src);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * sizeof(float)));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetLabel(k::isa_name(k::active_isa()).data());
}

const int registered_api = [] {
  for (const api_shape& s : api_shapes) {
    for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
      const std::string lname = layout == k::pairing::half_split ? "half_split" : "interleaved";
      for (auto [v, src] :
           {std::pair{"table", posenc::angle_source::table}, std::pair{"otf", posenc::angle_source::on_the_fly},
            std::pair{"auto", posenc::angle_source::automatic}}) {
        const std::string name = std::string("rope/api/") + s.name + "/fp32/" + lname + "/" + v;
        benchmark::RegisterBenchmark(name.c_str(), run_api, s, layout, src)->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return 0;
}();

const int registered = [] {
  for (const char* dtype : {"fp32", "bf16"}) {
    for (const shape& s : shapes) {
      if (std::string(s.name) == "mt" && std::string(dtype) == "bf16") continue;
      for (auto layout : {k::pairing::half_split, k::pairing::interleaved}) {
        const std::string lname = layout == k::pairing::half_split ? "half_split" : "interleaved";
        std::vector<std::string> variants{"kernel", "fused", "offset", "scalar", "plain", "anchor_scale"};
        if (s.kv_heads == 0 && std::string(s.name) != "mt") variants.insert(variants.end(), {"oop", "anchor_copy_nt"});
        variants.push_back("otf");
        if (std::string(s.name) == "mt") variants = {"kernel", "parallel2", "inline"};
        for (const std::string& v : variants) {
          const std::string name = std::string("rope/") + s.name + "/" + dtype + "/" + lname + "/" + v;
          auto* b = std::string(dtype) == "fp32"
                        ? benchmark::RegisterBenchmark(name.c_str(), run<float>, s, layout, v)
                        : benchmark::RegisterBenchmark(name.c_str(), run<bfloat16>, s, layout, v);
          // CPU time: the rates stay meaningful on a shared machine. Thread scaling needs wall time.
          b->Unit(benchmark::kMicrosecond);
          if (std::string(s.name) == "mt") b->UseRealTime();
          if (std::string(s.name) == "mt" && v == "kernel") b->Threads(1)->Threads(2);
        }
      }
    }
  }
  return 0;
}();

}  // namespace
