// fuzz/fuzz_gguf.cpp — libFuzzer harness: arbitrary bytes as a .gguf file through the GGUF reader,
// the metadata loader and RoPE validation. Only config_error may come out.
//
// Inputs starting with byte 0xFF (a GGUF starts with 'G') are a recipe for a large file instead,
// so that -max_len stays small while the reader still meets ~10^5 keys and large arrays: byte 1
// picks the shape, bytes 2-4 a count, the rest values. Each shape reaches past one of the
// gguf_limits, which must refuse it in time and memory linear in the file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <posenc/config/gguf.hpp>
#include <posenc/rope/schedule.hpp>

#include "../tests/config/gguf_writer.hpp"

namespace {

std::string large_file(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t shape = size > 1 ? data[1] % 4 : 0;
  const std::uint32_t raw =
      size > 4 ? (std::uint32_t{data[2]} | std::uint32_t{data[3]} << 8 | std::uint32_t{data[4]} << 16) : 100000;
  posenc_test::gguf_writer w;
  w.str("general.architecture", "llama");
  w.u32("llama.embedding_length", 4096);
  w.u32("llama.attention.head_count", 32);
  switch (shape) {
    case 0: {  // up to 100 000 keys (the cap is 65 536)
      const std::uint32_t n = raw % 100001;
      for (std::uint32_t k = 0; k < n; ++k) w.u32("llama.k" + std::to_string(k), k);
      break;
    }
    case 1: {  // n kept arrays of m elements (the kept-element cap is 2^18)
      const std::uint32_t m = 1 + raw % 4096, n = std::min<std::uint32_t>(1 + (raw >> 12), (1u << 19) / m);
      for (std::uint32_t k = 0; k < n; ++k) w.zero_array("a" + std::to_string(k), 5, m, 4);
      break;
    }
    case 2: {  // one skipped array of up to 96 MiB, 6 bytes a count (the metadata cap is 64 MiB)
      w.zero_array("tokenizer.ggml.scores", 0, std::uint64_t{raw} * 6, 1);
      break;
    }
    default: {  // per-layer head_count_kv with the input's values (zeros for convolution layers)
      std::vector<std::int32_t> kv;
      for (std::size_t i = 5; i < size; ++i) kv.push_back(static_cast<std::int8_t>(data[i]));
      w.i32_array("llama.attention.head_count_kv", kv);
      w.f32("llama.rope.freq_base", 10000.0f);
      break;
    }
  }
  return w.bytes();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(size > 0 && data[0] == 0xFF ? large_file(data, size)
                                                    : std::string(reinterpret_cast<const char*>(data), size));
  try {
    const posenc::gguf_contents c = posenc::read_gguf(in, "fuzz.gguf");
    const posenc::model_config m = posenc::load_gguf_config(c.metadata, &c.tensors);
    if (m.rope && m.rope->head_dim <= 4096) {
      const posenc::rope_schedule s(*m.rope);
      (void)s.at(8192);
    }
  } catch (const posenc::config_error&) {
  }
  return 0;
}
