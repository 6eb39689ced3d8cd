// bench/read_anchor.hpp — the read-bandwidth limit the decode rows are measured against: the fastest
// of several read loops over the same bytes, each at the CPU's full vector width (AVX-512 where it
// has it, else AVX2). A variant reads its buffer as `streams` contiguous parts side by side (one
// 64-byte line of each part per step, so that many hardware-prefetch streams and misses are in
// flight at once) and may prefetch every line `prefetch` bytes ahead on each part. Each variant is
// its own bench row; scripts/attention-ratios takes the best at the same size and thread count as
// the limit of every decode ratio. read_chained reads a buffer that is one piece of a longer logical
// stream (a block of a paged cache): a prefetch that runs past the piece's end lands at the same
// distance into the next piece, as a paged kernel that knows its block table can do. x86-64 only.
#pragma once

#include <cstddef>

#if defined(__x86_64__)
#include <immintrin.h>

namespace read_anchor {

/// The read-loop variants the bench runs: (streams, prefetch distance in bytes, 0 = none).
inline constexpr int kStreams[] = {1, 2, 4, 8};
inline constexpr std::ptrdiff_t kPrefetch[] = {0, 1024, 4096};

/// The address `pf` bytes past q in the logical stream: past the piece [p, p + n) it continues in `next`.
template <bool Chain>
inline const char* ahead(const float* q, const float* p, std::size_t n, const float* next, std::ptrdiff_t pf) {
  const char* a = reinterpret_cast<const char*>(q) + pf;
  if constexpr (Chain) {
    const char* end = reinterpret_cast<const char*>(p + n);
    if (a >= end) a = reinterpret_cast<const char*>(next) + (a - end);
  }
  return a;
}

template <int S, bool Chain = false>
__attribute__((target("avx512f"), noinline)) float read_avx512(const float* p, std::size_t n, std::ptrdiff_t pf,
                                                               const float* next = nullptr) {
  const std::size_t part = n / S / 32 * 32;  // floats per part: whole 128-byte steps
  __m512 a[S], b[S];
  for (int s = 0; s < S; ++s) a[s] = b[s] = _mm512_setzero_ps();
  for (std::size_t i = 0; i < part; i += 32)
    for (int s = 0; s < S; ++s) {
      const float* q = p + static_cast<std::size_t>(s) * part + i;
      if (pf) {  // a prefetch past the end of the buffer is harmless (no fault)
        const char* at = ahead<Chain>(q, p, n, next, pf);
        _mm_prefetch(at, _MM_HINT_T0);
        _mm_prefetch(at + 64, _MM_HINT_T0);
      }
      a[s] = _mm512_add_ps(a[s], _mm512_loadu_ps(q));
      b[s] = _mm512_add_ps(b[s], _mm512_loadu_ps(q + 16));
    }
  __m512 t = _mm512_setzero_ps();
  for (int s = 0; s < S; ++s) t = _mm512_add_ps(t, _mm512_add_ps(a[s], b[s]));
  alignas(64) float lanes[16];  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  _mm512_store_ps(lanes, t);
  float sum = 0;
  for (const float x : lanes) sum += x;
  return sum;
}

template <int S, bool Chain = false>
__attribute__((target("avx2"), noinline)) float read_avx2(const float* p, std::size_t n, std::ptrdiff_t pf,
                                                          const float* next = nullptr) {
  const std::size_t part = n / S / 32 * 32;
  __m256 a[S], b[S];  // two chains per part (16 registers at 8 parts)
  for (int s = 0; s < S; ++s) a[s] = b[s] = _mm256_setzero_ps();
  for (std::size_t i = 0; i < part; i += 32)
    for (int s = 0; s < S; ++s) {
      const float* q = p + static_cast<std::size_t>(s) * part + i;
      if (pf) {
        const char* at = ahead<Chain>(q, p, n, next, pf);
        _mm_prefetch(at, _MM_HINT_T0);
        _mm_prefetch(at + 64, _MM_HINT_T0);
      }
      a[s] = _mm256_add_ps(a[s], _mm256_add_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8)));
      b[s] = _mm256_add_ps(b[s], _mm256_add_ps(_mm256_loadu_ps(q + 16), _mm256_loadu_ps(q + 24)));
    }
  __m256 t = _mm256_setzero_ps();
  for (int s = 0; s < S; ++s) t = _mm256_add_ps(t, _mm256_add_ps(a[s], b[s]));
  alignas(32) float r[8];
  _mm256_store_ps(r, t);
  return r[0] + r[1] + r[2] + r[3] + r[4] + r[5] + r[6] + r[7];
}

template <bool Chain>
inline float dispatch(bool avx512, int streams, const float* p, std::size_t n, std::ptrdiff_t pf, const float* next) {
  switch (streams) {
    case 1:
      return avx512 ? read_avx512<1, Chain>(p, n, pf, next) : read_avx2<1, Chain>(p, n, pf, next);
    case 2:
      return avx512 ? read_avx512<2, Chain>(p, n, pf, next) : read_avx2<2, Chain>(p, n, pf, next);
    case 4:
      return avx512 ? read_avx512<4, Chain>(p, n, pf, next) : read_avx2<4, Chain>(p, n, pf, next);
    default:
      return avx512 ? read_avx512<8, Chain>(p, n, pf, next) : read_avx2<8, Chain>(p, n, pf, next);
  }
}

/// Sums n floats at p with `streams` parts (1, 2, 4 or 8) and prefetch distance `pf` bytes.
inline float read(bool avx512, int streams, const float* p, std::size_t n, std::ptrdiff_t pf) {
  return dispatch<false>(avx512, streams, p, n, pf, nullptr);
}

/// As read, for the piece [p, p + n) of a stream that goes on at `next` (prefetches cross into it).
inline float read_chained(bool avx512, int streams, const float* p, std::size_t n, std::ptrdiff_t pf,
                          const float* next) {
  return dispatch<true>(avx512, streams, p, n, pf, next);
}

}  // namespace read_anchor
#endif
