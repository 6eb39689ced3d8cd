// posenc/config/gguf.hpp — GGUF files: a reader for the metadata section of a .gguf file, and
// load_gguf_config (metadata -> model_config, docs/spec.md §11).
//
// The mapping follows llama.cpp (config/read_gguf.hpp reads the keys, config/rules_*.hpp apply them as
// llama.cpp runs them): factor is stored as written (runtime freq_scale = 1/factor), an absent scaling
// type with a factor means linear, the pair layout comes from the architecture table (the layout
// llama.cpp rotates after convert_hf_to_gguf.py's permutations), DeepSeek-2's yarn_log_multiplier is
// 0.1 * mscale_all_dim, and Llama-3 / LongRoPE factors travel as tensors (rope_freqs,
// rope_factors_long/short). An architecture the table does not know is refused unless the load is
// generic. The file reader reads only the header, the key/values and those few small tensors; it
// never loads weights.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <istream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <posenc/config/model_config.hpp>
#include <posenc/config/read_gguf.hpp>
#include <posenc/config/rules.hpp>
#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/half.hpp>

namespace posenc::inline v0 {

/// Maps GGUF metadata (an object of "key" -> value, keys as in the file) onto a model_config.
/// `tensors` optionally holds the small RoPE tensors by name ("rope_freqs.weight",
/// "rope_factors_long.weight", "rope_factors_short.weight") as lists of numbers.
[[nodiscard]] inline model_config load_gguf_config(const config_value& metadata, const config_value* tensors = nullptr,
                                                   const load_options& options = {}) {
  return detail::rules::load_model(read_gguf_view(metadata, tensors), options);
}

/// What read_gguf returns: the key/values (arrays longer than gguf_limits::max_array are left out)
/// and the RoPE tensors found, as lists of numbers by tensor name.
struct gguf_contents {
  std::uint32_t version = 0;
  config_value metadata = config_value::object();
  config_value tensors = config_value::object();
};

/// What read_gguf reads and keeps at most, so that time and memory stay linear in a bounded input
/// whatever the file says. Real files: ~50 keys, a few per-layer arrays of <= ~100 elements,
/// vocabularies of up to ~260k entries (skipped) and a metadata section of a few MiB.
struct gguf_limits {
  /// Arrays with more elements are skipped (not kept): vocabularies, merges, token scores.
  std::uint64_t max_array = 4096;
  /// Bytes from the start of the file to the end of the tensor infos; a larger metadata section
  /// is a config_error (like config/json.hpp's 64 MiB cap on config files).
  std::uint64_t max_metadata_bytes = std::uint64_t{64} << 20;
  /// Key/values in the file; more is a config_error.
  std::uint64_t max_keys = 65536;
  /// Array elements kept in all (nested arrays included); more is a config_error.
  std::uint64_t max_kept_elements = std::uint64_t{1} << 18;
};

namespace detail::gguf {

/// Bounds-checked reading from a stream of known size; every failure is a config_error.
class reader {
 public:
  reader(std::istream& in, std::string source) : in_(in), source_(std::move(source)) {
    in_.seekg(0, std::ios::end);
    size_ = static_cast<std::uint64_t>(in_.tellg());
    in_.seekg(0, std::ios::beg);
    if (!in_) fail("cannot read");
  }
  [[noreturn]] void fail(const std::string& what) const { throw config_error(source_, what); }
  [[nodiscard]] std::uint64_t pos() { return static_cast<std::uint64_t>(in_.tellg()); }
  [[nodiscard]] std::uint64_t remaining() { return size_ - pos(); }
  /// Reads past `end` fail (the metadata cap); seek() and the tensor data are not limited by it.
  void limit(std::uint64_t end, std::string why) {
    limit_ = end;
    limit_why_ = std::move(why);
  }
  void need(std::uint64_t n) {
    const std::uint64_t at = pos();
    if (n > size_ - at)
      fail("truncated GGUF (needs " + std::to_string(n) + " more bytes at offset " + std::to_string(at) + ")");
    if (n > limit_ - std::min(at, limit_)) fail(limit_why_);
  }
  void raw(void* dst, std::size_t n) {
    need(n);
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    if (!in_) fail("read error");
  }
  template <class T>
  T scalar() {
    T v{};
    raw(&v, sizeof v);
    if constexpr (std::endian::native == std::endian::big) fail("big-endian hosts are not supported");
    return v;
  }
  void skip(std::uint64_t n) {
    need(n);
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
  }
  void seek(std::uint64_t at) {
    if (at > size_) fail("offset beyond end of file");
    limit_ = UINT64_MAX;
    in_.seekg(static_cast<std::streamoff>(at), std::ios::beg);
  }
  std::string string(std::uint64_t max_len) {
    const auto n = scalar<std::uint64_t>();
    need(n);
    if (n > max_len) {
      skip(n);
      return {};
    }
    std::string s(static_cast<std::size_t>(n), '\0');
    raw(s.data(), s.size());
    return s;
  }
  void skip_string() { skip(scalar<std::uint64_t>()); }

