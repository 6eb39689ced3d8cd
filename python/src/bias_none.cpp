// python/src/bias_none.cpp — the attention family without a bias: NoPE, or the q/k transforms alone.
#include "ops.hpp"

namespace pyposenc {

std::shared_ptr<const bias_ops> none_ops() {
  static const std::shared_ptr<const bias_ops> ops = make_bias_ops(posenc::no_position{});
  return ops;
}

}  // namespace pyposenc
