// fuzz/fuzz_hf_json.cpp — libFuzzer harness: arbitrary bytes as a config.json through the JSON
// reader, the HF loader and RoPE validation. Only config_error may come out; anything else (crash,
// sanitizer report, other exception) is a bug.
//
// Inputs starting with byte 0xFF (never valid JSON) are a recipe for a large document instead, so
// that -max_len stays small while the loader still meets 10^5 keys and long lists: byte 1 picks
// the shape, bytes 2-4 a count n (objects: up to 150 000 keys; lists: up to 2^21 + 1 items, past
// the 2^20 value cap), the rest is text spliced into keys. Time and memory stay linear in n.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <posenc/config/json.hpp>
#include <posenc/rope/schedule.hpp>

namespace {

std::string large_document(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t shape = size > 1 ? data[1] % 4 : 0;
  const std::uint32_t raw =
      size > 4 ? (std::uint32_t{data[2]} | std::uint32_t{data[3]} << 8 | std::uint32_t{data[4]} << 16) : 100000;
  const std::uint32_t n = raw % (shape == 2 ? (1u << 21) + 2 : 150001);
  std::string stem;
  for (std::size_t i = 5; i < size && stem.size() < 16; ++i)
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string generated;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size > 0 && data[0] == 0xFF) {
    generated = large_document(data, size);
    text = generated;
  }
  try {
    const posenc::model_config m = posenc::load_hf_config_json(text, "fuzz.json");
    // Validation and frequencies too, for sizes a real model has (a 2^31-wide head would only
    // measure the allocator).
    if (m.rope && m.rope->head_dim <= 4096) {
      const posenc::rope_schedule s(*m.rope);
      (void)s.at(8192);
    }
  } catch (const posenc::config_error&) {
  }
  return 0;
}
