// bench/ggml_model_bench.cpp — the decode rotation of an engine step against a model of ggml's CPU rope.
//
// ggml is not packaged by Debian, so its sources are not built here. This bench carries a model of
// what ggml's CPU rope (ggml-cpu ops.cpp, GGML_OP_ROPE, f32) does per call, written for this bench
// from the algorithm, without ggml's graph, threads or barriers (which only add to its time):
//   per token: a cache of D/2 (cos, sin) pairs, theta = pos, theta *= base^(-2/D) per pair, each
//     pair through the YaRN function with ext_factor 0 (cosf and sinf of freq_scale * theta, times
//     mscale = attn_factor = 1);
//   per head row: the textbook pair loop reading that cache; NORMAL pairs (2i, 2i+1), NEOX pairs
//     (i, i + D/2).
// llama.cpp ropes Qcur and Kcur as two ops, so one decode step is two calls on each side here.
// posenc's side is what an engine calls: rope::transform_q / transform_k (angles on the fly) and
// rope::rotate with a cos_sin_table, each with its dispatch, view checks and table lookup in;
// posenc_table_fused is the latter in kernels::arithmetic::fused.
// Shape: 1 token at position 4095, 32 q heads and 8 kv heads, D 128, theta 500000 (Llama 3).
// Buffers: 64-byte aligned, or 16 bytes past a 64-byte line as ggml's tensor data sits.
//
// The model is compiled with this TU's flags: read the ratio from the `native` preset build
// (-march=native, as ggml builds by default with GGML_NATIVE), not from the `bench` one.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <posenc/kernels/isa.hpp>
#include <posenc/rope/rope.hpp>

namespace {

constexpr int head_dim = 128;
constexpr std::int64_t position = 4095;
constexpr float theta_base = 500000.0f;

// ggml's per-call work on one [tokens, heads, D] f32 tensor, in place (see the banner).
void ggml_model_rope(float* x, std::int64_t tokens, std::int64_t heads, const std::int32_t* pos, bool neox,
                     float* cache) {
  const float theta_scale = std::pow(theta_base, -2.0f / head_dim);
  for (std::int64_t t = 0; t < tokens; ++t) {
    float theta = static_cast<float>(pos[t]);
    for (int i = 0; i < head_dim; i += 2) {
      const float mixed = 1.0f * theta;  // freq_scale * theta; ext_factor 0: no ramp mix
      cache[i] = std::cos(mixed) * 1.0f;
      cache[i + 1] = std::sin(mixed) * 1.0f;
      theta *= theta_scale;
    }
    for (std::int64_t h = 0; h < heads; ++h) {
      float* row = x + (t * heads + h) * head_dim;
      const int stride = neox ? head_dim / 2 : 1;
      for (int i = 0; i < head_dim; i += 2) {
        float* p = row + (neox ? i / 2 : i);
        const float c = cache[i], s = cache[i + 1];
        const float a = p[0], b = p[stride];
        p[0] = a * c - b * s;
        p[stride] = a * s + b * c;
      }
    }
  }
}

struct buffers {
  static constexpr std::size_t floats = std::size_t{40} * head_dim;
  std::unique_ptr<float[]> raw{new float[floats + 64]};
  float* base(bool offset) {
    auto* p = raw.get();
    p += (64 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64 / sizeof(float);
    return offset ? p + 4 : p;  // 16 bytes past the line
  }
};

enum class side { ggml_model, posenc_otf, posenc_table, posenc_table_fused };

void run(benchmark::State& state, posenc::kernels::pairing layout, side who, bool offset) {
  static buffers mem;
  float* q = mem.base(offset);
  float* k = q + 32 * head_dim;
  for (std::size_t i = 0; i < 40 * head_dim; ++i) q[i] = static_cast<float>((i * 7919) % 2001) / 1000.f - 1.f;
  const posenc::rope r(posenc::rope_config{.head_dim = head_dim, .theta = theta_base, .layout = layout});
  const posenc::cos_sin_table<float> table(r.base_frequencies(), 0, 8192);
  const std::vector<std::int64_t> positions{position};
  const std::int32_t pos32[] = {static_cast<std::int32_t>(position)};
  const auto qv = posenc::tensor_view<float>::bthd(q, 1, 1, 32, head_dim);
  const auto kv = posenc::tensor_view<float>::bthd(k, 1, 1, 8, head_dim);
  std::vector<float> cache(head_dim);
  const bool neox = layout == posenc::kernels::pairing::half_split;
  if (who == side::posenc_table_fused) posenc::kernels::set_arithmetic(posenc::kernels::arithmetic::fused);
  for (auto _ : state) {
    switch (who) {
      case side::ggml_model:
        ggml_model_rope(q, 1, 32, pos32, neox, cache.data());
        ggml_model_rope(k, 1, 8, pos32, neox, cache.data());
        break;
      case side::posenc_otf:
        r.transform_q(qv, positions);
        r.transform_k(kv, positions);
        break;
      case side::posenc_table:
      case side::posenc_table_fused:
        r.rotate(qv, positions, table);
        r.rotate(kv, positions, table);
        break;
    }
    benchmark::DoNotOptimize(q);
    benchmark::ClobberMemory();
  }
  posenc::kernels::set_arithmetic(posenc::kernels::arithmetic::exact);
  constexpr std::int64_t bytes = 40 * head_dim * sizeof(float);
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(posenc::kernels::isa_name(posenc::kernels::active_isa()).data());
}

const int registered = [] {
  for (auto layout : {posenc::kernels::pairing::interleaved, posenc::kernels::pairing::half_split}) {
    const std::string lname = layout == posenc::kernels::pairing::interleaved ? "normal" : "neox";
    for (auto [who, wname] :
         {std::pair{side::ggml_model, "ggml_model"}, std::pair{side::posenc_otf, "posenc_otf"},
          std::pair{side::posenc_table, "posenc_table"}, std::pair{side::posenc_table_fused, "posenc_table_fused"}}) {
      for (bool offset : {false, true}) {
        const std::string name = "rope/vs_ggml/decode/" + lname + "/" + wname + (offset ? "/offset16" : "/aligned");
        benchmark::RegisterBenchmark(name.c_str(), run, layout, who, offset)->Unit(benchmark::kNanosecond);
      }
    }
  }
  return 0;
}();

}  // namespace
