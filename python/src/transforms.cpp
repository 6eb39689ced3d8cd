// python/src/transforms.cpp — the Encoder base class, the q/k transforms (RoPE with every scaling,
// mRoPE, xPos, the attention temperature), NoPE, and combine(): keyword configuration in Python's
// idiom over posenc's config structs, transform_q / transform_k (in place, on any float dtype and
// strides) and their backwards.
#include <pybind11/numpy.h>

#include <posenc/encoders/no_position.hpp>
#include <posenc/encoders/temperature.hpp>
#include <posenc/rope/mrope.hpp>
#include <posenc/rope/rope.hpp>
#include <posenc/rope/xpos.hpp>

#include "binding.hpp"
#include "enums.hpp"

namespace pyposenc {

using namespace pybind11::literals;

// ---- dyn_transform, py_encoder ------------------------------------------------------------------

dyn_transform::dyn_transform(std::vector<std::shared_ptr<const transform_base>> parts) : parts_(std::move(parts)) {
  for (const auto& p : parts_) {
    if (!name_.empty()) name_ += "+";
    name_ += p->name();
    if (head_dim_ == 0) head_dim_ = p->head_dim();
    if (p->head_dim() != head_dim_)
      throw posenc::config_error("combined.head_dim", std::to_string(p->head_dim()),
                                 "the first encoder's head_dim " + std::to_string(head_dim_));
    multiplier_ *= p->softmax_scale_multiplier();
  }
}

dyn_transform::schedule_info dyn_transform::schedule() const {
  bool dependent = false;
  for (const auto& p : parts_)
    if (const posenc::rope* r = p->as_rope(); r && r->schedule().length_dependent()) dependent = true;
  if (dependent && !is_lone_rope())
    throw posenc::config_error("kv_cache.encoder", name_,
                               "a lone RoPE when its schedule depends on the length (dynamic NTK, LongRoPE): the "
                               "Python caches steer only that one");
  return {dependent};
}

const posenc::rope& dyn_transform::lone_rope(const char* what) const {
  if (!is_lone_rope())
    throw posenc::config_error(std::string("kv_cache.") + what,
                               std::string("the encoder's query/key transform '") + name_ +
                                   "' is not a lone rotation; its cached keys cannot be moved to new positions");
  return *parts_[0]->as_rope();
}

void py_encoder::finish() {
  if (transforms.empty())
    chain.reset();
  else
    chain.emplace(transforms);
  if (!bias) bias = none_ops();
}

std::string py_encoder::name() const {
  std::string s = chain ? std::string(chain->name()) : std::string();
  if (!bias->is_none()) s += (s.empty() ? "" : "+") + bias->name();
  return s.empty() ? "nope" : s;
}

void bias_ops::bias_matrix(std::span<const std::int64_t>, std::span<const std::int64_t>, std::span<double>) const {
  throw py::type_error("bias: the encoder '" + name() + "' has no score bias");
}

namespace {

/// x transformed in place (float32/float64/bfloat16/float16 [B, S, H, D], any strides); returns x.
py::object transform(const py_encoder& e, py::object x, py::handle positions, bool query, bool backward) {
  if (!e.chain) throw py::type_error("transform: the encoder '" + e.name() + "' has no query/key transform");
  const array_ref a = get_array(x, query ? "q" : "k");
  const std::vector<std::int64_t> p = int_vector(positions, "positions");
  auto go = [&](auto v) {
    py::gil_scoped_release nogil;
    backward ? (query ? e.chain->transform_q_backward(v, p) : e.chain->transform_k_backward(v, p))
             : (query ? e.chain->transform_q(v, p) : e.chain->transform_k(v, p));
  };
  switch (a.type) {
    case dtype::f32:
      go(view4<float>(a));
      break;
    case dtype::f64:
      go(view4<double>(a));
      break;
    case dtype::bf16:
      go(view4<bfloat16>(a));
      break;
    case dtype::f16:
      go(view4<float16>(a));
      break;
    default:
      require_dtype(a, {dtype::f32, dtype::f64, dtype::bf16, dtype::f16});
  }
  return x;
}

template <class T>
std::shared_ptr<py_enc<T>> make_transform(T t) {
  auto e = std::make_shared<py_enc<T>>(t);
  e->transforms.push_back(std::make_shared<const transform_impl<T>>(std::move(t)));
  e->finish();
  return e;
}

posenc::rope_scaling scaling_from(py::handle s) {
  if (s.is_none()) return posenc::default_scaling{};
  try {
    return s.cast<posenc::rope_scaling>();
  } catch (const py::cast_error&) {
    throw py::type_error(
        "scaling: expected one of posenc.LinearScaling, NTKScaling, DynamicNTKScaling, "
        "YaRNScaling, Llama3Scaling, LongRoPEScaling, FrequencyFactors, ExplicitFrequencies");
  }
}

posenc::rope_config rope_config_from(std::ptrdiff_t head_dim, double theta, std::optional<std::ptrdiff_t> rotary_dim,
                                     std::optional<double> partial_rotary_factor, const std::string& partial_mode,
                                     std::ptrdiff_t rotary_offset, const std::string& layout, py::handle scaling,
                                     const std::string& angles, bool allow_compression) {
  return {.head_dim = head_dim,
          .rotary_dim = rotary_dim,
          .partial_rotary_factor = partial_rotary_factor,
          .partial_mode = parse_partial_mode(partial_mode),
          .rotary_offset = rotary_offset,
          .theta = theta,
          .layout = parse_pairing(layout, "rope.layout"),
          .scaling = scaling_from(scaling),
          .angles = parse_angle_mode(angles),
          .allow_compression = allow_compression};
}

py::array_t<double> to_array(std::span<const double> s) {
  return py::array_t<double>(s.size(), s.data());
}

void bind_scalings(py::module_& m) {
  using namespace posenc;
  py::class_<linear_scaling>(m, "LinearScaling", "Position interpolation (HF rope_type 'linear').")
      .def(py::init([](double factor) { return linear_scaling{factor}; }), py::kw_only(), "factor"_a)
      .def_readonly("factor", &linear_scaling::factor);
  py::class_<ntk_scaling>(m, "NTKScaling", "Static NTK-aware base change (Hunyuan / vLLM alpha).")
      .def(py::init([](double alpha) { return ntk_scaling{alpha}; }), py::kw_only(), "alpha"_a)
      .def_readonly("alpha", &ntk_scaling::alpha);
  py::class_<dynamic_ntk_scaling>(m, "DynamicNTKScaling", "Dynamic NTK (HF rope_type 'dynamic').")
      .def(py::init([](double factor, std::int64_t original_max_position, const std::string& src) {
             return dynamic_ntk_scaling{factor, original_max_position, parse_length_source(src)};
           }),
           py::kw_only(), "factor"_a, "original_max_position"_a, "length_source"_a = "max_position_in_call")
      .def_readonly("factor", &dynamic_ntk_scaling::factor)
      .def_readonly("original_max_position", &dynamic_ntk_scaling::original_max_position);
  py::class_<yarn_scaling>(m, "YaRNScaling", "YaRN (HF rope_type 'yarn'), with DeepSeek's mscale / mscale_all_dim.")
      .def(py::init([](double factor, std::int64_t original_max_position, double beta_fast, double beta_slow,
                       std::optional<double> attention_factor, std::optional<double> mscale,
                       std::optional<double> mscale_all_dim, bool truncate, double extrapolation_factor) {
             return yarn_scaling{factor, original_max_position, beta_fast, beta_slow,           attention_factor,
                                 mscale, mscale_all_dim,        truncate,  extrapolation_factor};
           }),
           py::kw_only(), "factor"_a, "original_max_position"_a, "beta_fast"_a = 32.0, "beta_slow"_a = 1.0,
           "attention_factor"_a = py::none(), "mscale"_a = py::none(), "mscale_all_dim"_a = py::none(),
           "truncate"_a = true, "extrapolation_factor"_a = 1.0)
      .def_readonly("factor", &yarn_scaling::factor)
      .def_readonly("original_max_position", &yarn_scaling::original_max_position);
  py::class_<llama3_scaling>(m, "Llama3Scaling", "Llama 3.1 wavelength bands (HF rope_type 'llama3').")
      .def(py::init([](double factor, double low, double high, std::int64_t l0) {
             return llama3_scaling{factor, low, high, l0};
           }),
           py::kw_only(), "factor"_a = 8.0, "low_freq_factor"_a = 1.0, "high_freq_factor"_a = 4.0,
           "original_max_position"_a = 8192)
      .def_readonly("factor", &llama3_scaling::factor);
  py::class_<longrope_scaling>(m, "LongRoPEScaling", "LongRoPE / Phi-3 'su' (HF rope_type 'longrope').")
      .def(py::init([](std::vector<double> s, std::vector<double> l, std::int64_t l0, std::optional<double> factor,
                       std::int64_t max_position, std::optional<double> af, const std::string& policy,
                       std::int64_t capacity) {
             return longrope_scaling{
                 std::move(s), std::move(l), l0, factor, max_position, af, parse_longrope_switch(policy), capacity};
           }),
           py::kw_only(), "short_factor"_a, "long_factor"_a, "original_max_position"_a, "factor"_a = py::none(),
           "max_position"_a = 0, "attention_factor"_a = py::none(), "switch_policy"_a = "per_call_max_position",
           "capacity"_a = 0);
  py::class_<frequency_factors>(m, "FrequencyFactors", "Per-pair divisors (llama.cpp rope_freqs).")
      .def(py::init([](std::vector<double> f, double af) {
             return frequency_factors{std::move(f), af};
           }),
           py::kw_only(), "factors"_a, "attention_factor"_a = 1.0);
  py::class_<explicit_frequencies>(m, "ExplicitFrequencies", "Frequencies given outright.")
      .def(py::init([](std::vector<double> f, double af) {
             return explicit_frequencies{std::move(f), af};
           }),
           py::kw_only(), "inv_freq"_a, "attention_factor"_a = 1.0);
}

}  // namespace

void init_transforms(py::module_& m) {
  bind_scalings(m);
  py::class_<py_encoder, std::shared_ptr<py_encoder>>(
      m, "Encoder", "A positional encoding: q/k transforms, a score bias or relative k/v, or a combination.")
      .def_property_readonly("name", &py_encoder::name)
      .def_property_readonly(
          "parameter_count", [](const py_encoder& e) { return e.bias->parameter_count(); },
          "Trainable values (T5 table, Shaw tables); 0 for encoders without parameters.")
      .def_property_readonly(
          "has_transform", [](const py_encoder& e) { return e.chain.has_value(); },
          "Whether the encoder rewrites q and k (RoPE, mRoPE, xPos, temperature).")
      .def_property_readonly("head_dim",
                             [](const py_encoder& e) -> std::optional<std::ptrdiff_t> {
                               if (e.chain) return e.chain->head_dim();
                               if (e.bias->head_dim() > 0) return e.bias->head_dim();
                               return std::nullopt;
                             })
      .def_property_readonly("num_heads",
                             [](const py_encoder& e) -> std::optional<std::ptrdiff_t> {
                               if (e.bias->num_heads() > 0) return e.bias->num_heads();
                               return std::nullopt;
                             })
      .def_property_readonly(
          "fused", [](const py_encoder& e) { return e.bias->fused(); },
          "Whether attention, attention_backward and the caches compute this encoder (else sdpa and sdpa_backward "
          "only).")
      .def_property_readonly("softmax_scale_multiplier",
                             [](const py_encoder& e) { return e.chain ? e.chain->softmax_scale_multiplier() : 1.0; })
      .def(
          "transform_q",
          [](const py_encoder& e, py::object x, py::handle p) { return transform(e, std::move(x), p, true, false); },
          "x"_a, "positions"_a,
          "Applies the query transform in place to x [B, S, H, D] (float32/64, bfloat16, float16, any strides) at "
          "positions [B * S]; returns x.")
      .def(
          "transform_k",
          [](const py_encoder& e, py::object x, py::handle p) { return transform(e, std::move(x), p, false, false); },
          "x"_a, "positions"_a, "The key transform, in place; returns x.")
      .def(
          "transform_q_backward",
          [](const py_encoder& e, py::object x, py::handle p) { return transform(e, std::move(x), p, true, true); },
          "dx"_a, "positions"_a, "The transpose of transform_q, in place (a gradient w.r.t. the rows before it).")
      .def(
          "transform_k_backward",
          [](const py_encoder& e, py::object x, py::handle p) { return transform(e, std::move(x), p, false, true); },
          "dx"_a, "positions"_a, "The transpose of transform_k, in place.")
      .def(
          "bias",
          [](const py_encoder& e, py::handle qp, py::handle kp) {
            const auto q = int_vector(qp, "query_positions"), k = int_vector(kp, "key_positions");
            const auto H = static_cast<std::size_t>(e.bias->num_heads());
            if (H == 0) throw py::type_error("bias: the encoder '" + e.name() + "' has no score bias");
            py::array_t<double> out({H, q.size(), k.size()});
            e.bias->bias_matrix(q, k, std::span<double>(out.mutable_data(), out.size()));
            return out;
          },
          "query_positions"_a, "key_positions"_a,
          "The score bias [H, len(query_positions), len(key_positions)] in float64 (ALiBi, T5).")
      .def("__repr__", [](const py_encoder& e) { return "<posenc encoder " + e.name() + ">"; });

  py::class_<py_nope, py_encoder, std::shared_ptr<py_nope>>(m, "NoPE", "No positional encoding.").def(py::init([] {
    auto e = std::make_shared<py_nope>();
    e->finish();
    return e;
  }));

  py::class_<py_enc<posenc::rope>, py_encoder, std::shared_ptr<py_enc<posenc::rope>>>(
      m, "RoPE",
      "Rotary position embedding (Su et al. 2021) with any scaling; layout 'half_split' (HF rotate_half) or "
      "'interleaved' (GPT-J, llama.cpp).")
      .def(py::init([](std::ptrdiff_t head_dim, double theta, std::optional<std::ptrdiff_t> rotary_dim,
                       std::optional<double> partial_rotary_factor, const std::string& partial_mode,
                       std::ptrdiff_t rotary_offset, const std::string& layout, py::handle scaling,
                       const std::string& angles, bool allow_compression) {
             return make_transform(
                 posenc::rope(rope_config_from(head_dim, theta, rotary_dim, partial_rotary_factor, partial_mode,
                                               rotary_offset, layout, scaling, angles, allow_compression)));
           }),
           py::kw_only(), "head_dim"_a, "theta"_a = 10000.0, "rotary_dim"_a = py::none(),
           "partial_rotary_factor"_a = py::none(), "partial_mode"_a = "prefix", "rotary_offset"_a = 0,
           "layout"_a = "half_split", "scaling"_a = py::none(), "angles"_a = "exact", "allow_compression"_a = false)
      .def_property_readonly("rotary_dim", [](const py_enc<posenc::rope>& e) { return e.value.rotary_dim(); })
      .def_property_readonly("theta", [](const py_enc<posenc::rope>& e) { return e.value.config().theta; })
      .def_property_readonly(
          "inv_freq", [](const py_enc<posenc::rope>& e) { return to_array(e.value.base_frequencies().inv_freq); },
          "The rotation frequency of each pair (rad / position) after the scaling, at the base length.")
      .def_property_readonly(
          "attention_scaling",
          [](const py_enc<posenc::rope>& e) { return e.value.base_frequencies().attention_scaling; },
          "M: the magnitude cos and sin are multiplied by (YaRN, LongRoPE).")
      .def(
          "frequencies_at",
          [](const py_enc<posenc::rope>& e, std::int64_t length) { return to_array(e.value.at(length).inv_freq); },
          "length"_a, "The frequencies a call of this length uses (dynamic NTK, LongRoPE switch by length).");
  py::class_<py_enc<posenc::mrope>, py_encoder, std::shared_ptr<py_enc<posenc::mrope>>>(
      m, "MRoPE", "Multimodal RoPE (Qwen2-VL / Qwen3-VL); a plain position stands for all three streams.")
      .def(py::init([](std::ptrdiff_t head_dim, std::array<int, 3> section, const std::string& mlayout, double theta,
                       const std::string& layout, py::handle scaling) {
             posenc::mrope_config c{.rope = rope_config_from(head_dim, theta, std::nullopt, std::nullopt, "prefix", 0,
                                                             layout, scaling, "exact", false),
                                    .section = section,
                                    .layout = parse_mrope_layout(mlayout)};
             return make_transform(posenc::mrope(std::move(c)));
           }),
           py::kw_only(), "head_dim"_a, "section"_a, "mrope_layout"_a = "contiguous", "theta"_a = 10000.0,
           "layout"_a = "half_split", "scaling"_a = py::none());
  py::class_<py_enc<posenc::xpos>, py_encoder, std::shared_ptr<py_enc<posenc::xpos>>>(
      m, "XPos", "xPos (Sun et al. 2022, torchscale XPOS): RoPE with a per-pair exponential decay.")
      .def(py::init([](std::ptrdiff_t head_dim, double theta, double gamma, double scale_base,
                       const std::string& layout, const std::string& center_policy, std::int64_t center) {
             return make_transform(posenc::xpos({.head_dim = head_dim,
                                                 .theta = theta,
                                                 .gamma = gamma,
                                                 .scale_base = scale_base,
                                                 .layout = parse_pairing(layout, "xpos.layout"),
                                                 .center_policy = parse_xpos_center(center_policy),
                                                 .center = center}));
           }),
           py::kw_only(), "head_dim"_a, "theta"_a = 10000.0, "gamma"_a = 0.4, "scale_base"_a = 512.0,
           "layout"_a = "interleaved", "center_policy"_a = "fixed", "center"_a = 0);
  py::class_<py_enc<posenc::attention_temperature>, py_encoder, std::shared_ptr<py_enc<posenc::attention_temperature>>>(
      m, "Temperature", "The position-dependent query temperature of Llama 4 ('llama4') and Mistral 3 ('llama4_beta').")
      .def(py::init([](std::ptrdiff_t head_dim, const std::string& rule, double floor_scale, double scale) {
             return make_transform(posenc::attention_temperature({.head_dim = head_dim,
                                                                  .rule = parse_temperature_rule(rule),
                                                                  .floor_scale = floor_scale,
                                                                  .scale = scale}));
           }),
           py::kw_only(), "head_dim"_a, "rule"_a = "llama4", "floor_scale"_a = 8192.0, "scale"_a = 0.1)
      .def(
          "factor", [](const py_enc<posenc::attention_temperature>& e, std::int64_t p) { return e.value.factor(p); },
          "position"_a, "The factor a query at this position is multiplied by.");

  m.def(
      "combine",
      [](const py::args& parts) {
        auto e = std::make_shared<py_encoder>();
        for (const py::handle h : parts) {
          const auto& p = h.cast<const py_encoder&>();
          e->transforms.insert(e->transforms.end(), p.transforms.begin(), p.transforms.end());
          if (p.bias && !p.bias->is_none()) {
            if (e->bias)
              throw py::type_error("combine: at most one score-bias or relative k/v encoder ('" + e->bias->name() +
                                   "' and '" + p.bias->name() + "')");
            e->bias = p.bias;
          }
        }
        e->finish();
        if (e->chain && e->bias->head_dim() > 0 && e->bias->head_dim() != e->chain->head_dim())
          throw posenc::config_error("combined.head_dim", std::to_string(e->bias->head_dim()),
                                     "the first encoder's head_dim " + std::to_string(e->chain->head_dim()));
        return e;
      },
      "Combines encoders: q/k transforms apply in the order given, with at most one score bias or relative k/v "
      "encoder (posenc::combine).");
}

}  // namespace pyposenc
