// fuzz/fuzz_hf_json.cpp — libFuzzer harness: arbitrary bytes as a config.json through the JSON
// reader, the HF loader and RoPE validation. Only config_error may come out; anything else (crash,
// sanitizer report, other exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <posenc/config/json.hpp>
#include <posenc/rope/schedule.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
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
