// bench/fast_attention_bench.cpp — posenc::attention against the limits of the machine, same run:
// an AVX-512 FMA-peak loop (compute limit), a read-bandwidth loop over the K+V bytes (decode limit),
// Eigen's materialised softmax(QK^T)V and the sdpa oracle. Counters: GFLOPs (2 Sq Sk D for QK^T
// plus 2 Sq Sk Dv for PV, halved for causal) and bytes/s (K+V read once). scripts/attention-ratios
// turns a JSON run into the table of docs/performance.md.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include <Eigen/Core>
#include <benchmark/benchmark.h>

#include <posenc/attention/attention.hpp>
#include <posenc/attention/fast/kernels.hpp>
#include <posenc/attention/fast/prefetch.hpp>
#include <posenc/attention/paged.hpp>
#include <posenc/attention/ragged.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/parallel.hpp>
#include <posenc/core/q8_0.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/q8_0.hpp>

#include "read_anchor.hpp"
#include "shapes.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Quoted shapes, or small ones in Debug builds and smoke runs (shapes.hpp).
const bool kSmoke = bench_smoke_shapes();
const std::int64_t kPrefill = kSmoke ? 256 : 4096, kCached = kSmoke ? 1024 : 32768, kMiB32 = kSmoke ? 8 : 256,
                   kMiB16 = kSmoke ? 4 : 128, kMiBq8 = kSmoke ? 2 : 68, kInCache = 512;
const std::int64_t kShort = kSmoke ? 256 : 4096, kMiB32Short = kSmoke ? 1 : 32, kMiB16Short = kSmoke ? 1 : 16;

namespace {

template <class T>
std::vector<T> filled(std::size_t n, float amp, std::uint32_t seed) {
  std::vector<T> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = T(amp * (static_cast<float>(x >> 8) / 8388608.0f - 1.0f));
  }
  return v;
}

posenc::thread_pool& pool(int threads) {
  static posenc::thread_pool one(1), two(2);
  return threads == 1 ? one : two;
}

/// How a sequence's blocks lie in the pool (the block_table rows of the paged benches).
enum class block_order {
  pool = 0,         // ids 0, 1, 2, ...: as a fresh pool hands out a prompt's blocks (read as one run)
  shuffled = 1,     // a fixed pseudo-random permutation: a pool that has served many sequences
  interleaved = 2,  // ids 0, 2, 4, ... of a pool twice as large: two sequences growing side by side
};

/// A block table of nb blocks in the given order (pool_blocks(nb, order) blocks in the pool).
std::vector<std::int32_t> block_table(std::ptrdiff_t nb, block_order order) {
  std::vector<std::int32_t> table(static_cast<std::size_t>(nb));
  std::iota(table.begin(), table.end(), 0);
  if (order == block_order::interleaved)
    for (std::int32_t& id : table) id *= 2;
  std::uint32_t x = 12345;
  for (std::size_t i = order == block_order::shuffled ? table.size() : 0; i > 1; --i) {
    x = x * 1664525u + 1013904223u;
    std::swap(table[i - 1], table[x % i]);
  }
  return table;
}
std::ptrdiff_t pool_blocks(std::ptrdiff_t nb, block_order order) {
  return order == block_order::interleaved ? 2 * nb : nb;
}

// ---- anchors ----

/// The read loops' buffer of `bytes`, filled once and kept for the next row of the same size: the rows of one
/// size (dozens of variants) do not each pay for faulting in and filling hundreds of MiB.
const std::vector<float>& read_buffer(std::size_t bytes) {
  static std::vector<float> buf;
  if (buf.size() != bytes / 4) {
    buf = std::vector<float>();
    buf = filled<float>(bytes / 4, 1, 3);
  }
  return buf;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"), noinline)) void fma_peak_loop(std::int64_t n) {
  const float x = 0.999f, y = 1e-4f;
  // 24 independent vfmadd231ps chains in registers (latency 4 x 2 pipes fully covered).
  asm volatile(
      "vbroadcastss %[x], %%zmm30\n\t"
      "vbroadcastss %[y], %%zmm31\n\t"
      "vxorps %%zmm0, %%zmm0, %%zmm0\n\t"
      "vxorps %%zmm1, %%zmm1, %%zmm1\n\t"
      "vxorps %%zmm2, %%zmm2, %%zmm2\n\t"
      "vxorps %%zmm3, %%zmm3, %%zmm3\n\t"
      "vxorps %%zmm4, %%zmm4, %%zmm4\n\t"
      "vxorps %%zmm5, %%zmm5, %%zmm5\n\t"
      "vxorps %%zmm6, %%zmm6, %%zmm6\n\t"
      "vxorps %%zmm7, %%zmm7, %%zmm7\n\t"
      "vxorps %%zmm8, %%zmm8, %%zmm8\n\t"
      "vxorps %%zmm9, %%zmm9, %%zmm9\n\t"
      "vxorps %%zmm10, %%zmm10, %%zmm10\n\t"
      "vxorps %%zmm11, %%zmm11, %%zmm11\n\t"
      "vxorps %%zmm12, %%zmm12, %%zmm12\n\t"
      "vxorps %%zmm13, %%zmm13, %%zmm13\n\t"
      "vxorps %%zmm14, %%zmm14, %%zmm14\n\t"
      "vxorps %%zmm15, %%zmm15, %%zmm15\n\t"
      "vxorps %%zmm16, %%zmm16, %%zmm16\n\t"
      "vxorps %%zmm17, %%zmm17, %%zmm17\n\t"
      "vxorps %%zmm18, %%zmm18, %%zmm18\n\t"
      "vxorps %%zmm19, %%zmm19, %%zmm19\n\t"
      "vxorps %%zmm20, %%zmm20, %%zmm20\n\t"
      "vxorps %%zmm21, %%zmm21, %%zmm21\n\t"
      "vxorps %%zmm22, %%zmm22, %%zmm22\n\t"
      "vxorps %%zmm23, %%zmm23, %%zmm23\n\t"
      "1:\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm0\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm1\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm2\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm3\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm4\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm5\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm6\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm7\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm8\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm9\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm10\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm11\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm12\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm13\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm14\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm15\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm16\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm17\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm18\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm19\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm20\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm21\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm22\n\t"
      "vfmadd231ps %%zmm30, %%zmm31, %%zmm23\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(n)
      : [x] "m"(x), [y] "m"(y)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm30",
        "xmm31", "cc");
}

// The same on AVX2 CPUs: 12 independent 256-bit chains (16 ymm registers).
__attribute__((target("avx2,fma"), noinline)) void fma_peak_loop_avx2(std::int64_t n) {
  const float x = 0.999f, y = 1e-4f;
  asm volatile(
      "vbroadcastss %[x], %%ymm14\n\t"
      "vbroadcastss %[y], %%ymm15\n\t"
      "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
      "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"
      "vxorps %%ymm2, %%ymm2, %%ymm2\n\t"
      "vxorps %%ymm3, %%ymm3, %%ymm3\n\t"
      "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
      "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
      "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
      "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
      "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
      "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
      "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
      "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
      "1:\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm10\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm11\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(n)
      : [x] "m"(x), [y] "m"(y)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm14",
        "xmm15", "cc");
}

