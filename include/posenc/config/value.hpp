// posenc/config/value.hpp — a small JSON-free tree of configuration values (the loaders' input).
//
// A model configuration is a tree of null / bool / integer / number / string / list / object values.
// The HF and GGUF loaders (config/hf.hpp, config/gguf.hpp) read this tree, so they need no JSON
// library: config/json.hpp converts an nlohmann::json into it and config/gguf.hpp builds it from
// GGUF metadata. Objects keep their insertion order (for stable warnings); lookups are linear,
// which is fine for the few dozen keys of a model config.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// One node of a configuration tree. JSON `null` is `kind::null` and means "absent" to the loaders;
/// an explicit 0 is a value.
class config_value {
 public:
  enum class kind : unsigned char { null, boolean, integer, number, string, list, object };
  /// One key and its value inside an object (references into the object).
  struct member {
    const std::string& key;
    const config_value& value;
  };

  config_value() = default;
  static config_value boolean(bool b);
  static config_value integer(std::int64_t i);
  static config_value number(double d);
  static config_value string(std::string s);
  static config_value list(std::vector<config_value> items = {});
  static config_value object();

  [[nodiscard]] kind type() const noexcept { return kind_; }
  [[nodiscard]] bool is_null() const noexcept { return kind_ == kind::null; }
  [[nodiscard]] bool is_bool() const noexcept { return kind_ == kind::boolean; }
  [[nodiscard]] bool is_integer() const noexcept { return kind_ == kind::integer; }
  /// Integer or floating-point.
  [[nodiscard]] bool is_number() const noexcept { return kind_ == kind::integer || kind_ == kind::number; }
  [[nodiscard]] bool is_string() const noexcept { return kind_ == kind::string; }
  [[nodiscard]] bool is_list() const noexcept { return kind_ == kind::list; }
  [[nodiscard]] bool is_object() const noexcept { return kind_ == kind::object; }

  [[nodiscard]] bool as_bool() const noexcept { return bool_; }
  [[nodiscard]] std::int64_t as_integer() const noexcept { return int_; }
  /// The value as a double (integers converted).
  [[nodiscard]] double as_number() const noexcept { return num_; }
  [[nodiscard]] const std::string& as_string() const noexcept { return str_; }
  [[nodiscard]] const std::vector<config_value>& items() const noexcept { return items_; }
  /// The members of an object, in insertion order.
  [[nodiscard]] std::vector<member> members() const;
  [[nodiscard]] std::size_t size() const noexcept { return kind_ == kind::object ? keys_.size() : items_.size(); }

  /// Appends an item to a list.
  void push_back(config_value v) { items_.push_back(std::move(v)); }
  /// Sets `key` in an object (replaces an existing member of that name).
  void set(std::string_view key, config_value v);
  /// The member named `key`, or nullptr. Objects only.
  [[nodiscard]] const config_value* find(std::string_view key) const noexcept;

  /// Short human-readable text of the value for messages (strings quoted, long lists elided).
  [[nodiscard]] std::string to_text() const;

  friend bool operator==(const config_value& a, const config_value& b);

 private:
  // Defined after `member` is complete (a constructor body needs the members' destructors).
  config_value(kind k, bool b, std::int64_t i, double d);
  kind kind_ = kind::null;
  bool bool_ = false;
  std::int64_t int_ = 0;
  double num_ = 0;
  std::string str_;
  std::vector<config_value> items_;
  // Objects: parallel key and value lists (a vector of an incomplete type is fine, a struct holding
  // one inside its own definition is not).
  std::vector<std::string> keys_;
  std::vector<config_value> values_;
};

inline config_value::config_value(kind k, bool b, std::int64_t i, double d) : kind_(k), bool_(b), int_(i), num_(d) {}
inline config_value config_value::boolean(bool b) {
  return config_value(kind::boolean, b, 0, 0);
}
inline config_value config_value::integer(std::int64_t i) {
  return config_value(kind::integer, false, i, static_cast<double>(i));
}
inline config_value config_value::number(double d) {
  return config_value(kind::number, false, 0, d);
}
inline config_value config_value::string(std::string s) {
  config_value v(kind::string, false, 0, 0);
  v.str_ = std::move(s);
  return v;
}
inline config_value config_value::list(std::vector<config_value> items) {
  config_value v(kind::list, false, 0, 0);
  v.items_ = std::move(items);
  return v;
}
inline config_value config_value::object() {
  return config_value(kind::object, false, 0, 0);
}

inline std::vector<config_value::member> config_value::members() const {
  std::vector<member> out;
  out.reserve(keys_.size());
  for (std::size_t i = 0; i < keys_.size(); ++i) out.push_back(member{keys_[i], values_[i]});
  return out;
}

inline void config_value::set(std::string_view key, config_value v) {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) {
      values_[i] = std::move(v);
      return;
    }
  }
  keys_.emplace_back(key);
  values_.push_back(std::move(v));
}

inline const config_value* config_value::find(std::string_view key) const noexcept {
  for (std::size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == key) return &values_[i];
  return nullptr;
}

inline std::string config_value::to_text() const {
  switch (kind_) {
    case kind::null:
      return "null";
    case kind::boolean:
      return bool_ ? "true" : "false";
    case kind::integer:
      return detail::to_text(int_);
    case kind::number:
      return std::isfinite(num_) ? detail::to_text(num_) : (std::isnan(num_) ? "nan" : (num_ > 0 ? "inf" : "-inf"));
    case kind::string: {
      std::string s = "\"";
      s.append(str_.size() > 60 ? str_.substr(0, 57) + "..." : str_);
      return s + "\"";
    }
    case kind::list: {
      std::string s = "[";
      for (std::size_t i = 0; i < items_.size() && i < 4; ++i) s += (i ? ", " : "") + items_[i].to_text();
      if (items_.size() > 4) s += ", ... (" + std::to_string(items_.size()) + " items)";
      return s + "]";
    }
    case kind::object:
      return "{...}";
  }
  return "?";
}

inline bool operator==(const config_value& a, const config_value& b) {
  if (a.is_number() && b.is_number()) return a.num_ == b.num_ && (a.kind_ != b.kind_ || a.int_ == b.int_);
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case config_value::kind::null:
      return true;
    case config_value::kind::boolean:
      return a.bool_ == b.bool_;
    case config_value::kind::string:
      return a.str_ == b.str_;
    case config_value::kind::list:
      return a.items_ == b.items_;
    case config_value::kind::object: {
      if (a.keys_.size() != b.keys_.size()) return false;
      for (std::size_t i = 0; i < a.keys_.size(); ++i) {
        const config_value* o = b.find(a.keys_[i]);
        if (!o || !(*o == a.values_[i])) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace posenc::inline v0
