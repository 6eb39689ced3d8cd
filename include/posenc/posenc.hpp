// posenc/posenc.hpp — the whole public API, in dependency order; also its table of contents.
//
// Include this, or a single family header. The optional JSON config reader (posenc/config/json.hpp,
// needs nlohmann-json) is not included here.
#pragma once

// The order below is the dependency order and reads as a table of contents.
// clang-format off

// Core vocabulary
#include <posenc/version.hpp>
#include <posenc/core/platform.hpp>
#include <posenc/core/assert.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/half.hpp>
#include <posenc/core/element.hpp>
#include <posenc/core/tensor_view.hpp>
#include <posenc/core/positions.hpp>
#include <posenc/core/parallel.hpp>

// The concept and the trivial encoders
#include <posenc/concepts.hpp>
#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/combined.hpp>

// Absolute (hook 1), score-bias (hook 3), relative key/value (hook 4), relative query (hook 5) and
// contextual-position (hook 6) encoders
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/t5.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/encoders/deberta_buckets.hpp>
#include <posenc/encoders/deberta.hpp>
#include <posenc/encoders/cope.hpp>
#include <posenc/encoders/fire.hpp>
#include <posenc/encoders/kerple.hpp>

// Rotation kernels
// Rotation kernels (scalar reference, AVX2, AVX-512, NEON) and their run-time dispatch
#include <posenc/rope/angles.hpp>
#include <posenc/kernels/types.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/kernels/rotate.hpp>
#include <posenc/kernels/angles.hpp>

// RoPE (hook 2): configuration, frequency schedules, tables, the encoder; xPos; mRoPE; vision RoPE
#include <posenc/rope/config.hpp>
#include <posenc/rope/frequencies.hpp>
#include <posenc/rope/scaling/yarn.hpp>
#include <posenc/rope/scaling/llama3.hpp>
#include <posenc/rope/scaling/ntk.hpp>
#include <posenc/rope/scaling/longrope.hpp>
#include <posenc/rope/validate.hpp>
#include <posenc/rope/schedule.hpp>
#include <posenc/rope/cos_sin_table.hpp>
#include <posenc/rope/rotate_view.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/permute.hpp>
#include <posenc/rope/xpos.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/mrope_index.hpp>
#include <posenc/rope/vision_positions.hpp>
#include <posenc/rope/vision_rope.hpp>

// Reference attention (every hook), KV cache, Eigen attention layer
#include <posenc/attention/options.hpp>
#include <posenc/attention/mask.hpp>
#include <posenc/attention/contextual_rows.hpp>
#include <posenc/attention/sdpa.hpp>
#include <posenc/attention/attention.hpp>
#include <posenc/attention/sdpa_backward.hpp>
#include <posenc/attention/attention_backward.hpp>
#include <posenc/attention/paged.hpp>
#include <posenc/attention/ragged.hpp>
#include <posenc/attention/kv_cache.hpp>
#include <posenc/attention/paged_kv_cache.hpp>
#if __has_include(<Eigen/Core>)  // the attention layer is optional: it needs Eigen (posenc::eigen)
#include <posenc/attention/eigen_interop.hpp>
#include <posenc/attention/attention_layer.hpp>
#endif

// Model configuration (Hugging Face config.json, GGUF metadata) without a JSON dependency;
// posenc/config/json.hpp adds the nlohmann-json reader.
#include <posenc/config/value.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/hf.hpp>
#include <posenc/config/gguf.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/config/layer_encoder.hpp>
// clang-format on
