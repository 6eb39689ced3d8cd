// posenc/attention/fast/tile_kernels.hpp — the table of one ISA's attention tile microkernels
// (function pointers filled by fast/tile-inl.hpp inside each ISA's namespace).
#pragma once

#include <cstddef>
#include <type_traits>

#include <posenc/core/half.hpp>
#include <posenc/core/q8_0.hpp>

namespace posenc::inline v0::detail {

/// Function pointers to one ISA's tile microkernels (see fast/tile-inl.hpp for the contracts).
struct tile_kernels {
  void (*qk_packed)(const float* const* q, int rows, const float* kt, std::ptrdiff_t ldk, int D, float scale, float* s,
                    std::ptrdiff_t ss) = nullptr;
  void (*pv_packed)(const float* p, std::ptrdiff_t ps, int rows, const float* vt, std::ptrdiff_t vs, int n, int dvp,
                    float* o, std::ptrdiff_t os) = nullptr;
  // (p, p row stride, p key stride, rows, vt, vt stride, keys, dvp, o, o stride, accumulate: else o is overwritten)
  void (*pv_strided)(const float* p, std::ptrdiff_t ps, std::ptrdiff_t pe, int rows, const float* vt, std::ptrdiff_t vs,
                     int n, int dvp, float* o, std::ptrdiff_t os, bool accumulate) = nullptr;
  // (q rows, rows per head, heads, k, token stride, head stride, keys, D, scale, s, s stride, V rows to prefetch:
  // base or null, token stride and head stride in bytes, bytes per row; keys after the last one, one token
  // stride apart, whose rows may be asked for ahead)
  void (*qk_heads_f32)(const float* const*, int, int, const float*, std::ptrdiff_t, std::ptrdiff_t, int, int, float,
                       float*, std::ptrdiff_t, const void*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t,
                       int) = nullptr;
  void (*qk_heads_bf16)(const float* const*, int, int, const bfloat16*, std::ptrdiff_t, std::ptrdiff_t, int, int, float,
                        float*, std::ptrdiff_t, const void*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t,
                        int) = nullptr;
  void (*qk_heads_f16)(const float* const*, int, int, const float16*, std::ptrdiff_t, std::ptrdiff_t, int, int, float,
                       float*, std::ptrdiff_t, const void*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t,
                       int) = nullptr;
  // (p, p stride, rows, v, token stride, keys, Dv, o, o stride)
  // (p, p stride, rows per head, heads, v, token stride, head stride, keys, Dv, o, o stride:
  // head gi's rows are p + gi Rg ps and o + gi Rg os, its values v + gi head stride; bytes to ask for into L2
  // during the pass, the next key tile's K rows: base or null, size)
  void (*pv_heads_f32)(const float*, std::ptrdiff_t, int, int, const float*, std::ptrdiff_t, std::ptrdiff_t, int, int,
                       float*, std::ptrdiff_t, const void*, std::ptrdiff_t) = nullptr;
  void (*pv_heads_bf16)(const float*, std::ptrdiff_t, int, int, const bfloat16*, std::ptrdiff_t, std::ptrdiff_t, int,
                        int, float*, std::ptrdiff_t, const void*, std::ptrdiff_t) = nullptr;
  void (*pv_heads_f16)(const float*, std::ptrdiff_t, int, int, const float16*, std::ptrdiff_t, std::ptrdiff_t, int, int,
                       float*, std::ptrdiff_t, const void*, std::ptrdiff_t) = nullptr;
  // q8_0 K/V (fast/q8_0-inl.hpp): the same arguments, rows of blocks (strides in blocks), D / Dv % 32 == 0
  void (*qk_heads_q8)(const float* const*, int, int, const block_q8_0*, std::ptrdiff_t, std::ptrdiff_t, int, int, float,
                      float*, std::ptrdiff_t, const void*, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t,
                      int) = nullptr;
  void (*pv_heads_q8)(const float*, std::ptrdiff_t, int, int, const block_q8_0*, std::ptrdiff_t, std::ptrdiff_t, int,
                      int, float*, std::ptrdiff_t, const void*, std::ptrdiff_t) = nullptr;
  // Pair order of the bfloat16 in-place kernels (fast/tile-inl.hpp): (q row, D, out) puts a query row in
  // the order qk_heads_bf16 reads keys (once per call); (o row, Dv) puts back in order an output row that
  // pv_heads_bf16 accumulated (once per row, after its last key tile).
  void (*split_q_bf16)(const float*, int, float*) = nullptr;
  void (*merge_o_bf16)(float*, int) = nullptr;
  // AVX512_BF16 forms of qk_heads_bf16 / pv_heads_bf16 (fast/ops/avx512_bf16.hpp; D, Dv % 32 == 0): null
  // unless the CPU has the instruction; used when fast_attention_options::bf16_dot_products (the default).
  // qk_heads_bf16_dot takes q rows prepared by round_q_bf16_dot (q row, D, out): D bfloat16 in D / 2 floats.
  decltype(qk_heads_bf16) qk_heads_bf16_dot = nullptr;
  decltype(pv_heads_bf16) pv_heads_bf16_dot = nullptr;
  decltype(split_q_bf16) round_q_bf16_dot = nullptr;
  // The vpdpbusd form of qk_heads_q8 (fast/ops/avx512_vnni.hpp, fast/ops/avx2_vnni.hpp; D % 32 == 0): null
  // unless the CPU has the instruction (AVX512_VNNI, AVX-VNNI); used when
  // fast_attention_options::q8_0_int8_dot_products (the default). It takes q rows prepared by prep_q_q8_dot (q row, D,
  // out: q8_dot_floats(D) floats).
  decltype(qk_heads_q8) qk_heads_q8_dot = nullptr;
  decltype(split_q_bf16) prep_q_q8_dot = nullptr;
  int (*q8_dot_floats)(int) = nullptr;
  // prefill packing: (k, token stride, keys, D, kt, ldk) and (v, token stride, keys, Dv, vt, ldv), rows contiguous
  void (*pack_kt_f32)(const float*, std::ptrdiff_t, int, int, float*, std::ptrdiff_t) = nullptr;
  void (*pack_kt_bf16)(const bfloat16*, std::ptrdiff_t, int, int, float*, std::ptrdiff_t) = nullptr;
  void (*pack_kt_f16)(const float16*, std::ptrdiff_t, int, int, float*, std::ptrdiff_t) = nullptr;
  void (*pack_kt_q8)(const block_q8_0*, std::ptrdiff_t, int, int, float*, std::ptrdiff_t) = nullptr;
  decltype(pack_kt_f32) pack_v_f32 = nullptr;
  decltype(pack_kt_bf16) pack_v_bf16 = nullptr;
  decltype(pack_kt_f16) pack_v_f16 = nullptr;
  decltype(pack_kt_q8) pack_v_q8 = nullptr;
  float (*row_max)(const float* x, int n) = nullptr;
  float (*exp_sum)(float* x, int n, float m) = nullptr;
  void (*scale_row)(float* x, int n, float f) = nullptr;
  void (*add_row)(float* x, const float* t, int n) = nullptr;
  void (*add_const)(float* x, float c, int n) = nullptr;
  void (*exp)(const float* x, float* y, int n) = nullptr;
  // logit soft-capping of one score row, x[j] = cap tanh(x[j] inv_cap) for j < n; the vectorised tanh alone
  void (*softcap)(float* x, int n, float cap, float inv_cap) = nullptr;
  void (*tanh)(const float* x, float* y, int n) = nullptr;
  int lanes = 1;

  template <class T>
  auto qk_heads() const noexcept {
    return by_storage<T>(qk_heads_f32, qk_heads_bf16, qk_heads_f16, qk_heads_q8);
  }
  template <class T>
  auto pack_kt() const noexcept {
    return by_storage<T>(pack_kt_f32, pack_kt_bf16, pack_kt_f16, pack_kt_q8);
  }
  template <class T>
  auto pack_v() const noexcept {
    return by_storage<T>(pack_v_f32, pack_v_bf16, pack_v_f16, pack_v_q8);
  }
  template <class T>
  auto pv_heads() const noexcept {
    return by_storage<T>(pv_heads_f32, pv_heads_bf16, pv_heads_f16, pv_heads_q8);
  }

 private:
  // The kernel of the four storage forms that matches T (float, bfloat16, float16, block_q8_0).
  template <class T, class F, class B, class H, class Q>
  static auto by_storage(F f32, B bf16, H f16, Q q8) noexcept {
    if constexpr (std::is_same_v<T, bfloat16>)
      return bf16;
    else if constexpr (std::is_same_v<T, float16>)
      return f16;
    else if constexpr (std::is_same_v<T, block_q8_0>)
      return q8;
    else
      return f32;
  }
};

}  // namespace posenc::inline v0::detail
