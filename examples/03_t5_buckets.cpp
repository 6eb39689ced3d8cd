// examples/03_t5_buckets.cpp — T5 relative-position buckets, encoder (bidirectional) and decoder.
#include <cstdio>

#include <posenc/encoders/t5.hpp>

int main() {
  const posenc::t5_buckets enc(posenc::t5_bias_config{.num_buckets = 32, .max_distance = 128, .bidirectional = true});
  const posenc::t5_buckets dec(posenc::t5_bias_config{.num_buckets = 32, .max_distance = 128, .bidirectional = false});
  for (int r : {-200, -91, -20, -8, -1, 0, 1, 8, 20, 200})
    std::printf("relative %5d -> encoder bucket %2d, decoder bucket %2d\n", r, enc(r), dec(r));
  // docs/spec.md §5.3: |r| >= 91 -> 15 (+16 for r > 0); causal n in [16, 18] -> 16; future keys -> 0.
  const bool ok = enc(-91) == 15 && enc(91) == 31 && enc(7) == 23 && dec(-16) == 16 && dec(5) == 0;
  return ok ? 0 : 1;
}
