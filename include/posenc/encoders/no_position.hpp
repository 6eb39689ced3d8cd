// posenc/encoders/no_position.hpp — NoPE: the encoder that adds no positional information.
//
// Models positional_encoding and none of the hooks, so the attention compiles to plain SDPA. Used
// for NoPE layers (e.g. every fourth layer of Llama 4) and as the baseline in comparisons.
#pragma once

#include <string_view>

#include <posenc/concepts.hpp>

namespace posenc::inline v0 {

/// No positional encoding. Order-equivariant attention (a causal mask still orders tokens).
struct no_position {
  [[nodiscard]] static constexpr std::string_view name() noexcept { return "none"; }
  friend constexpr bool operator==(no_position, no_position) noexcept = default;
};

}  // namespace posenc::inline v0