bool have_avx512() {
  return posenc::kernels::isa_supported(posenc::kernels::isa::avx512);
}

/// One core's FMA peak at full width: AVX-512 (24 independent chains) where the CPU has it, else
/// AVX2 (12 chains); the `width` counter says which (512 or 256).
void BM_anchor_fma_peak(benchmark::State& state) {
  const std::int64_t n = 1 << 20;
  const bool w512 = have_avx512();
  for (auto _ : state) w512 ? fma_peak_loop(n) : fma_peak_loop_avx2(n);
  const double flops_per_iter = w512 ? 24.0 * 32 : 12.0 * 16;
  state.counters["GFLOPs"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(n) * flops_per_iter, benchmark::Counter::kIsRate);
  state.counters["width"] = w512 ? 512 : 256;
}

/// The FMA peak loop on range(0) threads at once (the pool's), wall time: the limit of the prefill rows
/// run on that many threads.
void BM_anchor_fma_peak_threads(benchmark::State& state) {
  const std::int64_t n = 1 << 20;
  const int threads = static_cast<int>(state.range(0));
  const bool w512 = have_avx512();
  auto task = [&](std::ptrdiff_t) { w512 ? fma_peak_loop(n) : fma_peak_loop_avx2(n); };
  for (auto _ : state) pool(threads).run(threads, posenc::task_ref(task));
  const double flops_per_iter = (w512 ? 24.0 * 32 : 12.0 * 16) * threads;
  state.counters["GFLOPs"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(n) * flops_per_iter, benchmark::Counter::kIsRate);
  state.counters["width"] = w512 ? 512 : 256;
}

// 24 independent vdpbf16ps chains (AVX512_BF16: 32 bf16 products summed pairwise into 16 fp32 lanes, 64
// FLOPs an instruction), as fma_peak_loop. Only called where CPUID reports AVX512_BF16.
__attribute__((target("avx512f,avx512bf16"), noinline)) void bfloat16_dot_peak_loop(std::int64_t n) {
  const float x = 0.999f;
  asm volatile(
      "vbroadcastss %[x], %%zmm30\n\t"
      "vmovaps %%zmm30, %%zmm31\n\t"
      "vxorps %%zmm0, %%zmm0, %%zmm0\n\t"
      "vxorps %%zmm1, %%zmm1, %%zmm1\n\t"
      "vxorps %%zmm2, %%zmm2, %%zmm2\n\t"
      "vxorps %%zmm3, %%zmm3, %%zmm3\n\t"
      "vxorps %%zmm4, %%zmm4, %%zmm4\n\t"
      "vxorps %%zmm5, %%zmm5, %%zmm5\n\t"
      "vxorps %%zmm6, %%zmm6, %%zmm6\n\t"
      "vxorps %%zmm7, %%zmm7, %%zmm7\n\t"
      "vxorps %%zmm8, %%zmm8, %%zmm8\n\t"
      "vxorps %%zmm9, %%zmm9, %%zmm9\n\t"
      "vxorps %%zmm10, %%zmm10, %%zmm10\n\t"
      "vxorps %%zmm11, %%zmm11, %%zmm11\n\t"
      "vxorps %%zmm12, %%zmm12, %%zmm12\n\t"
      "vxorps %%zmm13, %%zmm13, %%zmm13\n\t"
      "vxorps %%zmm14, %%zmm14, %%zmm14\n\t"
      "vxorps %%zmm15, %%zmm15, %%zmm15\n\t"
      "vxorps %%zmm16, %%zmm16, %%zmm16\n\t"
      "vxorps %%zmm17, %%zmm17, %%zmm17\n\t"
      "vxorps %%zmm18, %%zmm18, %%zmm18\n\t"
      "vxorps %%zmm19, %%zmm19, %%zmm19\n\t"
      "vxorps %%zmm20, %%zmm20, %%zmm20\n\t"
      "vxorps %%zmm21, %%zmm21, %%zmm21\n\t"
      "vxorps %%zmm22, %%zmm22, %%zmm22\n\t"
      "vxorps %%zmm23, %%zmm23, %%zmm23\n\t"
      "1:\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm0\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm1\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm2\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm3\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm4\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm5\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm6\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm7\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm8\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm9\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm10\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm11\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm12\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm13\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm14\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm15\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm16\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm17\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm18\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm19\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm20\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm21\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm22\n\t"
      "vdpbf16ps %%zmm30, %%zmm31, %%zmm23\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      : [n] "+r"(n)
      : [x] "m"(x)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",
        "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm30",
        "xmm31", "cc");
}

/// The vdpbf16ps peak on range(0) threads (wall time), counted as 64 FLOPs an instruction: the limit of
/// the bfloat16 dot-product prefill rows. Skipped where the CPU lacks AVX512_BF16.
void BM_anchor_bf16_dot_peak(benchmark::State& state) {
  if (!have_avx512() || !posenc::kernels::has_extension(posenc::kernels::extension::avx512_bf16)) {
    state.SkipWithError("no AVX512_BF16 on this CPU");
    return;
  }
  const std::int64_t n = 1 << 20;
  const int threads = static_cast<int>(state.range(0));
  auto task = [&](std::ptrdiff_t) { bfloat16_dot_peak_loop(n); };
  for (auto _ : state) pool(threads).run(threads, posenc::task_ref(task));
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(n) * 24.0 * 64 * threads,
                         benchmark::Counter::kIsRate);
}

/// Reads range(0) MiB (the decode K+V bytes) on range(1) threads, in 64 fixed pieces, with the
/// read_anchor variant of range(2) streams and range(3) bytes of prefetch distance.
void BM_anchor_read_bw(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const int threads = static_cast<int>(state.range(1)), streams = static_cast<int>(state.range(2));
  const std::ptrdiff_t prefetch = state.range(3);
  const std::vector<float>& buf = read_buffer(bytes);
  const std::size_t piece = buf.size() / 64;
  const bool w512 = have_avx512();
  for (auto _ : state) {
    float out[64];
    auto task = [&](std::ptrdiff_t i) {
      out[i] = read_anchor::read(w512, streams, buf.data() + static_cast<std::size_t>(i) * piece, piece, prefetch);
    };
    pool(threads).run(64, posenc::task_ref(task));
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(bytes),
                                                 benchmark::Counter::kIsRate);
  state.counters["width"] = w512 ? 512 : 256;
}

