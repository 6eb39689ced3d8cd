// The optional Eigen part of the installed package: posenc::eigen brings Eigen's include path.
#include <cstdio>

#include <posenc/attention/attention_layer.hpp>

int main() {
  const Eigen::MatrixXf m = Eigen::MatrixXf::Ones(2, 4);
  std::printf("posenc eigen ok (%d)\n", static_cast<int>(m.sum()));
  return 0;
}
