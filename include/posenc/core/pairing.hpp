// posenc/core/pairing.hpp — which elements of a head row form a RoPE pair: the vocabulary type the
// rotation kernels, the RoPE configuration and the model loaders share.
//
//   interleaved (GPT-J, ggml NORMAL):  pair k = (x[2k], x[2k + 1])
//   half_split (NeoX, HF rotate_half): pair k = (x[k], x[k + R/2]) over a rotary slice of R elements
//
// The full sketch, with the rotary offset and the pass-through tail, is in kernels/types.hpp.
#pragma once

namespace posenc::inline v0 {

/// Which elements of the rotary slice form pair k.
enum class pairing : unsigned char { interleaved, half_split };

namespace kernels {
using posenc::pairing;
}  // namespace kernels

}  // namespace posenc::inline v0
