// posenc/config/gguf.hpp — GGUF metadata ({arch}.rope.*, docs/spec.md §11) -> model_config, and a reader
// for the metadata section of a .gguf file.
//
// The mapping follows llama.cpp: factor is stored as written (runtime freq_scale = 1/factor), an
// absent scaling type with a factor means linear, the pair layout comes from the architecture
// (llama_model_rope_type: NORM = interleaved, NEOX = half-split), DeepSeek-2's yarn_log_multiplier
// is 0.1 * mscale_all_dim, and Llama-3 / LongRoPE factors travel as tensors (rope_freqs,
// rope_factors_long/short). The file reader reads only the header, the key/values and those few
// small tensors; it never loads weights.
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

#include <posenc/config/architectures.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/core/half.hpp>
#include <posenc/rope/config.hpp>

namespace posenc::inline v0 {

namespace detail::gguf {

inline bool one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

enum class arch_rope : unsigned char { none, norm, neox, mrope, unknown };

/// llama.cpp `llama_model_rope_type` for the common architectures.
inline arch_rope rope_kind(std::string_view a) {
  if (one_of(a, {"gpt2", "gptj", "mpt", "refact", "bloom", "mamba", "mamba2", "jamba", "jina-bert-v2", "t5",
                 "t5encoder", "jais", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "clip"}))
    return arch_rope::none;
  if (one_of(a, {"llama",      "llada",         "llama4",       "deci",       "baichuan",    "starcoder",
                 "internlm2",  "minicpm",       "xverse",       "command-r",  "cohere2",     "olmo",
                 "arctic",     "deepseek",      "deepseek2",    "plm",        "chatglm",     "granite",
                 "granitemoe", "granitehybrid", "chameleon",    "bailingmoe", "neo-bert",    "smollm3",
                 "arcee",      "ernie4_5",      "ernie4_5-moe", "mistral3",   "llama-embed", "glm4"}))
    return arch_rope::norm;
  if (one_of(
          a,
          {"falcon",         "falcon-h1",  "grok",         "dbrx",        "bert",      "modern-bert", "nomic-bert",
           "nomic-bert-moe", "eurobert",   "stablelm",     "bitnet",      "qwen",      "qwen2",       "dream",
           "qwen2moe",       "qwen3",      "qwen3moe",     "llada-moe",   "olmo2",     "olmoe",       "phi2",
           "phi3",           "phimoe",     "plamo",        "plamo2",      "gemma",     "gemma2",      "gemma3",
           "gemma3n",        "starcoder2", "openelm",      "gptneox",     "codeshell", "orion",       "nemotron",
           "exaone",         "exaone4",    "minicpm3",     "bailingmoe2", "dots1",     "hunyuan-moe", "gpt-oss",
           "hunyuan-dense",  "lfm2",       "smallthinker", "seed_oss",    "glm4moe",   "qwen3next",   "jina-bert-v3"}))
    return arch_rope::neox;
  if (one_of(a, {"qwen2vl", "qwen3vl", "qwen3vlmoe"})) return arch_rope::mrope;
  return arch_rope::unknown;
}

/// The {arch}.rope.* suffixes this loader reads or knowingly ignores.
inline bool known_rope_suffix(std::string_view s) {
  return one_of(s, {"rope.freq_base", "rope.dimension_count", "rope.scale_linear", "rope.scaling.type",
                    "rope.scaling.factor", "rope.scaling.original_context_length", "rope.scaling.yarn_beta_fast",
                    "rope.scaling.yarn_beta_slow", "rope.scaling.yarn_ext_factor", "rope.scaling.yarn_log_multiplier",
                    "rope.scaling.attn_factor", "rope.scaling.yarn_attn_factor", "rope.scaling.finetuned",
                    "rope.scaling.alpha", "rope.dimension_sections", "rope.freq_base_swa", "rope.dimension_count_swa"});
}

/// A head count stored per layer (llama.cpp writes an array when layers differ) or once.
///
/// An array entry of 0 marks a layer without attention (the convolution layers of hybrid models
/// such as LFM2, whose layer 0 is one; DeciLM's no-op layers), so the model's value is the first
/// nonzero entry; when the attention layers disagree that first one is used, with a warning (posenc
/// models one head count per model). An array with no nonzero entry gives no value, with a
/// warning. Entries must be integers in [0, 2^31); errors name the entry, e.g. `key[3]`.
inline std::optional<int> layer_int(const key_reader& r, const std::string& key, std::vector<std::string>& warnings) {
  const config_value* v = r.get(key);
  if (!v || !v->is_list()) return r.int32(key, 1);
  const auto& items = v->items();
  std::optional<int> first;
  std::size_t first_at = 0;
  bool differs = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    config_value one = config_value::object();
    one.set("", items[i]);
    const key_reader entry{&one, key + "[" + std::to_string(i) + "]"};
    const auto e = entry.int32("", 0);
    if (!e) throw config_error(key + "[" + std::to_string(i) + "]", "null", "an integer in [0, 2147483647]");
    if (*e == 0) continue;
    if (!first) {
      first = e;
      first_at = i;
    } else if (*e != *first) {
      differs = true;
    }
  }
  if (!first) {
    if (!items.empty()) warnings.push_back(key + ": 0 for every layer (no attention layer); ignored");
  } else if (differs) {
    warnings.push_back(key + ": differs per attention layer; using the first, " + key + "[" + std::to_string(first_at) +
                       "] = " + std::to_string(*first));
  }
  return first;
}

}  // namespace detail::gguf

