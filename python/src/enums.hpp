// python/src/enums.hpp — posenc's enums from the strings Python callers write ("half_split",
// "interleaved", ...); a ValueError lists the choices.
#pragma once

#include <string>
#include <utility>

#include <posenc/attention/kv_cache.hpp>
#include <posenc/core/pairing.hpp>
#include <posenc/encoders/alibi.hpp>
#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/shaw.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/config.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/xpos.hpp>

#include "binding.hpp"

namespace pyposenc {

template <class E>
E parse_choice(const std::string& v, const char* param, std::initializer_list<std::pair<const char*, E>> choices) {
  std::string list;
  for (const auto& [name, value] : choices) {
    if (v == name) return value;
    list += (list.empty() ? "'" : ", '") + std::string(name) + "'";
  }
  throw py::value_error(std::string(param) + " = '" + v + "' is invalid (expected one of " + list + ")");
}

inline posenc::pairing parse_pairing(const std::string& v, const char* p) {
  return parse_choice<posenc::pairing>(
      v, p, {{"half_split", posenc::pairing::half_split}, {"interleaved", posenc::pairing::interleaved}});
}
inline posenc::partial_rotary_mode parse_partial_mode(const std::string& v) {
  return parse_choice<posenc::partial_rotary_mode>(
      v, "rope.partial_mode",
      {{"prefix", posenc::partial_rotary_mode::prefix}, {"proportional", posenc::partial_rotary_mode::proportional}});
}
inline posenc::angle_mode parse_angle_mode(const std::string& v) {
  return parse_choice<posenc::angle_mode>(
      v, "rope.angles", {{"exact", posenc::angle_mode::exact}, {"reference_fp32", posenc::angle_mode::reference_fp32}});
}
inline posenc::dynamic_length_source parse_length_source(const std::string& v) {
  return parse_choice<posenc::dynamic_length_source>(
      v, "dynamic_ntk.length_source",
      {{"max_position_in_call", posenc::dynamic_length_source::max_position_in_call},
       {"fixed_max", posenc::dynamic_length_source::fixed_max}});
}
inline posenc::longrope_switch parse_longrope_switch(const std::string& v) {
  return parse_choice<posenc::longrope_switch>(
      v, "longrope.switch_policy",
      {{"per_call_max_position", posenc::longrope_switch::per_call_max_position},
       {"fixed_by_capacity", posenc::longrope_switch::fixed_by_capacity},
       {"always_long", posenc::longrope_switch::always_long}});
}
inline posenc::mrope_layout parse_mrope_layout(const std::string& v) {
  return parse_choice<posenc::mrope_layout>(
      v, "mrope.layout",
      {{"contiguous", posenc::mrope_layout::contiguous}, {"interleaved", posenc::mrope_layout::interleaved}});
}
inline posenc::xpos_center_policy parse_xpos_center(const std::string& v) {
  return parse_choice<posenc::xpos_center_policy>(v, "xpos.center_policy",
                                                  {{"fixed", posenc::xpos_center_policy::fixed},
                                                   {"midpoint_of_call", posenc::xpos_center_policy::midpoint_of_call}});
}
inline posenc::temperature_rule parse_temperature_rule(const std::string& v) {
  return parse_choice<posenc::temperature_rule>(
      v, "temperature.rule",
      {{"llama4", posenc::temperature_rule::llama4}, {"llama4_beta", posenc::temperature_rule::llama4_beta}});
}
inline posenc::alibi_mode parse_alibi_mode(const std::string& v) {
  return parse_choice<posenc::alibi_mode>(v, "alibi.mode",
                                          {{"symmetric", posenc::alibi_mode::symmetric},
                                           {"causal_true_distance", posenc::alibi_mode::causal_true_distance},
                                           {"causal_row_shift", posenc::alibi_mode::causal_row_shift}});
}
inline posenc::shaw_sign parse_shaw_sign(const std::string& v) {
  return parse_choice<posenc::shaw_sign>(v, "shaw.sign",
                                         {{"key_minus_query", posenc::shaw_sign::key_minus_query},
                                          {"query_minus_key", posenc::shaw_sign::query_minus_key}});
}
inline posenc::out_of_range_policy parse_out_of_range(const std::string& v) {
  return parse_choice<posenc::out_of_range_policy>(v, "learned_absolute.out_of_range",
                                                   {{"error", posenc::out_of_range_policy::error},
                                                    {"clamp_to_last", posenc::out_of_range_policy::clamp_to_last},
                                                    {"zero", posenc::out_of_range_policy::zero}});
}
inline posenc::rope_cache_policy parse_cache_policy(const std::string& v) {
  return parse_choice<posenc::rope_cache_policy>(
      v, "kv_cache.policy",
      {{"rerotate_cached_keys", posenc::rope_cache_policy::rerotate_cached_keys},
       {"drop_cache", posenc::rope_cache_policy::drop_cache},
       {"keep_stale", posenc::rope_cache_policy::keep_stale}});
}
inline posenc::kv_cache_type parse_cache_type(const std::string& v, const char* p) {
  return parse_choice<posenc::kv_cache_type>(
      v, p, {{"float32", posenc::kv_cache_type::native}, {"q8_0", posenc::kv_cache_type::q8_0}});
}

}  // namespace pyposenc
