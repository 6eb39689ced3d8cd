// fuzz/fuzz_gguf.cpp — libFuzzer harness: arbitrary bytes as a .gguf file through the GGUF reader,
// the metadata loaders (model-wide and per layer; strict, then generic: an unknown architecture read
// at face value) and RoPE validation. Only config_error may come out.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <posenc/config/gguf.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/schedule.hpp>

namespace {

void schedule(const posenc::rope_config& r) {
  if (r.head_dim > 4096) return;
  const posenc::rope_schedule s(r);
  (void)s.at(8192);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  posenc::gguf_contents c;
  try {
    c = posenc::read_gguf(in, "fuzz.gguf");
  } catch (const posenc::config_error&) {
    return 0;
  }
  for (const bool generic : {false, true}) {
    const posenc::load_options o{.generic = generic};
    try {
      const posenc::model_config m = posenc::load_gguf_config(c.metadata, &c.tensors, o);
      if (m.rope) schedule(*m.rope);
    } catch (const posenc::config_error&) {
    }
    try {
      const posenc::layered_config l = posenc::load_gguf_layered(c.metadata, &c.tensors, o);
      for (std::size_t i = 0; i < l.layers.size() && i < 4; ++i)
        if (l.layers[i].rope) schedule(*l.layers[i].rope);
    } catch (const posenc::config_error&) {
    }
  }
  return 0;
}