 private:
  std::istream& in_;
  std::string source_;
  std::uint64_t size_ = 0;
  std::uint64_t limit_ = UINT64_MAX;
  std::string limit_why_;
};

enum value_type : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  str = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12
};

inline std::uint64_t scalar_size(std::uint32_t t) {
  switch (t) {
    case u8:
    case i8:
    case boolean:
      return 1;
    case u16:
    case i16:
      return 2;
    case u32:
    case i32:
    case f32:
      return 4;
    case u64:
    case i64:
    case f64:
      return 8;
    default:
      return 0;
  }
}

inline config_value read_scalar(reader& r, std::uint32_t t) {
  switch (t) {
    case u8:
      return config_value::integer(r.scalar<std::uint8_t>());
    case i8:
      return config_value::integer(r.scalar<std::int8_t>());
    case u16:
      return config_value::integer(r.scalar<std::uint16_t>());
    case i16:
      return config_value::integer(r.scalar<std::int16_t>());
    case u32:
      return config_value::integer(r.scalar<std::uint32_t>());
    case i32:
      return config_value::integer(r.scalar<std::int32_t>());
    case f32:
      return config_value::number(static_cast<double>(r.scalar<float>()));
    case boolean:
      return config_value::boolean(r.scalar<std::uint8_t>() != 0);
    case u64: {
      const auto u = r.scalar<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(INT64_MAX) ? config_value::integer(static_cast<std::int64_t>(u))
                                                        : config_value::number(static_cast<double>(u));
    }
    case i64:
      return config_value::integer(r.scalar<std::int64_t>());
    case f64:
      return config_value::number(r.scalar<double>());
    default:
      r.fail("unknown GGUF value type " + std::to_string(t));
  }
}

/// Reads (or skips, when `keep` is false) one value of type t. Arrays longer than max_array are
/// skipped; kept array elements count against `kept` (at most max_kept_elements).
inline config_value read_value(reader& r, std::uint32_t t, const gguf_limits& lim, std::uint64_t& kept, int depth,
                               bool keep) {
  if (t == str) {
    if (!keep) {
      r.skip_string();
      return {};
    }
    return config_value::string(r.string(1u << 16));
  }
  if (t == array) {
    if (depth > 2) r.fail("GGUF arrays nested too deeply");
    const auto et = r.scalar<std::uint32_t>();
    const auto n = r.scalar<std::uint64_t>();
    if (et != str && et != array) {
      const auto es = scalar_size(et);
      if (es == 0) r.fail("unknown GGUF array element type " + std::to_string(et));
      r.need(n > r.remaining() / es ? r.remaining() + 1 : n * es);
      if (!keep || n > lim.max_array) {
        r.skip(n * es);
        return {};
      }
    }
    const bool keep_items = keep && n <= lim.max_array;
    if (keep_items) {
      if (n > lim.max_kept_elements - kept)
        r.fail("GGUF arrays hold more than " + std::to_string(lim.max_kept_elements) +
               " kept elements in all (gguf_limits::max_kept_elements)");
      kept += n;
    }
    config_value v = config_value::list();
    for (std::uint64_t i = 0; i < n; ++i) {
      config_value e = read_value(r, et, lim, kept, depth + 1, keep_items);
      if (keep_items) v.push_back(std::move(e));
    }
    return keep_items ? v : config_value{};
  }
  return read_scalar(r, t);
}

}  // namespace detail::gguf

