// A tiny byte-level transformer trained for a few seconds with RoPE, through posenc's hooks
// (examples/trainer/tiny_lm.hpp), then evaluated in and beyond its training length. The full
// comparison of encodings is `posenc lab` (docs/lab.md).
#include <cmath>
#include <cstdio>
#include <span>
#include <string>

#include <posenc/rope/rope.hpp>

#include "trainer/lab.hpp"
#include "trainer/tiny_lm.hpp"

int main() {
  std::string corpus;  // the Debian license texts, /usr/share/common-licenses
  const auto text = tiny::read_corpus(corpus);
  const std::span<const std::uint8_t> bytes(text);
  const auto train = bytes.first(bytes.size() * 9 / 10), held = bytes.subspan(bytes.size() * 9 / 10);

  tiny::lm_config cfg{.d_model = 32, .heads = 2, .layers = 1, .d_ff = 64, .lr = 1e-2f, .warmup = 10, .steps = 80};
  tiny::tiny_lm<posenc::rope> model(cfg, posenc::rope(posenc::rope_config{.head_dim = 16, .theta = 10000}));
  const int L = 32;
  const double before = tiny::detail::bits_per_byte(model, held, L, 2048);
  for (int s = 0; s < cfg.steps; ++s) (void)model.train_step(train, 8, L);
  const double at_L = tiny::detail::bits_per_byte(model, held, L, 2048);
  const double at_4L = tiny::detail::bits_per_byte(model, held, 4 * L, 2048);
  std::printf("corpus %s: %zu bytes\n", corpus.c_str(), text.size());
  std::printf("bits per byte on evaluation text at L = %d: %.3f before training, %.3f after %d steps\n", L, before,
              at_L, cfg.steps);
  std::printf("the same model at 4L = %d: %.3f\n", 4 * L, at_4L);
  return at_L < before - 1.0 && std::isfinite(at_4L) ? 0 : 1;
}
