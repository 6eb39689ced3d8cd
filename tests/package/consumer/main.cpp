// A tiny consumer of the installed package: includes the umbrella header and uses it.
#include <cstdio>
#include <vector>

#include <posenc/posenc.hpp>

int main() {
  std::vector<float> x(2 * 4, 1.0f);  // two tokens, one head, head_dim 4
  const auto pos = posenc::arange_positions(2);
  (void)pos;
  std::printf("posenc %d.%d.%d ok\n", posenc::version.major, posenc::version.minor, posenc::version.patch);
  return 0;
}
