// posenc/core/errors.hpp — the exceptions thrown for bad configuration and bad shapes.
//
// Every construction parameter is validated once, when an encoder, schedule or view is built. A bad
// value throws config_error whose message names the parameter, the value given and the valid range,
// e.g. `posenc: rope.rotary_dim = 7 is invalid (expected an even number in [2, head_dim = 64])`.
// Hot paths never throw (see core/assert.hpp).
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace posenc::inline v0 {

/// Thrown when a configuration value is invalid. Derives from std::invalid_argument.
class config_error : public std::invalid_argument {
 public:
  /// `parameter`: the name as the user wrote it (e.g. "yarn.beta_fast"); `value`: the value given,
  /// as text; `expected`: the valid range in words.
  config_error(std::string_view parameter, std::string_view value, std::string_view expected)
      : std::invalid_argument(compose(parameter, value, expected)), parameter_(parameter) {}

  /// A free-form message that still names the parameter (for contradictions between two keys).
  config_error(std::string_view parameter, std::string_view message)
      : std::invalid_argument("posenc: " + std::string(parameter) + ": " + std::string(message)),
        parameter_(parameter) {}

  /// The name of the offending parameter.
  [[nodiscard]] const std::string& parameter() const noexcept { return parameter_; }

 private:
  static std::string compose(std::string_view p, std::string_view v, std::string_view e) {
    std::string s = "posenc: ";
    s.append(p).append(" = ").append(v).append(" is invalid (expected ").append(e).append(")");
    return s;
  }
  std::string parameter_;
};

/// Thrown when tensor extents or strides do not fit together (a kind of configuration error).
class shape_error : public config_error {
 public:
  using config_error::config_error;
};

namespace detail {

/// Shortest round-trip text of a number, for error messages.
template <class T>
requires std::is_arithmetic_v<T> std::string to_text(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc{} ? std::string(buf, end) : std::string("?");
  }
}
inline std::string to_text(std::string_view v) {
  return std::string(v);
}
inline std::string to_text(const char* v) {
  return std::string(v);
}

/// Throws config_error(parameter, value, expected) unless `ok`.
template <class V>
void require(bool ok, std::string_view parameter, const V& value, std::string_view expected) {
  if (!ok) throw config_error(parameter, to_text(value), expected);
}

/// Throws shape_error(parameter, value, expected) unless `ok`.
template <class V>
void require_shape(bool ok, std::string_view parameter, const V& value, std::string_view expected) {
  if (!ok) throw shape_error(parameter, to_text(value), expected);
}

}  // namespace detail
}  // namespace posenc::inline v0
