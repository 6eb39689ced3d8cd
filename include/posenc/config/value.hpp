// posenc/config/value.hpp — a small JSON-free tree of configuration values (the loaders' input).
//
// A model configuration is a tree of null / bool / integer / number / string / list / object values.
// The HF and GGUF loaders (config/hf.hpp, config/gguf.hpp) read this tree, so they need no JSON
// library: config/json.hpp converts an nlohmann::json into it and config/gguf.hpp builds it from
// GGUF metadata. Objects keep their insertion order (for stable warnings, and the HF loader's
// "first per-layer-type entry"); `set` and `find` are O(log n) through an ordered index (a balanced
// tree, so no input can make them slower, unlike a hash), so an object of n keys is built in
// O(n log n). It does not cap anything itself: the loaders bound what they build (config/json.hpp
// max_config_values, config/gguf.hpp gguf_limits).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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
  config_value(const config_value& other);
  config_value(config_value&& other) noexcept;
  config_value& operator=(const config_value& other);
  config_value& operator=(config_value&& other) noexcept;
  ~config_value();
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
  /// Number of members (objects) or items (lists).
  [[nodiscard]] std::size_t size() const noexcept;

  /// Appends an item to a list.
  void push_back(config_value v) { items_.push_back(std::move(v)); }
  /// Sets `key` in an object: replaces the value of an existing member of that name in place (its
  /// position in the insertion order stays), else appends. O(log n).
  void set(std::string_view key, config_value v);
  /// The member named `key`, or nullptr. Objects only. O(log n).
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
  // Objects: the members live in the nodes of an ordered map (stable addresses), and `order` lists
  // them in insertion order. Behind a pointer: a map of an incomplete type cannot be a member, and
  // scalars and lists then carry 8 bytes for it instead of a map and a vector.
  struct object_data;
  std::unique_ptr<object_data> obj_;
};

struct config_value::object_data {
  using map_type = std::map<std::string, config_value, std::less<>>;
  map_type map;
  std::vector<const map_type::value_type*> order;

  object_data() = default;
  object_data(const object_data& o) {
    order.reserve(o.order.size());
    for (const auto* m : o.order) order.push_back(&*map.emplace(m->first, m->second).first);
  }
  object_data& operator=(const object_data&) = delete;
};

inline config_value::config_value(const config_value& o)
    : kind_(o.kind_),
      bool_(o.bool_),
      int_(o.int_),
      num_(o.num_),
      str_(o.str_),
      items_(o.items_),
      obj_(o.obj_ ? std::make_unique<object_data>(*o.obj_) : nullptr) {}
inline config_value::config_value(config_value&& o) noexcept = default;
inline config_value& config_value::operator=(config_value&& o) noexcept = default;
inline config_value& config_value::operator=(const config_value& o) {
  if (this != &o) *this = config_value(o);
  return *this;
}
inline config_value::~config_value() = default;

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

inline std::size_t config_value::size() const noexcept {
  if (kind_ == kind::object) return obj_ ? obj_->order.size() : 0;
  return items_.size();
}

inline std::vector<config_value::member> config_value::members() const {
  std::vector<member> out;
  if (!obj_) return out;
  out.reserve(obj_->order.size());
  for (const auto* m : obj_->order) out.push_back(member{m->first, m->second});
  return out;
}

inline void config_value::set(std::string_view key, config_value v) {
  if (!obj_) obj_ = std::make_unique<object_data>();
  auto& map = obj_->map;
  if (auto it = map.find(key); it != map.end()) {
    it->second = std::move(v);
    return;
  }
  auto& order = obj_->order;
  if (order.size() == order.capacity()) order.reserve(std::max<std::size_t>(8, 2 * order.size()));
  // Capacity is there, so the push_back cannot throw after the emplace: map and order stay consistent.
  order.push_back(&*map.emplace(std::string(key), std::move(v)).first);
}

inline const config_value* config_value::find(std::string_view key) const noexcept {
  if (!obj_) return nullptr;
  const auto it = obj_->map.find(key);
  return it == obj_->map.end() ? nullptr : &it->second;
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
      if (a.size() != b.size()) return false;
      for (const auto& m : a.members()) {
        const config_value* o = b.find(m.key);
        if (!o || !(*o == m.value)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace posenc::inline v0