/// The read loop in the decode kernel's order over a cache of range(0) MiB (half K, half V, 32768 tokens in
/// a bench build) in blocks of range(2) tokens: for each 64-token key tile, its K rows, then its V rows, block
/// by block where the tile spans blocks. The block table is shuffled (range(3) = 1) or in pool order (0);
/// one block of the whole length is a contiguous cache. range(1) threads (64 fixed runs of tiles), the
/// read_anchor variant of range(4) streams and range(5) bytes of prefetch distance, prefetches crossing
/// into the next piece. Against the contiguous order it is what the memory system charges for the
/// blocks; a paged decode row against it, what the kernel adds.
void BM_anchor_read_paged(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const int threads = static_cast<int>(state.range(1)), streams = static_cast<int>(state.range(4));
  const std::ptrdiff_t bs = state.range(2), prefetch = state.range(5), tile = 64;
  const std::vector<float>& buf = read_buffer(bytes);
  const auto row = static_cast<std::ptrdiff_t>(buf.size() / 2 / kCached);  // floats per token (all kv heads)
  const std::vector<std::int32_t> table = block_table(kCached / bs, static_cast<block_order>(state.range(3)));
  const std::ptrdiff_t chunk = std::min(bs, tile);  // tokens per piece: the tile's part in one block
  std::vector<const float*> pieces;
  for (std::ptrdiff_t j0 = 0; j0 < kCached; j0 += tile)
    for (const float* base : {buf.data(), buf.data() + buf.size() / 2})
      for (std::ptrdiff_t a = j0; a < j0 + tile; a += chunk)
        pieces.push_back(base + (table[static_cast<std::size_t>(a / bs)] * bs + a % bs) * row);
  pieces.push_back(pieces.back());  // the last piece's successor: a prefetch that lands in it is harmless
  const std::size_t run = (pieces.size() - 1) / 64, n = static_cast<std::size_t>(chunk * row);
  const bool w512 = have_avx512();
  for (auto _ : state) {
    float out[64];
    auto task = [&](std::ptrdiff_t i) {
      float sum = 0;
      for (std::size_t j = static_cast<std::size_t>(i) * run; j < static_cast<std::size_t>(i + 1) * run; ++j)
        sum += read_anchor::read_chained(w512, streams, pieces[j], n, prefetch, pieces[j + 1]);
      out[i] = sum;
    };
    pool(threads).run(64, posenc::task_ref(task));
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(run * 64 * n * 4), benchmark::Counter::kIsRate);
  state.counters["width"] = w512 ? 512 : 256;
}

/// The read loop in the head-major decode's order over a cache of range(0) MiB (half K, half V, each
/// [8 kv heads][32768 tokens][dim] in a bench build): kv head by kv head (one work item each), for each
/// key tile of `tile` tokens (the decode's 256 in BM_anchor_read_head_major) that head's K rows, then its
/// V rows (two contiguous runs read in turns). range(1) threads (64 fixed runs of tiles), the read_anchor
/// variant of range(2) streams and range(3) bytes of prefetch distance, prefetches crossing into the next
/// piece. The token-major decode's order is BM_anchor_read_paged's contiguous cache (one block of the
/// whole length).
void read_head_major(benchmark::State& state, std::ptrdiff_t tile) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 20;
  const int threads = static_cast<int>(state.range(1)), streams = static_cast<int>(state.range(2));
  const std::ptrdiff_t prefetch = state.range(3), heads = 8;
  const std::vector<float>& buf = read_buffer(bytes);
  const auto row = static_cast<std::ptrdiff_t>(buf.size() / 2 / kCached / heads);  // floats per token of a head
  std::vector<const float*> pieces;
  for (std::ptrdiff_t g = 0; g < heads; ++g)
    for (std::ptrdiff_t j0 = 0; j0 < kCached; j0 += tile)
      for (const float* base : {buf.data(), buf.data() + buf.size() / 2})
        pieces.push_back(base + (g * kCached + j0) * row);
  pieces.push_back(pieces.back());
  const std::size_t run = (pieces.size() - 1) / 64, n = static_cast<std::size_t>(tile * row);
  const bool w512 = have_avx512();
  for (auto _ : state) {
    float out[64];
    auto task = [&](std::ptrdiff_t i) {
      float sum = 0;
      for (std::size_t j = static_cast<std::size_t>(i) * run; j < static_cast<std::size_t>(i + 1) * run; ++j)
        sum += read_anchor::read_chained(w512, streams, pieces[j], n, prefetch, pieces[j + 1]);
      out[i] = sum;
    };
    pool(threads).run(64, posenc::task_ref(task));
    benchmark::DoNotOptimize(out);
  }
  state.counters["bytes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(run * 64 * n * 4), benchmark::Counter::kIsRate);
  state.counters["width"] = w512 ? 512 : 256;
}

void BM_anchor_read_head_major(benchmark::State& state) {
  read_head_major(state, std::min<std::ptrdiff_t>(256, kCached / 8));
}

/// As BM_anchor_read_head_major with key tiles of range(4) tokens, read as 1 or 4 streams (the decode
/// reads its 256-token tiles as four runs side by side); not an anchor of any target.
void BM_anchor_read_head_major_tile(benchmark::State& state) {
  read_head_major(state, std::min<std::ptrdiff_t>(state.range(4), kCached / 8));  // >= 64 runs in a smoke build
}

