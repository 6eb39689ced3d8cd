// fuzz/fuzz_hf_json.cpp — libFuzzer harness: arbitrary bytes as a config.json through the JSON
// reader, the HF loaders (model-wide and per layer; strict, then generic: an unknown model_type read
// at face value) and RoPE validation. Only config_error may come out; anything else (crash,
// sanitizer report, other exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <posenc/config/json.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/schedule.hpp>

namespace {

/// Validation and frequencies too, for sizes a real model has (a 2^31-wide head would only measure the
/// allocator).
void schedule(const posenc::rope_config& r) {
  if (r.head_dim > 4096) return;
  const posenc::rope_schedule s(r);
  (void)s.at(8192);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  posenc::config_value root;
  try {
    root = posenc::parse_config_json(text, "fuzz.json");
  } catch (const posenc::config_error&) {
    return 0;
  }
  for (const bool generic : {false, true}) {
    const posenc::load_options o{.generic = generic};
    try {
      const posenc::model_config m = posenc::load_hf_config(root, o);
      if (m.rope) schedule(*m.rope);
    } catch (const posenc::config_error&) {
    }
    try {
      const posenc::layered_config l = posenc::load_hf_layered(root, o);
      for (std::size_t i = 0; i < l.layers.size() && i < 4; ++i)
        if (l.layers[i].rope) schedule(*l.layers[i].rope);
    } catch (const posenc::config_error&) {
    }
  }
  return 0;
}
