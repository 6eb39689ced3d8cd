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
  /// A key of any type with its value bytes as given (for malformed and unusual values).
  void raw(const std::string& k, std::uint32_t type, const std::string& value) {
    key(k);
    pod(type);
    kvs_ += value;
    ++n_kv_;
  }
  /// An array of `n` elements of scalar type `et` (all zero bytes): large arrays without a vector.
  void zero_array(const std::string& k, std::uint32_t et, std::uint64_t n, std::size_t element_size) {
    key(k);
    pod(std::uint32_t{9});
    pod(et);
    pod(n);
    kvs_.append(n * element_size, '\0');
    ++n_kv_;
  }
  /// Little-endian bytes of v (for raw()).
  template <class T>
  [[nodiscard]] static std::string le(T v) {
    std::string s;
    append(s, v);
    return s;
  }
  /// An F32 tensor of one dimension.
  void tensor_f32(const std::string& name, const std::vector<float>& data) { tensors_.push_back({name, data}); }
  /// A tensor info of any GGML type, dimensions and offset, with `data` as its bytes (at the end of
  /// the data section's used part; the offset is taken as given).
  void tensor_raw(const std::string& name, std::vector<std::uint64_t> dims, std::uint32_t ggml_type,
                  std::uint64_t offset, std::string data) {
    raw_tensors_.push_back({name, std::move(dims), ggml_type, offset, std::move(data)});
  }
  /// Overrides the version written in the header.
  void version(std::uint32_t v) { version_ = v; }

  [[nodiscard]] std::string bytes() const {
    std::string out = "GGUF";
    append(out, version_);
    append(out, static_cast<std::uint64_t>(tensors_.size() + raw_tensors_.size()));
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
    for (const auto& t : raw_tensors_) {
      string(out, t.name);
      append(out, static_cast<std::uint32_t>(t.dims.size()));
      for (auto d : t.dims) append(out, d);
      append(out, t.type);
      append(out, t.offset);
    }
    while (out.size() % 32) out.push_back('\0');
    for (const auto& t : tensors_) {
      const std::size_t start = out.size();
      for (float x : t.second) append(out, x);
      while ((out.size() - start) % 32) out.push_back('\0');
    }
    for (const auto& t : raw_tensors_) out += t.data;
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
  struct f32_tensor {
    std::string first;
    std::vector<float> second;
  };
  struct raw_tensor {
    std::string name;
    std::vector<std::uint64_t> dims;
    std::uint32_t type;
    std::uint64_t offset;
    std::string data;
  };
  std::vector<f32_tensor> tensors_;
  std::vector<raw_tensor> raw_tensors_;
  std::uint32_t version_ = 3;
};

}  // namespace posenc_test