/// A model of the fp32 decode kernel's memory order with no arithmetic: the same K/V reads and software
/// prefetches (tile-inl.hpp: qk_by_token, pv_by_head) over a token-major [token][8 heads][128] cache in
/// 64-token tiles, each vector added to a sum instead of multiplied, with the kernels' prefetch hint
/// (Locality 3, into L1 and L2, where fast/prefetch.hpp picks it, else 2). Not an anchor of any target:
/// its rate against the read loop is what the order alone costs; the kernel's against it, the arithmetic.
template <int Locality>
__attribute__((target("avx512f"), noinline)) float decode_order_model(const float* K, const float* V,
                                                                      std::ptrdiff_t L) {
  constexpr std::ptrdiff_t H = 8, D = 128, T = 64, ks = H * D, ahead = 16;
  auto pf = [](const float* a, std::ptrdiff_t bytes) {  // as prefetch_l2: every line of the range
    for (std::ptrdiff_t x = 0; x < bytes; x += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(a) + x, 0, Locality);
  };
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (std::ptrdiff_t j0 = 0; j0 < L; j0 += T) {
    const float *kt = K + j0 * ks, *vt = V + j0 * ks;
    for (std::ptrdiff_t j = 0; j < T; j += 4)  // QK^T: four tokens, head by head; K ahead, this block's V
      for (std::ptrdiff_t g = 0; g < H; ++g) {
        pf(kt + (j + ahead) * ks + g * 4 * ks / H, 4 * ks * 4 / H);
        for (std::ptrdiff_t t = 0; t < 4; ++t) pf(vt + (j + t) * ks + g * D, D * 4);
        for (std::ptrdiff_t t = 0; t < 4; ++t)
          for (std::ptrdiff_t d = 0; d < D; d += 32) {
            s0 = _mm512_add_ps(s0, _mm512_loadu_ps(kt + (j + t) * ks + g * D + d));
            s1 = _mm512_add_ps(s1, _mm512_loadu_ps(kt + (j + t) * ks + g * D + d + 16));
          }
      }
    for (std::ptrdiff_t g = 0; g < H; ++g)  // PV: head by head, 64 columns at a time; the next tile's K
      for (std::ptrdiff_t c = 0; c < D; c += 64)
        for (std::ptrdiff_t j = 0; j < T; ++j) {
          if (c == 0 && j0 + T < L) pf(kt + T * ks + g * T * ks / H + j * ks / T, ks * 4 / T);
          const float* r = vt + j * ks + g * D + c;
          s0 = _mm512_add_ps(s0, _mm512_loadu_ps(r)), s1 = _mm512_add_ps(s1, _mm512_loadu_ps(r + 16));
          s2 = _mm512_add_ps(s2, _mm512_loadu_ps(r + 32)), s3 = _mm512_add_ps(s3, _mm512_loadu_ps(r + 48));
        }
  }
  alignas(64) float r[16];
  _mm512_store_ps(r, _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  return r[0] + r[15];
}

/// The same cache, tiles and prefetch hint read in address order instead: per 64-token tile every K row
/// token by token (all 8 heads of a token, then the next token), then every V row the same way, each
/// token's rows asked for `ahead` tokens before they are read. A memory order for a decode kernel whose
/// QK^T and PV take a token's heads in turn (one key row against its head's 4 query rows, one value row
/// into its head's 4 output rows), which the kernels do not do today; its rate against the read loop is
/// what such an order would cost the stream.
template <int Locality>
__attribute__((target("avx512f"), noinline)) float decode_address_order_model(const float* K, const float* V,
                                                                              std::ptrdiff_t L) {
  constexpr std::ptrdiff_t H = 8, D = 128, T = 64, ks = H * D, ahead = 2;
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (std::ptrdiff_t j0 = 0; j0 < L; j0 += T)
    for (const float* base : {K + j0 * ks, V + j0 * ks})
      for (std::ptrdiff_t j = 0; j < T; ++j)
        for (std::ptrdiff_t g = 0; g < H; ++g) {
          const float* r = base + j * ks + g * D;
          for (std::ptrdiff_t x = 0; x < D * 4; x += 64)  // as prefetch_l2: every line of the row
            __builtin_prefetch(reinterpret_cast<const char*>(r + ahead * ks) + x, 0, Locality);
          for (std::ptrdiff_t d = 0; d < D; d += 64) {
            s0 = _mm512_add_ps(s0, _mm512_loadu_ps(r + d)), s1 = _mm512_add_ps(s1, _mm512_loadu_ps(r + d + 16));
            s2 = _mm512_add_ps(s2, _mm512_loadu_ps(r + d + 32)), s3 = _mm512_add_ps(s3, _mm512_loadu_ps(r + d + 48));
          }
        }
  alignas(64) float r[16];
  _mm512_store_ps(r, _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  return r[0] + r[15];
}

/// A memory-order model (decode_order_model, decode_address_order_model) on the decode shape's fp32 K+V
/// (range(0) tokens), one thread, with the kernels' prefetch hint: `l1` is the model at Locality 3, `l2`
/// at 2.
using order_model = float (*)(const float*, const float*, std::ptrdiff_t);
void run_order_model(benchmark::State& state, order_model l1_model, order_model l2_model) {
  const auto L = static_cast<std::ptrdiff_t>(state.range(0));
  if (!have_avx512()) {
    state.SkipWithError("the decode-order model is written in AVX-512; this CPU has no AVX-512");
    return;
  }
  const auto k = filled<float>(static_cast<std::size_t>(L * 8 * 128), 1, 2), v = filled<float>(k.size(), 1, 3);
  const order_model model = posenc::detail::decode_prefetch_l1() ? l1_model : l2_model;
  for (auto _ : state) benchmark::DoNotOptimize(model(k.data(), v.data(), L));
  state.counters["bytes/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(k.size() * sizeof(float)),
                         benchmark::Counter::kIsRate);
}
void BM_model_decode_order(benchmark::State& state) {
  run_order_model(state, &decode_order_model<3>, &decode_order_model<2>);
}
void BM_model_decode_address_order(benchmark::State& state) {
  run_order_model(state, &decode_address_order_model<3>, &decode_address_order_model<2>);
}
#endif

// ---- prefill: causal, one head, Sq = Sk = S, D = 128 ----

constexpr std::ptrdiff_t kD = 128;

template <class E>
void prefill(benchmark::State& state, const E& enc, int threads, std::optional<double> softcap = {}) {
  const auto S = static_cast<std::ptrdiff_t>(state.range(0));
  const auto q = filled<float>(static_cast<std::size_t>(S * kD), 1, 1), k = filled<float>(q.size(), 1, 2),
             v = filled<float>(q.size(), 1, 3);
  std::vector<float> out(q.size());
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = pool(threads).as_parallel_for(), .workspace = &ws};
  using cv = posenc::tensor_view<const float>;
  for (auto _ : state) {
    posenc::attention(cv::thd(q.data(), S, 1, kD), cv::thd(k.data(), S, 1, kD), cv::thd(v.data(), S, 1, kD),
                      posenc::tensor_view<float>::thd(out.data(), S, 1, kD), enc,
                      {.causal = true, .logit_softcap = softcap}, f);
    benchmark::DoNotOptimize(out.data());
  }
  const double flops = 4.0 * static_cast<double>(S) * static_cast<double>(S) * kD / 2;
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}

/// Prefill as an engine runs it: causal S x S (S = range(0)), 32 q / 8 kv heads, D 128, on range(1) threads
/// (wall time), K and V stored as T and q holding values of T (widened to the fp32 q the call takes).
/// bfloat16 takes its dot-product kernels where the CPU has AVX512_BF16 unless !bf16_dot (the exact ones).
/// cold: every call without a workspace (it grows its own scratch, as a first call does).
template <class T>
void prefill_gqa(benchmark::State& state, bool bf16_dot = true, bool cold = false) {
  const auto S = static_cast<std::ptrdiff_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  constexpr std::ptrdiff_t Hq = 32, Hkv = 8;
  const auto qt = filled<T>(static_cast<std::size_t>(S * Hq * kD), 1, 1);
  std::vector<float> q(qt.size()), out(qt.size());
  std::transform(qt.begin(), qt.end(), q.begin(), [](T x) { return static_cast<float>(x); });
  const auto k = filled<T>(static_cast<std::size_t>(S * Hkv * kD), 1, 2), v = filled<T>(k.size(), 1, 3);
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{
      .executor = pool(threads).as_parallel_for(), .workspace = cold ? nullptr : &ws, .bf16_dot_products = bf16_dot};
  using tv = posenc::tensor_view<const T>;
  const auto call = [&] {
    posenc::attention(posenc::tensor_view<const float>::thd(q.data(), S, Hq, kD), tv::thd(k.data(), S, Hkv, kD),
                      tv::thd(v.data(), S, Hkv, kD), posenc::tensor_view<float>::thd(out.data(), S, Hq, kD),
                      posenc::no_position{}, {.causal = true}, f);
  };
  // One untimed call grows the workspace: the rows time the calls an engine makes with its workspace
  // grown, since a second or so per call leaves room for one iteration only (the cold rows time the
  // first call).
  if (!cold) call();
  for (auto _ : state) {
    call();
    benchmark::DoNotOptimize(out.data());
  }
  const double flops = 4.0 * static_cast<double>(S) * static_cast<double>(S) * kD / 2 * Hq;
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}
void BM_prefill_gqa_fp32(benchmark::State& s) {
  prefill_gqa<float>(s);
}
/// bfloat16 K/V on the AVX512_BF16 dot products (the default where the CPU has them).
void BM_prefill_gqa_bf16_dot(benchmark::State& s) {
  prefill_gqa<posenc::bfloat16>(s);
}
/// The first call (no workspace): fp32 and bfloat16 on its dot products.
void BM_prefill_gqa_fp32_cold(benchmark::State& s) {
  prefill_gqa<float>(s, true, true);
}
void BM_prefill_gqa_bf16_dot_cold(benchmark::State& s) {
  prefill_gqa<posenc::bfloat16>(s, true, true);
}
/// bfloat16 K/V on the exact kernels (fast_attention_options::bf16_dot_products = false).
void BM_prefill_gqa_bf16(benchmark::State& s) {
  prefill_gqa<posenc::bfloat16>(s, false);
}
/// float16 K/V (widened to fp32 once per tile).
void BM_prefill_gqa_f16(benchmark::State& s) {
  prefill_gqa<posenc::float16>(s);
}

posenc::t5_bias make_t5() {
  const auto t = filled<double>(32, 2, 7);
  return posenc::t5_bias({.num_buckets = 32, .max_distance = 128, .bidirectional = false, .num_heads = 1}, t);
}
posenc::shaw_relative make_shaw() {
  const auto t = filled<double>(41 * kD, 0.5, 8), u = filled<double>(41 * kD, 0.5, 9);
  return posenc::shaw_relative(posenc::shaw_relative_config::symmetric(20, kD), t, u);
}

void BM_prefill_none(benchmark::State& s) {
  prefill(s, posenc::no_position{}, 1);
}
/// Gemma 2's logit soft-capping (cap 50) on the BM_prefill_none problem: the cost of the tanh pass.
void BM_prefill_none_softcap(benchmark::State& s) {
  prefill(s, posenc::no_position{}, 1, 50.0);
}
void BM_prefill_alibi(benchmark::State& s) {
  prefill(s, posenc::alibi({.num_heads = 1}), 1);
}
void BM_prefill_t5(benchmark::State& s) {
  prefill(s, make_t5(), 1);
}
void BM_prefill_shaw_kv(benchmark::State& s) {
  prefill(s, make_shaw(), 1);
}
// The thread-scaling pair: wall time, both on the two-thread pool's sibling of one thread.
void BM_prefill_none_1thread(benchmark::State& s) {
  prefill(s, posenc::no_position{}, 1);
}
void BM_prefill_none_2threads(benchmark::State& s) {
  prefill(s, posenc::no_position{}, 2);
}

/// Eigen's materialised softmax(QK^T)V on the same causal problem (full S x S matrix, masked).
void BM_prefill_eigen(benchmark::State& state) {
  const auto S = static_cast<Eigen::Index>(state.range(0));
  using M = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const auto qv = filled<float>(static_cast<std::size_t>(S * kD), 1, 1), kv = filled<float>(qv.size(), 1, 2),
             vv = filled<float>(qv.size(), 1, 3);
  const Eigen::Map<const M> Q(qv.data(), S, kD), K(kv.data(), S, kD), V(vv.data(), S, kD);
  M P(S, S), O(S, kD);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kD));
  for (auto _ : state) {
    P.noalias() = (Q * K.transpose()) * scale;
    for (Eigen::Index i = 0; i < S; ++i) {
      auto row = P.row(i);
      for (Eigen::Index j = i + 1; j < S; ++j) row(j) = -std::numeric_limits<float>::infinity();
      const float m = row.maxCoeff();
      row = (row.array() - m).exp();
      row /= row.sum();
    }
    O.noalias() = P * V;
    benchmark::DoNotOptimize(O.data());
  }
  const double flops = 4.0 * static_cast<double>(S) * static_cast<double>(S) * kD / 2;
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}

