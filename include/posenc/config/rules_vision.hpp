// posenc/config/rules_vision.hpp — the vision rule: a multimodal config's `vision_config` -> the
// vision_rope configuration of its rotary vision tower (Pixtral, Qwen2-VL / 2.5-VL / 3-VL, Llama 4) and
// the shapes its positions come from. The tower is a row of vision_towers (config/architectures.hpp),
// found by vision_config.model_type, else by the model_type of the config that holds it (the config
// classes of Qwen2-VL and Llama 4 fix their tower). The text decoder's layers are the other rules'.
// Not here: towers without rotary positions (SigLIP, CLIP: learned absolute, reported in warnings).
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <posenc/config/architectures.hpp>
#include <posenc/config/layered_config.hpp>
#include <posenc/config/rules_rope.hpp>
#include <posenc/core/errors.hpp>
#include <posenc/rope/vision_rope.hpp>

namespace posenc::inline v0::detail::rules {

/// vision_config's theta: rope_theta, or rope_parameters.rope_theta (transformers v5); both must agree.
inline std::optional<double> vision_theta(const key_reader& r) {
  const config_value* p = r.get("rope_parameters");
  std::optional<double> v5;
  if (p && p->is_object()) v5 = key_reader{p, r.prefix + "rope_parameters."}.number("rope_theta");
  if (p && p->is_object())
    if (const auto type = key_reader{p, r.prefix + "rope_parameters."}.string("rope_type"); type && *type != "default")
      throw config_error(r.prefix + "rope_parameters.rope_type", "\"" + *type + "\"",
                         "\"default\" (the vision tower's rotary embedding refuses other types)");
  return merge_same(r.number("rope_theta"), r.name("rope_theta"), v5, r.prefix + "rope_parameters.rope_theta");
}

/// The rotary vision tower of the view's vision_config (nullopt without one, or for a tower without RoPE).
inline std::optional<vision_spec> rule_vision(const context& c) {
  if (!c.v.vision.is_object()) return std::nullopt;
  const std::string prefix = "vision_config.";
  const key_reader given{&c.v.vision, prefix};
  const std::string type = given.string("model_type").value_or("");
  const vision_tower* t = find_vision_tower(type, c.v.reported_type);
  if (!t) {
    std::string known;
    for (const vision_tower& v : vision_towers) known += (known.empty() ? "" : ", ") + std::string(v.name);
    c.warn(prefix + "model_type \"" + type + "\": not a rotary vision tower posenc loads (" + known +
           "); no vision section");
    return std::nullopt;
  }
  config_value keys = c.v.vision;
  const config_value defaults = pairs_object(t->defaults);  // named: members() views into it
  for (const auto& m : defaults.members())
    if (!keys.find(m.key) || keys.find(m.key)->is_null()) keys.set(m.key, m.value);
  const key_reader r{&keys, prefix};
  vision_spec s;
  s.tower = std::string(t->name);
  const int hidden = *r.int32(t->hidden_key, 1), heads = *r.int32(t->heads_key, 1);
  if (hidden % heads != 0)
    throw config_error(r.name(t->hidden_key), detail::to_text(hidden),
                       "a multiple of " + r.name(t->heads_key) + " = " + detail::to_text(heads));
  s.num_heads = heads;
  s.depth = *r.int32(t->depth_key, 1);
  s.patch_size = *r.int32("patch_size", 1);
  s.rope = vision_rope_config{.head_dim = hidden / heads, .theta = 10000.0, .convention = t->convention};
  if (t->reads_theta) s.rope.theta = vision_theta(r).value_or(10000.0);
  if (t->grid_side) s.patches_per_side = *r.int32("image_size", 1) / s.patch_size;
  if (t->merge) {
    s.spatial_merge_size = *r.int32("spatial_merge_size", 1);
    s.temporal_patch_size = *r.int32("temporal_patch_size", 1);
  }
  if (t->windows) {
    s.window_size = *r.int32("window_size", 1);
    if (const config_value* f = r.get("fullatt_block_indexes")) {
      if (!f->is_list()) throw config_error(r.name("fullatt_block_indexes"), f->to_text(), "a list of layer indices");
      for (const auto& e : f->items()) {
        if (!e.is_integer() || e.as_integer() < 0 || e.as_integer() >= s.depth)
          throw config_error(r.name("fullatt_block_indexes"), f->to_text(),
                             "layer indices in [0, " + r.name(t->depth_key) + ")");
        s.fullatt_block_indexes.push_back(static_cast<int>(e.as_integer()));
      }
    } else {
      s.fullatt_block_indexes = {7, 15, 23, 31};  // Qwen2_5_VLVisionConfig's class default
    }
  }
  if (t->learned_grid) s.learned_positions = *r.int32("num_position_embeddings", 1);
  s.softmax_scale = 1.0 / std::sqrt(static_cast<double>(s.rope.head_dim));
  try {
    validate(s.rope);
  } catch (const config_error& e) {
    throw config_error(r.name(t->hidden_key), detail::to_text(hidden),
                       std::string("a width whose heads the tower can rotate (") + e.what() + ")");
  }
  return s;
}

}  // namespace posenc::inline v0::detail::rules
