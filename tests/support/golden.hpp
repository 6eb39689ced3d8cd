// tests/support/golden.hpp — reading the golden files produced by the reference implementations.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace posenc_test {

/// Parses tests/golden/<name> (e.g. "rope_apply.json").
inline nlohmann::json load_golden(const std::string& name) {
  const std::string path = std::string(POSENC_GOLDEN_DIR) + "/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open golden file " + path);
  return nlohmann::json::parse(in);
}

/// The case with the given id.
inline const nlohmann::json& golden_case(const nlohmann::json& file, const std::string& id) {
  for (const auto& c : file.at("cases"))
    if (c.at("id") == id) return c;
  throw std::runtime_error("no golden case " + id);
}

/// A nested list flattened row-major into doubles.
inline std::vector<double> flatten(const nlohmann::json& j) {
  std::vector<double> out;
  auto rec = [&](const nlohmann::json& x, auto&& self) -> void {
    if (x.is_array())
      for (const auto& e : x) self(e, self);
    else
      out.push_back(x.get<double>());
  };
  rec(j, rec);
  return out;
}

}  // namespace posenc_test