/// The oracle on the same problem (double accumulation, one materialised row at a time).
void BM_prefill_sdpa(benchmark::State& state) {
  const auto S = static_cast<std::ptrdiff_t>(state.range(0));
  const auto q = filled<float>(static_cast<std::size_t>(S * kD), 1, 1), k = filled<float>(q.size(), 1, 2),
             v = filled<float>(q.size(), 1, 3);
  std::vector<float> out(q.size());
  using cv = posenc::tensor_view<const float>;
  for (auto _ : state) {
    posenc::sdpa(cv::thd(q.data(), S, 1, kD), cv::thd(k.data(), S, 1, kD), cv::thd(v.data(), S, 1, kD),
                 posenc::tensor_view<float>::thd(out.data(), S, 1, kD), posenc::no_position{}, {.causal = true});
    benchmark::DoNotOptimize(out.data());
  }
  const double flops = 4.0 * static_cast<double>(S) * static_cast<double>(S) * kD / 2;
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}

// ---- decode: one token, Hq = 32, Hkv = 8, D = 128, range(0) cached tokens ----

/// K/V layouts of a decode cache: token-major [token][head][dim] (llama.cpp, vLLM's blocks, posenc's kv_cache) or
/// head-major [head][token][dim] (Hugging Face's [batch, heads, seq, dim]).
enum class cache_layout { token_major, head_major };

template <class T>
void decode(benchmark::State& state, bool bf16_dot = false, cache_layout layout = cache_layout::token_major,
            std::optional<double> softcap = {}) {
  const auto L = static_cast<std::ptrdiff_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  constexpr std::ptrdiff_t Hq = 32, Hkv = 8;
  const auto q = filled<float>(Hq * kD, 1, 1);
  const auto k = filled<T>(static_cast<std::size_t>(L * Hkv * kD), 1, 2), v = filled<T>(k.size(), 1, 3);
  std::vector<float> out(q.size());
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{
      .executor = pool(threads).as_parallel_for(), .workspace = &ws, .bf16_dot_products = bf16_dot};
  using tv = posenc::tensor_view<const T>;
  for (auto _ : state) {
    const bool hm = layout == cache_layout::head_major;
    const tv kv = hm ? tv::bhtd(k.data(), 1, Hkv, L, kD) : tv::thd(k.data(), L, Hkv, kD),
             vv = hm ? tv::bhtd(v.data(), 1, Hkv, L, kD) : tv::thd(v.data(), L, Hkv, kD);
    posenc::attention(posenc::tensor_view<const float>::thd(q.data(), 1, Hq, kD), kv, vv,
                      posenc::tensor_view<float>::thd(out.data(), 1, Hq, kD), posenc::no_position{},
                      {.causal = true, .logit_softcap = softcap}, f);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(k.size() * sizeof(T)),
                         benchmark::Counter::kIsRate);
}

void BM_decode_fp32(benchmark::State& s) {
  decode<float>(s);
}
/// BM_decode_fp32 with Gemma 2's logit soft-capping (cap 50).
void BM_decode_fp32_softcap(benchmark::State& s) {
  decode<float>(s, false, cache_layout::token_major, 50.0);
}
/// The same with a cap of 0.1, below this bench's logits: every vector of scores takes tanh's exp
/// form (the worst case; under cap 50 these logits, of order 0.3, stay on its polynomial).
void BM_decode_fp32_softcap_saturated(benchmark::State& s) {
  decode<float>(s, false, cache_layout::token_major, 0.1);
}
/// bfloat16 K/V on the exact kernels (fast_attention_options::bf16_dot_products = false).
void BM_decode_bf16(benchmark::State& s) {
  decode<posenc::bfloat16>(s);
}
/// bfloat16 K/V on AVX512_BF16 dot products (fast_attention_options::bf16_dot_products, the default;
/// the exact kernels where the CPU lacks them).
void BM_decode_bf16_dot(benchmark::State& s) {
  decode<posenc::bfloat16>(s, true);
}
/// float16 K/V (converted to fp32 in the tiles: F16C / AVX-512 conversions).
void BM_decode_f16(benchmark::State& s) {
  decode<posenc::float16>(s);
}
void BM_decode_f16_head_major(benchmark::State& s) {
  decode<posenc::float16>(s, false, cache_layout::head_major);
}
/// The same calls on a head-major cache.
void BM_decode_fp32_head_major(benchmark::State& s) {
  decode<float>(s, false, cache_layout::head_major);
}
void BM_decode_bf16_dot_head_major(benchmark::State& s) {
  decode<posenc::bfloat16>(s, true, cache_layout::head_major);
}