/// Maps GGUF metadata (an object of "key" -> value, keys as in the file) onto a model_config.
/// `tensors` optionally holds the small RoPE tensors by name ("rope_freqs.weight",
/// "rope_factors_long.weight", "rope_factors_short.weight") as lists of numbers.
[[nodiscard]] inline model_config load_gguf_config(const config_value& metadata,
                                                   const config_value* tensors = nullptr) {
  namespace g = detail::gguf;
  using detail::merge_same;
  if (!metadata.is_object()) throw config_error("gguf", metadata.to_text(), "an object of metadata keys");
  model_config out;
  out.format = "gguf";
  const detail::key_reader md{&metadata, ""};
  const auto arch_opt = md.string("general.architecture");
  if (!arch_opt) throw config_error("general.architecture", "absent", "the model architecture name");
  out.model_type = *arch_opt;
  const std::string& arch = out.model_type;
  const std::string p = arch + ".";
  const std::int64_t max_len = std::int64_t{1} << 53;

  const auto heads = g::layer_int(md, p + "attention.head_count", out.warnings);
  out.num_attention_heads = heads;
  out.num_key_value_heads = g::layer_int(md, p + "attention.head_count_kv", out.warnings);
  out.max_position_embeddings = md.integer(p + "context_length", 0, max_len);

  // Score-bias encoders.
  if (const auto b = md.number(p + "attention.max_alibi_bias")) {
    if (*b > 0) out.alibi = model_config::alibi_params{*b};  // llama.cpp: 0 means "no ALiBi"
  } else if (arch == "bloom" || arch == "mpt") {
    out.alibi = model_config::alibi_params{};
  }
  if (arch == "t5" || arch == "t5encoder" || md.has(p + "attention.relative_buckets_count")) {
    model_config::t5_params t;
    t.num_buckets = md.int32(p + "attention.relative_buckets_count").value_or(t.num_buckets);
    // llama.cpp hard-codes max_distance = 128 (docs/spec.md §5.2).
    out.t5 = t;
  }

  // Report rope keys we do not understand.
  for (const auto& m : metadata.members()) {
    if (m.key.rfind(p + "rope.", 0) != 0) continue;
    const std::string suffix = m.key.substr(p.size());
    if (!g::known_rope_suffix(suffix)) {
      out.warnings.push_back(m.key + ": unknown rope key; ignored");
    } else if (suffix == "rope.dimension_sections") {
      out.warnings.push_back(m.key + ": multimodal RoPE sections ignored (text positions make it plain RoPE)");
    } else if (suffix == "rope.freq_base_swa" || suffix == "rope.dimension_count_swa") {
      out.warnings.push_back(m.key +
                             ": sliding-window layers' RoPE is not modelled; the full-attention values are used");
    } else if (suffix == "rope.scaling.finetuned" || suffix == "rope.scaling.yarn_attn_factor") {
      out.warnings.push_back(m.key + ": not interpreted; ignored");
    }
  }

  const g::arch_rope kind = g::rope_kind(arch);
  const bool has_rope_keys = md.has(p + "rope.freq_base") || md.has(p + "rope.dimension_count");
  if (kind == g::arch_rope::none || (kind == g::arch_rope::unknown && !has_rope_keys)) return out;
  if (kind == g::arch_rope::unknown)
    out.warnings.push_back("general.architecture = \"" + arch +
                           "\": pair layout unknown to this loader; assuming NeoX (half-split) pairs");
  if (kind == g::arch_rope::mrope)
    out.warnings.push_back("general.architecture = \"" + arch +
                           "\": multimodal RoPE; text positions make it plain half-split RoPE");

  rope_config rc;
  rc.theta = md.number(p + "rope.freq_base").value_or(10000.0);
  rc.layout = kind == g::arch_rope::norm ? kernels::pairing::interleaved : kernels::pairing::half_split;
  if (const architecture* row = find_gguf_architecture(arch)) rc.layout = row->gguf_layout;  // the table decides

  // Head dimension: key_length (MLA: key_length_mla), else embedding_length / head_count.
  std::optional<int> head_dim;
  if (arch == "deepseek2") head_dim = md.int32(p + "attention.key_length_mla", 0);
  if (!head_dim) head_dim = md.int32(p + "attention.key_length", 0);
  if (!head_dim) {
    const auto embd = md.int32(p + "embedding_length", 1);
    if (!embd || !heads)
      throw config_error(p + "attention.key_length", "absent",
                         "key_length, or embedding_length and attention.head_count");
    if (*embd % *heads != 0)
      throw config_error(p + "embedding_length", detail::to_text(*embd),
                         "a multiple of attention.head_count = " + detail::to_text(*heads));
    head_dim = *embd / *heads;
  }
  rc.head_dim = *head_dim;
  if (auto r = md.int32(p + "rope.dimension_count", 0)) {
    rc.rotary_dim = *r;
    // DeepSeek-2 MLA: [nope | rope] per head, RoPE on the trailing slice.
    if (arch == "deepseek2" && *r <= rc.head_dim) rc.rotary_offset = rc.head_dim - *r;
  }

  // Scaling.
  const auto type_str = md.string(p + "rope.scaling.type");
  const auto factor = merge_same(md.number(p + "rope.scaling.factor"), p + "rope.scaling.factor",
                                 md.number(p + "rope.scale_linear"), p + "rope.scale_linear");
  const auto orig = md.integer(p + "rope.scaling.original_context_length", 0, max_len);
  const auto alpha = md.number(p + "rope.scaling.alpha");
  const auto attn = md.number(p + "rope.scaling.attn_factor");

  auto tensor = [&](const char* name) -> std::optional<std::vector<double>> {
    if (!tensors) return std::nullopt;
    const detail::key_reader t{tensors, "tensor "};
    return t.numbers(name);
  };
  const auto freqs = tensor("rope_freqs.weight");

  std::string type;
  if (type_str) {
    if (*type_str == "none" || *type_str == "linear" || *type_str == "yarn" || *type_str == "longrope")
      type = *type_str;
    else
      throw config_error(p + "rope.scaling.type", "\"" + *type_str + "\"", "one of none, linear, yarn, longrope");
  } else {
    type = factor ? "linear" : "none";  // llama.cpp's default type is linear; without a factor it is the identity
  }

  if (freqs) {
    if (type != "none" && !(type == "linear" && (!factor || *factor == 1.0)))
      throw config_error("rope_freqs.weight", "cannot be combined with " + p + "rope.scaling.type = " + type);
    rc.scaling = frequency_factors{*freqs, 1.0};
    out.rope_type = "frequency_factors";
  } else if (alpha && (type == "none" || (type == "linear" && (!factor || *factor == 1.0)))) {
    rc.scaling = ntk_scaling{*alpha};
    out.rope_type = "ntk";
  } else if (type == "none" || (type == "linear" && !factor)) {
    rc.scaling = default_scaling{};
    out.rope_type = "default";
  } else if (type == "linear") {
    rc.scaling = linear_scaling{*factor};
    out.rope_type = "linear";
  } else if (type == "yarn") {
    yarn_scaling y;
    if (!factor) throw config_error(p + "rope.scaling.factor", "absent", "a scaling factor for YaRN");
    y.factor = *factor;
    if (orig) {
      y.original_max_position = *orig;
    } else if (out.max_position_embeddings) {
      y.original_max_position = *out.max_position_embeddings;
      out.warnings.push_back(p + "rope.scaling.original_context_length absent; L0 = context_length");
    } else {
      throw config_error(p + "rope.scaling.original_context_length", "absent", "the pre-training context length");
    }
    if (auto v = md.number(p + "rope.scaling.yarn_beta_fast")) y.beta_fast = *v;
    if (auto v = md.number(p + "rope.scaling.yarn_beta_slow")) y.beta_slow = *v;
    if (auto v = md.number(p + "rope.scaling.yarn_ext_factor"); v && *v >= 0) y.extrapolation_factor = *v;
    if (auto ylm = md.number(p + "rope.scaling.yarn_log_multiplier")) {
      // DeepSeek-2 GGUFs store 0.1 * mscale_all_dim; llama.cpp's net rotary magnitude is 1 and the
      // softmax scale gets (1 + ylm * ln s)^2, which is HF's mscale = mscale_all_dim.
      if (*ylm > 0) {
        y.mscale = *ylm / 0.1;
        y.mscale_all_dim = *ylm / 0.1;
      } else {
        y.attention_factor = 1.0;
        out.warnings.push_back(p + "rope.scaling.yarn_log_multiplier = " + detail::to_text(*ylm) +
                               ": no softmax correction, rotary magnitude 1");
      }
    }
    if (attn && *attn != 1.0) {
      // ggml multiplies attn_factor into its own 1 + 0.1 ln(s) (docs/spec.md §8.5).
      const double m = (y.factor > 1 ? 0.1 * std::log(y.factor) + 1.0 : 1.0) * *attn;
      if (y.attention_factor && *y.attention_factor != m)
        throw config_error(p + "rope.scaling.attn_factor", "contradicts yarn_log_multiplier = 0");
      y.attention_factor = m;
      out.warnings.push_back(p + "rope.scaling.attn_factor = " + detail::to_text(*attn) +
                             " read as ggml does: attention_factor = attn_factor * (1 + 0.1 ln factor)");
    }
    rc.scaling = y;
    out.rope_type = "yarn";
  } else if (type == "longrope") {
    longrope_scaling l;
    auto lf = tensor("rope_factors_long.weight");
    auto sf = tensor("rope_factors_short.weight");
    if (!lf || !sf)
      throw config_error("rope_factors_long.weight", "absent",
                         "the rope_factors_long/short tensors (read the .gguf file itself, not only its key/values)");
    l.long_factor = std::move(*lf);
    l.short_factor = std::move(*sf);
    if (!orig)
      throw config_error(p + "rope.scaling.original_context_length", "absent", "the pre-training context length");
    l.original_max_position = *orig;
    l.factor = factor;
    l.max_position = out.max_position_embeddings.value_or(0);
    l.attention_factor = attn;
    rc.scaling = std::move(l);
    out.rope_type = "longrope";
  }

  out.rope = std::move(rc);
  return out;
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
[[nodiscard]] inline model_config load_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path, "cannot open file");
  const gguf_contents c = read_gguf(in, path);
  return load_gguf_config(c.metadata, &c.tensors);
}

}  // namespace posenc::inline v0
