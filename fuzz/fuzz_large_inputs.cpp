// fuzz/fuzz_large_inputs.cpp — libFuzzer harness for the loaders at scale: the input is a recipe,
// not the file, so that -max_len stays small while the JSON and GGUF loaders meet 10^5 keys, lists
// past the 2^20 value cap, kept arrays past the 2^18 element cap and a metadata section past
// 64 MiB. Byte 0 picks the loader (even: JSON, odd: GGUF), byte 1 the shape, bytes 2-5 a count,
// the rest text spliced into keys or per-layer values. Only config_error may come out, and each
// run must stay within -timeout and -rss_limit_mb: the caps refuse what is too large, and what is
// kept is built in O(n log n). Executions are slow (up to ~1 s each), so fuzz/run gives this
// harness a third of the others' time.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/gguf.hpp>
#include <posenc/config/json.hpp>
#include <posenc/rope/schedule.hpp>

#include "../tests/config/gguf_writer.hpp"

namespace {

/// The count in bytes 2-4, shifted right by byte 5 % 16: mostly modest sizes (cheap runs), with the
/// full range reachable.
std::uint32_t count(const std::uint8_t* data, std::size_t size) {
  if (size < 5) return 100000;
  const std::uint32_t raw = std::uint32_t{data[2]} | std::uint32_t{data[3]} << 8 | std::uint32_t{data[4]} << 16;
  return raw >> (size > 5 ? data[5] % 16 : 0);
}

std::string large_document(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t shape = size > 1 ? data[1] % 4 : 0;
  const std::uint32_t raw = count(data, size);
  const std::uint32_t n = raw % (shape == 2 ? (1u << 21) + 2 : 150001);
  std::string stem;
  for (std::size_t i = 6; i < size && stem.size() < 16; ++i)
    if (data[i] >= 'a' && data[i] <= 'z') stem += static_cast<char>(data[i]);
  std::string out;
  switch (shape) {
    case 0:  // n keys at the top level, a rope key among them
      out = R"({"head_dim":64,"rope_theta":10000)";
      for (std::uint32_t k = 0; k < n; ++k) out += ",\"" + stem + std::to_string(k) + "\":" + std::to_string(k);
      return out + "}";
    case 1:  // n keys inside rope_scaling (every one reported as unknown)
      out = R"({"head_dim":64,"rope_scaling":{"rope_type":"linear","factor":2)";
      for (std::uint32_t k = 0; k < n; ++k) out += ",\"" + stem + std::to_string(k) + "\":" + std::to_string(k);
      return out + "}}";
    case 2:  // a LongRoPE factor list of n entries
      out = R"({"head_dim":64,"original_max_position_embeddings":4096,"rope_scaling":{"rope_type":"longrope",)"
            R"("short_factor":[1)";
      for (std::uint32_t k = 1; k < n; ++k) out += ",1";
      return out + R"(],"long_factor":[2]}})";
    default:  // the same key n times (the last one wins, in the first one's place)
      out = "{";
      for (std::uint32_t k = 0; k < n; ++k) out += "\"rope_theta\":" + std::to_string(k + 2) + ",";
      return out + R"("head_dim":64})";
  }
}

std::string large_file(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t shape = size > 1 ? data[1] % 4 : 0;
  const std::uint32_t raw = count(data, size);
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
      for (std::size_t i = 6; i < size; ++i) kv.push_back(static_cast<std::int8_t>(data[i]));
      w.i32_array("llama.attention.head_count_kv", kv);
      w.f32("llama.rope.freq_base", 10000.0f);
      break;
    }
  }
  return w.bytes();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  try {
    posenc::model_config m;
    if (data[0] % 2 == 0) {
      m = posenc::load_hf_config_json(large_document(data, size), "large.json", {.generic = true});
    } else {
      std::istringstream in(large_file(data, size));
      const posenc::gguf_contents c = posenc::read_gguf(in, "large.gguf");
      m = posenc::load_gguf_config(c.metadata, &c.tensors, {.generic = true});
    }
    if (m.rope && m.rope->head_dim <= 4096) (void)posenc::rope_schedule(*m.rope).at(8192);
  } catch (const posenc::config_error&) {
  }
  return 0;
}