/// BM_decode_fp32's (T = float) or BM_decode_bf16_dot's problem on a paged cache: blocks of range(2)
/// tokens in the block_order range(3) (shuffled: the target row; in pool order the blocks read as one
/// run; interleaved: block by block with short jumps forward), read in place (a 64-key tile spanning
/// blocks of 16 that are not one run goes block by block).
template <class T>
void decode_paged(benchmark::State& state) {
  const auto L = static_cast<std::ptrdiff_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  const auto bs = static_cast<std::ptrdiff_t>(state.range(2));
  constexpr std::ptrdiff_t Hq = 32, Hkv = 8;
  const std::ptrdiff_t nb = (L + bs - 1) / bs;
  const auto q = filled<float>(Hq * kD, 1, 1);
  const auto order = static_cast<block_order>(state.range(3));
  const std::ptrdiff_t np = pool_blocks(nb, order);
  const auto k = filled<T>(static_cast<std::size_t>(np * bs * Hkv * kD), 1, 2), v = filled<T>(k.size(), 1, 3);
  const std::vector<std::int32_t> table = block_table(nb, order);
  const std::vector<std::int32_t> lengths{static_cast<std::int32_t>(L)};
  std::vector<float> out(q.size());
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = pool(threads).as_parallel_for(), .workspace = &ws};
  using tv = posenc::tensor_view<const T>;
  const posenc::paged_kv<T> kv{.k_blocks = tv::bthd(k.data(), np, bs, Hkv, kD),
                               .v_blocks = tv::bthd(v.data(), np, bs, Hkv, kD),
                               .block_table = table,
                               .blocks_per_sequence = nb,
                               .lengths = lengths};
  for (auto _ : state) {
    posenc::attention(posenc::tensor_view<const float>::bthd(q.data(), 1, 1, Hq, kD), kv,
                      posenc::tensor_view<float>::bthd(out.data(), 1, 1, Hq, kD), posenc::no_position{},
                      {.causal = true}, f);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(L * Hkv * kD) * sizeof(T),
                         benchmark::Counter::kIsRate);
}
void BM_decode_fp32_paged(benchmark::State& s) {
  decode_paged<float>(s);
}
void BM_decode_bf16_dot_paged(benchmark::State& s) {
  decode_paged<posenc::bfloat16>(s);
}