/// Reads the header, the metadata key/values and the RoPE tensors of a GGUF (v2/v3) stream, within
/// `limits` (arrays longer than max_array, i.e. vocabularies, are skipped). Throws config_error
/// naming `source` for anything malformed, truncated, duplicated or over a limit.
[[nodiscard]] inline gguf_contents read_gguf(std::istream& in, const std::string& source = "gguf",
                                             const gguf_limits& limits = {}) {
  namespace g = detail::gguf;
  g::reader r(in, source);
  r.limit(limits.max_metadata_bytes, "GGUF metadata section larger than " + std::to_string(limits.max_metadata_bytes) +
                                         " bytes (gguf_limits::max_metadata_bytes)");
  gguf_contents out;
  char magic[4];
  r.raw(magic, 4);
  if (std::memcmp(magic, "GGUF", 4) != 0) r.fail("not a GGUF file (bad magic)");
  out.version = r.scalar<std::uint32_t>();
  if (out.version < 2 || out.version > 3) r.fail("unsupported GGUF version " + std::to_string(out.version));
  const auto n_tensors = r.scalar<std::uint64_t>();
  const auto n_kv = r.scalar<std::uint64_t>();
  // Each key/value needs at least 8 + 4 bytes, each tensor info 8 + 4 + 4 + 8 bytes.
  if (n_kv > r.remaining() / 12 || n_tensors > r.remaining() / 24) r.fail("GGUF counts exceed the file size");
  if (n_kv > limits.max_keys)
    r.fail(std::to_string(n_kv) + " GGUF key/values: more than " + std::to_string(limits.max_keys) +
           " (gguf_limits::max_keys)");
  std::uint64_t kept = 0;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string(1u << 16);
    if (key.empty()) r.fail("empty or oversized GGUF key");
    const auto t = r.scalar<std::uint32_t>();
    config_value v = g::read_value(r, t, limits, kept, 0, true);
    if (out.metadata.find(key)) r.fail("GGUF key " + key + " appears twice");
    if (!v.is_null()) out.metadata.set(key, std::move(v));
  }

  struct info {
    std::string name;
    std::uint64_t elements;
    std::uint32_t type;
    std::uint64_t offset;
  };
  std::vector<info> wanted;
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    std::string name = r.string(1u << 16);
    const auto n_dims = r.scalar<std::uint32_t>();
    if (n_dims > 8) r.fail("tensor " + name + " has " + std::to_string(n_dims) + " dimensions");
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const auto e = r.scalar<std::uint64_t>();
      elements = (e != 0 && elements > (std::uint64_t{1} << 62) / e) ? (std::uint64_t{1} << 62) : elements * e;
    }
    const auto type = r.scalar<std::uint32_t>();
    const auto offset = r.scalar<std::uint64_t>();
    if (name == "rope_freqs.weight" || name == "rope_factors_long.weight" || name == "rope_factors_short.weight") {
      // Each is read once: a file listing one name a million times must not cost a million reads.
      for (const auto& w : wanted)
        if (w.name == name) r.fail("tensor " + name + " appears twice");
      wanted.push_back({std::move(name), elements, type, offset});
    }
  }
  std::uint64_t alignment = 32;
  if (const config_value* a = out.metadata.find("general.alignment"); a && a->is_integer()) {
    const auto v = a->as_integer();
    if (v <= 0 || (v & (v - 1)) != 0 || v > (1 << 20)) r.fail("general.alignment = " + a->to_text() + " is invalid");
    alignment = static_cast<std::uint64_t>(v);
  }
  const std::uint64_t data_start = (r.pos() + alignment - 1) / alignment * alignment;
  for (const auto& t : wanted) {
    if (t.elements > 65536) r.fail("tensor " + t.name + " is too large for a RoPE factor table");
    if (t.type != 0 && t.type != 1)
      r.fail("tensor " + t.name + " has GGML type " + std::to_string(t.type) + " (expected F32 or F16)");
    if (t.offset > (std::uint64_t{1} << 62)) r.fail("tensor " + t.name + " offset is out of range");
    r.seek(data_start + t.offset);
    config_value list = config_value::list();
    for (std::uint64_t i = 0; i < t.elements; ++i) {
      const double x = t.type == 0
                           ? static_cast<double>(r.scalar<float>())
                           : static_cast<double>(static_cast<float>(float16::from_bits(r.scalar<std::uint16_t>())));
      list.push_back(config_value::number(x));
    }
    out.tensors.set(t.name, std::move(list));
  }
  return out;
}

/// Reads a .gguf file's metadata and RoPE tensors and maps them (load_gguf_config).
[[nodiscard]] inline model_config load_gguf_file(const std::string& path, const load_options& options = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path, "cannot open file");
  const gguf_contents c = read_gguf(in, path);
  return load_gguf_config(c.metadata, &c.tensors, options);
}

}  // namespace posenc::inline v0
