// posenc/config/json.hpp — config.json files via nlohmann-json (optional; link posenc::json).
//
// The only posenc header that includes <nlohmann/json.hpp>; posenc.hpp does not include it. It
// converts JSON into the library's config_value tree and hands that to load_hf_config
// (config/hf.hpp). Errors (missing file, malformed JSON, bad keys) are config_error naming the file
// or the key. Nothing here is needed by the encoders themselves.
#pragma once

#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <posenc/config/hf.hpp>
#include <posenc/config/model_config.hpp>
#include <posenc/config/value.hpp>
#include <posenc/core/errors.hpp>

namespace posenc::inline v0 {

/// Most values a converted document may hold (each object, list, member value and item counts one). Real
/// config.json files have hundreds (ImageNet-22k label maps about 44 000); the cap keeps a hostile
/// document from costing ~100 bytes of config_value per 2 bytes of text. O(n log n) to convert.
inline constexpr std::size_t max_config_values = std::size_t{1} << 20;

namespace detail {
struct json_limits {
  int max_depth;
  std::size_t max_values;
  std::size_t values = 0;
};
inline config_value to_config_value(const nlohmann::json& j, int depth, json_limits& lim) {
  if (depth > lim.max_depth)
    throw config_error("config", "nested too deeply (more than " + std::to_string(lim.max_depth) + " levels)");
  // Counted before the children are built, so an oversized list fails before it costs anything.
  const std::size_t children = j.is_structured() ? j.size() : 0;
  if (lim.values >= lim.max_values || children > lim.max_values - lim.values - 1)
    throw config_error("config",
                       "more than " + std::to_string(lim.max_values) + " values in all: not a model configuration");
  ++lim.values;
  using t = nlohmann::json::value_t;
  switch (j.type()) {
    case t::null:
    case t::discarded:
      return {};
    case t::boolean:
      return config_value::boolean(j.get<bool>());
    case t::number_integer:
      return config_value::integer(j.get<std::int64_t>());
    case t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return config_value::integer(static_cast<std::int64_t>(u));
      return config_value::number(static_cast<double>(u));
    }
    case t::number_float:
      return config_value::number(j.get<double>());
    case t::string:
      return config_value::string(j.get<std::string>());
    case t::array: {
      config_value v = config_value::list();
      for (const auto& e : j) v.push_back(to_config_value(e, depth + 1, lim));
      return v;
    }
    case t::object: {
      config_value v = config_value::object();
      for (auto it = j.begin(); it != j.end(); ++it) v.set(it.key(), to_config_value(it.value(), depth + 1, lim));
      return v;
    }
    case t::binary:
      throw config_error("config", "binary JSON values are not supported");
  }
  return {};
}
}  // namespace detail

/// Converts a parsed JSON document. Nesting deeper than `max_depth`, or more than `max_values`
/// values in all, throws config_error (a model config is a few levels deep and a few hundred
/// values; the limits keep hostile input from exhausting the stack or the memory).
[[nodiscard]] inline config_value to_config_value(const nlohmann::json& j, int max_depth = 64,
                                                  std::size_t max_values = max_config_values) {
  detail::json_limits lim{max_depth, max_values};
  return detail::to_config_value(j, 0, lim);
}

/// Parses JSON text into a config_value; `source` names the text in messages (e.g. the file name).
[[nodiscard]] inline config_value parse_config_json(std::string_view text, std::string_view source = "config.json") {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions for the position of the error (nlohmann says which byte).
    try {
      const auto again = nlohmann::json::parse(text.begin(), text.end());
      (void)again;
    } catch (const nlohmann::json::exception& e) {
      std::string what = e.what();
      if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
      throw config_error(source, "malformed JSON: " + what);
    }
    throw config_error(source, "malformed JSON");
  }
  return to_config_value(j);
}

/// Largest config file read_text_file accepts: real config.json files are kilobytes; the cap keeps
/// a wrong path (a device, a weights file) from being read without bound.
inline constexpr std::size_t max_config_file_bytes = std::size_t{64} << 20;

/// Reads a whole file; throws config_error naming the path when it cannot be read or is larger than
/// max_config_file_bytes.
[[nodiscard]] inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path, "cannot open file");
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_config_file_bytes) throw config_error(path, "larger than 64 MiB: not a config file");
  }
  if (in.bad()) throw config_error(path, "cannot read file");
  return text;
}

/// Loads a Hugging Face config.json (docs/spec.md §11) from JSON text.
[[nodiscard]] inline model_config load_hf_config_json(std::string_view text, std::string_view source = "config.json",
                                                      const load_options& options = {}) {
  return load_hf_config(parse_config_json(text, source), options);
}

/// Loads a Hugging Face config.json file.
[[nodiscard]] inline model_config load_hf_config_file(const std::string& path, const load_options& options = {}) {
  return load_hf_config_json(read_text_file(path), path, options);
}

}  // namespace posenc::inline v0