/// The two in-place fp32 decode passes alone, as decode_item calls them on one 64-key tile of a token-major
/// cache (8 kv heads, 4 query rows each, D 128), cycling over range(1) tiles (1: K and V in L2; 64: in L3):
/// range(0) = 0 QK^T, 1 QK^T with the V prefetches the DRAM rows issue beside it, 2 PV. ns per key and kv
/// head (the s/key/head counter); a core at f GHz needs 16 / f ns for a pass's 32 multiply-adds at two a cycle.
void BM_decode_pass(benchmark::State& state) {
  const auto pass = state.range(0), tiles = state.range(1);
  constexpr int D = 128, Rg = 4, heads = 8, n = 64;
  constexpr std::ptrdiff_t ks = heads * D;
  const posenc::kernels::storage_kernels<float>& kern = posenc::kernels::active_attention_kernels().f32;
  const auto q = filled<float>(heads * Rg * D, 1, 1);
  const auto k = filled<float>(static_cast<std::size_t>(tiles * n * ks), 1, 2), v = filled<float>(k.size(), 1, 3);
  std::vector<float> s(heads * Rg * n, 0.01f), o(heads * Rg * D);
  std::vector<const float*> rows(heads * Rg);
  for (int r = 0; r < heads * Rg; ++r) rows[static_cast<std::size_t>(r)] = q.data() + r * D;
  std::ptrdiff_t t = 0;
  for (auto _ : state) {
    const float *kt = k.data() + t * n * ks, *vt = v.data() + t * n * ks;
    if (pass == 2)
      kern.pv({.p = {s.data(), n}, .per_head = Rg, .heads = heads, .dim = D, .o = {o.data(), D}}, {vt, ks, D, n});
    else
      kern.qk({.q = {rows.data(), Rg, heads, D},
               .scale = 0.1f,
               .s = {s.data(), n},
               .v = pass == 1 ? vt : nullptr,
               .v_token_bytes = ks * 4,
               .v_head_bytes = D * 4,
               .v_row_bytes = D * 4},
              {kt, ks, D, n});
    benchmark::DoNotOptimize(s.data());
    benchmark::DoNotOptimize(o.data());
    t = t + 1 == tiles ? 0 : t + 1;
  }
  state.counters["s/key/head"] = benchmark::Counter(static_cast<double>(state.iterations()) * n * heads,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// A prefill chunk as an engine runs it: range(0) / 8 new tokens, the last of a sequence of range(0), attending
/// causally to all of it (Hq 32, Hkv 8, fp32, one thread), on a paged cache in blocks of range(1) tokens in a shuffled
/// order of the pool, or (range(1) = 0) on the contiguous cache holding the same tokens. The first call's outputs are
/// compared bit for bit with the contiguous call's (the paged contract), so a row that runs measured the right thing.
void BM_prefill_chunk(benchmark::State& state) {
  const auto L = static_cast<std::ptrdiff_t>(state.range(0)), Sq = L / 8,
             bs = static_cast<std::ptrdiff_t>(state.range(1));
  constexpr std::ptrdiff_t Hq = 32, Hkv = 8, row = Hkv * kD;
  const auto q = filled<float>(static_cast<std::size_t>(Sq * Hq * kD), 1, 1);
  const auto k = filled<float>(static_cast<std::size_t>(L * row), 1, 2), v = filled<float>(k.size(), 1, 3);
  std::vector<float> want(q.size()), out(q.size());
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = pool(1).as_parallel_for(), .workspace = &ws};
  using tv = posenc::tensor_view<const float>;
  using ov = posenc::tensor_view<float>;
  const auto contiguous = [&](float* o) {
    posenc::attention(tv::thd(q.data(), Sq, Hq, kD), tv::thd(k.data(), L, Hkv, kD), tv::thd(v.data(), L, Hkv, kD),
                      ov::thd(o, Sq, Hq, kD), posenc::no_position{}, {.causal = true}, f);
  };
  contiguous(want.data());
  const std::ptrdiff_t b = std::max<std::ptrdiff_t>(bs, 1), nb = (L + b - 1) / b;
  const std::vector<std::int32_t> table = block_table(nb, block_order::shuffled), lengths{static_cast<std::int32_t>(L)};
  std::vector<float> kp(static_cast<std::size_t>(nb * b * row)), vp(kp.size());
  for (std::ptrdiff_t j = 0; j < L; ++j) {  // token j into slot j % b of its block
    const auto at = static_cast<std::ptrdiff_t>(table[static_cast<std::size_t>(j / b)]) * b + j % b;
    std::copy_n(k.begin() + j * row, row, kp.begin() + at * row);
    std::copy_n(v.begin() + j * row, row, vp.begin() + at * row);
  }
  const posenc::paged_kv<float> kv{.k_blocks = tv::bthd(kp.data(), nb, b, Hkv, kD),
                                   .v_blocks = tv::bthd(vp.data(), nb, b, Hkv, kD),
                                   .block_table = table,
                                   .blocks_per_sequence = nb,
                                   .lengths = lengths};
  const auto paged = [&](float* o) {
    posenc::attention(tv::bthd(q.data(), 1, Sq, Hq, kD), kv, ov::bthd(o, 1, Sq, Hq, kD), posenc::no_position{},
                      {.causal = true}, f);
  };
  if (bs > 0) {
    paged(out.data());
    if (std::memcmp(out.data(), want.data(), out.size() * sizeof(float)) != 0) {
      state.SkipWithError("the paged chunk differs from the contiguous call");
      return;
    }
  }
  for (auto _ : state) {
    if (bs > 0)
      paged(out.data());
    else
      contiguous(out.data());
    benchmark::DoNotOptimize(out.data());
  }
  const double flops = 4.0 * static_cast<double>(Sq) * (static_cast<double>(L) - static_cast<double>(Sq) / 2) *
                       static_cast<double>(Hq * kD);
  state.counters["GFLOPs"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * flops, benchmark::Counter::kIsRate);
}

/// A serving step: one causal prefill of range(0) / 8 tokens and 7 decode steps over range(0) / 8 x 4
/// cached tokens (Hq 32, Hkv 8), as one ragged call (ragged = 1) or one call per sequence (0).
void ragged_mix(benchmark::State& state, bool ragged) {
  const auto P = static_cast<std::int32_t>(state.range(0) / 8), C = 4 * P;
  const int threads = static_cast<int>(state.range(1));
  constexpr std::ptrdiff_t Hq = 32, Hkv = 8;
  std::vector<std::int32_t> cq{0, P}, ck{0, P};
  for (int s = 0; s < 7; ++s) cq.push_back(cq.back() + 1), ck.push_back(ck.back() + C);
  const auto q = filled<float>(static_cast<std::size_t>(cq.back() * Hq * kD), 1, 1);
  const auto k = filled<float>(static_cast<std::size_t>(ck.back() * Hkv * kD), 1, 2), v = filled<float>(k.size(), 1, 3);
  std::vector<float> out(q.size());
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{.executor = pool(threads).as_parallel_for(), .workspace = &ws};
  using tv = posenc::tensor_view<const float>;
  using ov = posenc::tensor_view<float>;
  for (auto _ : state) {
    if (ragged) {
      posenc::attention(tv::thd(q.data(), cq.back(), Hq, kD), tv::thd(k.data(), ck.back(), Hkv, kD),
                        tv::thd(v.data(), ck.back(), Hkv, kD), ov::thd(out.data(), cq.back(), Hq, kD),
                        posenc::ragged_batch{cq, ck}, posenc::no_position{}, {.causal = true}, f);
    } else {
      for (std::size_t s = 0; s + 1 < cq.size(); ++s)
        posenc::attention(tv::thd(q.data() + cq[s] * Hq * kD, cq[s + 1] - cq[s], Hq, kD),
                          tv::thd(k.data() + ck[s] * Hkv * kD, ck[s + 1] - ck[s], Hkv, kD),
                          tv::thd(v.data() + ck[s] * Hkv * kD, ck[s + 1] - ck[s], Hkv, kD),
                          ov::thd(out.data() + cq[s] * Hq * kD, cq[s + 1] - cq[s], Hq, kD), posenc::no_position{},
                          {.causal = true}, f);
    }
    benchmark::DoNotOptimize(out.data());
  }
}
void BM_ragged_mix(benchmark::State& s) {
  ragged_mix(s, true);
}
void BM_per_sequence_mix(benchmark::State& s) {
  ragged_mix(s, false);
}

/// q8_0 K/V (ggml's block_q8_0, 34 bytes per 32 values: 68 MiB at 32768 tokens) read in the tiles;
/// against the read loop over the same bytes. int8 key products where the CPU has AVX512_VNNI (the
/// default), or the widening kernels (q8_0_int8_dot_products = false).
// q8_0 K/V decode: the int8 key products (default) or the widening kernels; avx2: on the AVX2 kernels
// (their AVX-VNNI key form where the CPU has it), else on the active ISA's.
void decode_q8_0(benchmark::State& state, bool int8_dot, bool avx2 = false) {
  std::optional<posenc::kernels::scoped_isa> use;
  if (avx2 && !use.emplace(posenc::kernels::isa::avx2).active()) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  const auto L = static_cast<std::ptrdiff_t>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  constexpr std::ptrdiff_t Hq = 32, Hkv = 8, nb = kD / posenc::block_q8_0::values;
  const auto q = filled<float>(Hq * kD, 1, 1);
  std::vector<posenc::block_q8_0> k(static_cast<std::size_t>(L * Hkv * nb)), v(k.size());
  {
    const auto kf = filled<float>(static_cast<std::size_t>(L * Hkv * kD), 1, 2), vf = filled<float>(kf.size(), 1, 3);
    posenc::kernels::quantize_row_q8_0(kf.data(), k.data(), static_cast<std::ptrdiff_t>(kf.size()));
    posenc::kernels::quantize_row_q8_0(vf.data(), v.data(), static_cast<std::ptrdiff_t>(vf.size()));
  }
  std::vector<float> out(q.size());
  posenc::attention_workspace ws;
  const posenc::fast_attention_options f{
      .executor = pool(threads).as_parallel_for(), .workspace = &ws, .q8_0_int8_dot_products = int8_dot};
  using tv = posenc::tensor_view<const posenc::block_q8_0>;
  for (auto _ : state) {
    posenc::attention(posenc::tensor_view<const float>::thd(q.data(), 1, Hq, kD), tv::thd(k.data(), L, Hkv, nb),
                      tv::thd(v.data(), L, Hkv, nb), posenc::tensor_view<float>::thd(out.data(), 1, Hq, kD),
                      posenc::no_position{}, {.causal = true}, f);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(k.size() * sizeof(posenc::block_q8_0)),
      benchmark::Counter::kIsRate);
}
void BM_decode_q8_0(benchmark::State& s) {
  decode_q8_0(s, true);
}
void BM_decode_q8_0_widen(benchmark::State& s) {
  decode_q8_0(s, false);
}
void BM_decode_q8_0_avx2(benchmark::State& s) {
  decode_q8_0(s, true, true);
}
void BM_decode_q8_0_avx2_widen(benchmark::State& s) {
  decode_q8_0(s, false, true);
}

}  // namespace

