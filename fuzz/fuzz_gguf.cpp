// fuzz/fuzz_gguf.cpp — libFuzzer harness: arbitrary bytes as a .gguf file through the GGUF reader,
// the metadata loader and RoPE validation. Only config_error may come out.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include <posenc/config/gguf.hpp>
#include <posenc/rope/schedule.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
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
