// tests/config/gguf_writer.hpp — builds small GGUF v3 files in memory for the loader tests and the
// fuzz seeds (little-endian hosts only, like the reader).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace posenc_test {

class gguf_writer {
 public:
  void u32(const std::string& k, std::uint32_t v) { kv(k, 4, &v, 4); }
  void i32(const std::string& k, std::int32_t v) { kv(k, 5, &v, 4); }
  void f32(const std::string& k, float v) { kv(k, 6, &v, 4); }
  void u64(const std::string& k, std::uint64_t v) { kv(k, 10, &v, 8); }
  void f64(const std::string& k, double v) { kv(k, 12, &v, 8); }
  void boolean(const std::string& k, bool v) {
    const std::uint8_t b = v ? 1 : 0;
    kv(k, 7, &b, 1);
  }
  void str(const std::string& k, const std::string& v) {
    key(k);
    pod(std::uint32_t{8});
    string(kvs_, v);
    ++n_kv_;
  }
  void i32_array(const std::string& k, const std::vector<std::int32_t>& v) {
    key(k);
    pod(std::uint32_t{9});
    pod(std::uint32_t{5});
    pod(static_cast<std::uint64_t>(v.size()));
    for (auto x : v) pod(x);
    ++n_kv_;
  }
  void str_array(const std::string& k, const std::vector<std::string>& v) {
    key(k);
    pod(std::uint32_t{9});
    pod(std::uint32_t{8});
    pod(static_cast<std::uint64_t>(v.size()));
    for (const auto& x : v) string(kvs_, x);
    ++n_kv_;
  }
  /// An F32 tensor of one dimension.
  void tensor_f32(const std::string& name, const std::vector<float>& data) { tensors_.push_back({name, data}); }

  [[nodiscard]] std::string bytes() const {
    std::string out = "GGUF";
    append(out, std::uint32_t{3});
    append(out, static_cast<std::uint64_t>(tensors_.size()));
    append(out, n_kv_);
    out += kvs_;
    std::uint64_t offset = 0;
    for (const auto& t : tensors_) {
      string(out, t.first);
      append(out, std::uint32_t{1});
      append(out, static_cast<std::uint64_t>(t.second.size()));
      append(out, std::uint32_t{0});
      append(out, offset);
      offset += (t.second.size() * 4 + 31) / 32 * 32;
    }
    while (out.size() % 32) out.push_back('\0');
    for (const auto& t : tensors_) {
      const std::size_t start = out.size();
      for (float x : t.second) append(out, x);
      while ((out.size() - start) % 32) out.push_back('\0');
    }
    return out;
  }

 private:
  template <class T>
  static void append(std::string& s, T v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    s.append(b, sizeof v);
  }
  static void string(std::string& s, const std::string& v) {
    append(s, static_cast<std::uint64_t>(v.size()));
    s += v;
  }
  template <class T>
  void pod(T v) {
    append(kvs_, v);
  }
  void key(const std::string& k) { string(kvs_, k); }
  void kv(const std::string& k, std::uint32_t type, const void* v, std::size_t n) {
    key(k);
    pod(type);
    kvs_.append(static_cast<const char*>(v), n);
    ++n_kv_;
  }
  std::string kvs_;
  std::uint64_t n_kv_ = 0;
  std::vector<std::pair<std::string, std::vector<float>>> tensors_;
};

}  // namespace posenc_test