#if defined(__x86_64__)
BENCHMARK(BM_anchor_fma_peak)->Unit(benchmark::kMillisecond);
// K+V bytes of the decode shapes: fp32 256 MiB, bf16 128 MiB, q8_0 68 MiB (32768 tokens x 8 heads x 128 x 2)
BENCHMARK(BM_model_decode_order)->Arg(kCached)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_model_decode_address_order)->Arg(kCached)->UseRealTime()->Unit(benchmark::kMillisecond);
// Every read-loop variant (streams x prefetch) at each decode size and thread count: the best of
// them is the limit of the decode rows of that size (scripts/attention-ratios).
static void read_variants(benchmark::internal::Benchmark* b) {
  for (const std::int64_t mib : {kMiB32, kMiB16, kMiBq8, kMiB32Short, kMiB16Short})
    for (const std::int64_t threads : {1, 2})
      for (const int streams : read_anchor::kStreams)
        for (const std::ptrdiff_t pf : read_anchor::kPrefetch) b->Args({mib, threads, streams, pf});
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(kSmoke ? 0.001 : 0.1);
}
BENCHMARK(BM_anchor_read_bw)->Apply(read_variants);
// The same variants in the decode kernel's order over paged_shapes' caches (fp32 and bf16, blocks of 16 and 256
// tokens, and one block: the contiguous cache): the limit of the paged rows, and what the blocks cost the memory
// system before any arithmetic.
static void read_paged_variants(benchmark::internal::Benchmark* b) {
  for (const std::int64_t mib : {kMiB32, kMiB16})
    for (const std::int64_t threads : {1, 2})
      for (const auto& [tokens, shuffled] : {std::pair{kCached, 0}, {16, 1}, {256, 1}, {16, 0}}) {
        if (shuffled == 0 && tokens == 16 && threads != 1) continue;
        for (const int streams : read_anchor::kStreams)
          for (const std::ptrdiff_t pf : read_anchor::kPrefetch) b->Args({mib, threads, tokens, shuffled, streams, pf});
      }
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(kSmoke ? 0.001 : 0.1);
}
BENCHMARK(BM_anchor_read_paged)->Apply(read_paged_variants);
// The same variants in the head-major decode's order over the fp32 decode cache, 1 and 2 threads.
static void read_head_major_variants(benchmark::internal::Benchmark* b) {
  for (const std::int64_t threads : {1, 2})
    for (const int streams : read_anchor::kStreams)
      for (const std::ptrdiff_t pf : read_anchor::kPrefetch) b->Args({kMiB32, threads, streams, pf});
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(kSmoke ? 0.001 : 0.1);
}
BENCHMARK(BM_anchor_read_head_major)->Apply(read_head_major_variants);
static void read_head_major_tiles(benchmark::internal::Benchmark* b) {
  for (const int streams : {1, 4})
    for (const std::int64_t tile : {64, 256, 1024, 4096}) b->Args({kMiB32, 1, streams, 1024, tile});
  b->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(kSmoke ? 0.001 : 0.1);
}
BENCHMARK(BM_anchor_read_head_major_tile)->Apply(read_head_major_tiles);
#endif
BENCHMARK(BM_prefill_none)->Arg(kPrefill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_none_1thread)->Arg(kPrefill)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_none_softcap)->Arg(kPrefill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_alibi)->Arg(kPrefill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_t5)->Arg(kPrefill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_shaw_kv)->Arg(kPrefill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_none_2threads)->Arg(kPrefill)->UseRealTime()->Unit(benchmark::kMillisecond);
#if defined(__x86_64__)
BENCHMARK(BM_anchor_fma_peak_threads)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_anchor_bf16_dot_peak)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
#endif
// prefill as engines run it (32 q / 8 kv heads), fp32, bfloat16 and float16 K/V, 1 and 2 threads
static void gqa_shapes(benchmark::internal::Benchmark* b) {
  b->Args({kPrefill, 1})->Args({kPrefill, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_prefill_gqa_fp32)->Apply(gqa_shapes);
BENCHMARK(BM_prefill_gqa_bf16_dot)->Apply(gqa_shapes);
BENCHMARK(BM_prefill_gqa_bf16)->Apply(gqa_shapes);
BENCHMARK(BM_prefill_gqa_f16)->Apply(gqa_shapes);
BENCHMARK(BM_prefill_gqa_fp32_cold)->Apply(gqa_shapes);
BENCHMARK(BM_prefill_gqa_bf16_dot_cold)->Apply(gqa_shapes);
BENCHMARK(BM_prefill_eigen)->Arg(kPrefill)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_prefill_sdpa)->Arg(kPrefill)->Iterations(1)->Unit(benchmark::kMillisecond);
// decode: kCached tokens (K+V from DRAM, against the read loop) on 1 and 2 threads, and kInCache tokens
// (K+V in L3: about the kernel's compute rate, the other bound of the DRAM rows)
static void decode_shapes(benchmark::internal::Benchmark* b) {
  b->Args({kCached, 1})->Args({kCached, 2})->Args({kShort, 1})->Args({kShort, 2})->Args({kInCache, 1});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_decode_fp32)->Apply(decode_shapes);
BENCHMARK(BM_decode_fp32_softcap)->Apply(decode_shapes);
BENCHMARK(BM_decode_fp32_softcap_saturated)->Apply(decode_shapes);
BENCHMARK(BM_decode_bf16)->Apply(decode_shapes);
BENCHMARK(BM_decode_bf16_dot)->Apply(decode_shapes);
BENCHMARK(BM_decode_f16)->Apply(decode_shapes);
BENCHMARK(BM_decode_f16_head_major)->Apply(decode_shapes);
BENCHMARK(BM_decode_fp32_head_major)->Apply(decode_shapes);
BENCHMARK(BM_decode_bf16_dot_head_major)->Apply(decode_shapes);
// paged decode (blocks of 16 and 256) beside BM_decode_fp32's and BM_decode_bf16_dot's kCached rows; a ragged serving
// step against the same sequences one call each (scripts/attention-ratios: paged / contiguous, ragged / per-sequence)
void paged_shapes(benchmark::internal::Benchmark* b) {
  b->Args({kCached, 1, 16, 1})->Args({kCached, 1, 256, 1})->Args({kCached, 2, 16, 1})->Args({kCached, 2, 256, 1});
  b->Args({kCached, 1, 16, 0})->Args({kCached, 1, 16, 2});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_decode_fp32_paged)->Apply(paged_shapes);
BENCHMARK(BM_decode_bf16_dot_paged)->Apply(paged_shapes);
BENCHMARK(BM_decode_pass)->ArgsProduct({{0, 1, 2}, {1, 64}});
// a prefill chunk on paged caches (blocks of 16 and 256) against the contiguous cache, one thread
BENCHMARK(BM_prefill_chunk)
    ->Args({kPrefill / 2, 0})
    ->Args({kPrefill / 2, 16})
    ->Args({kPrefill / 2, 256})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ragged_mix)->Args({kCached / 8, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_per_sequence_mix)->Args({kCached / 8, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_decode_q8_0)->Apply(decode_shapes);
BENCHMARK(BM_decode_q8_0_widen)->Apply(decode_shapes);
BENCHMARK(BM_decode_q8_0_avx2)->Apply(decode_shapes);
BENCHMARK(BM_decode_q8_0_avx2_widen)->Apply(decode_shapes);
