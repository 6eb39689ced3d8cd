// python/src/config.cpp — posenc.load_config(path): a Hugging Face config.json or a GGUF file as the
// per-layer positional configuration (posenc::layered_config): each layer's encoder and attention
// options, and the report `posenc model --json` prints, as a dict with the same keys.
#include <fstream>
#include <variant>

#include <posenc/config/architectures.hpp>
#include <posenc/config/gguf.hpp>
#include <posenc/config/json.hpp>
#include <posenc/config/layer_encoder.hpp>
#include <posenc/config/layered.hpp>
#include <posenc/rope/schedule.hpp>

#include "binding.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

struct py_model_config {
  posenc::layered_config lc;
  std::string path;
};

posenc::layered_config load_layered(const std::string& path, bool generic) {
  const posenc::load_options o{.generic = generic};
  std::ifstream probe(path, std::ios::binary);
  if (!probe) throw posenc::config_error(path, "cannot open file");
  char magic[4] = {};
  probe.read(magic, 4);
  if (probe.gcount() == 4 && std::string_view(magic, 4) == "GGUF") {
    std::ifstream in(path, std::ios::binary);
    const auto c = posenc::read_gguf(in, path);
    return posenc::load_gguf_layered(c.metadata, &c.tensors, o);
  }
  return posenc::load_hf_layered(posenc::parse_config_json(posenc::read_text_file(path), path), o);
}

py::object opt(const std::optional<double>& v) {
  return v ? py::object(py::float_(*v)) : py::none();
}
py::object opt(const std::optional<std::int64_t>& v) {
  return v ? py::object(py::int_(*v)) : py::none();
}

py::object deberta_dict(const std::optional<posenc::deberta_spec>& d) {
  if (!d) return py::none();
  const auto& r = d->relative;
  py::dict o;
  o["c2p"] = r.c2p;
  o["p2c"] = r.p2c;
  o["position_buckets"] = r.position_buckets;
  o["max_relative_positions"] = r.max_relative_positions;
  o["buckets"] = r.position_buckets > 0 ? "log" : "clamp";
  o["table_rows"] = r.table_rows();
  o["share_att_key"] = d->share_att_key;
  o["norm_rel_ebd"] = d->norm_rel_ebd;
  o["position_biased_input"] = d->position_biased_input;
  return o;
}

py::object vision_dict(const std::optional<posenc::vision_spec>& v) {
  if (!v) return py::none();
  using posenc::vision_rope_convention;
  const auto c = v->rope.convention;
  py::dict o;
  o["tower"] = v->tower;
  o["convention"] = c == vision_rope_convention::pixtral         ? "pixtral"
                    : c == vision_rope_convention::llama4        ? "llama4"
                    : c == vision_rope_convention::minimax_m3_vl ? "minimax_m3_vl"
                                                                 : "qwen_vl";
  o["head_dim"] = v->rope.head_dim;
  o["theta"] = v->rope.theta;
  o["depth"] = v->depth;
  o["num_heads"] = v->num_heads;
  o["patch_size"] = v->patch_size;
  o["patches_per_side"] = v->patches_per_side;
  o["spatial_merge_size"] = v->spatial_merge_size;
  o["temporal_patch_size"] = v->temporal_patch_size;
  o["window_size"] = v->window_size;
  o["fullatt_block_indexes"] = v->fullatt_block_indexes;
  o["learned_positions"] = v->learned_positions;
  o["softmax_scale"] = v->softmax_scale;
  return o;
}

py::dict layer_dict(const posenc::layer_spec& l, std::size_t i) {
  py::dict d;
  int rotary_dim = 0;
  double attention_scaling = 1;
  if (l.rope) {
    const posenc::rope_schedule s(*l.rope);
    rotary_dim = 2 * s.pairs();
    attention_scaling = s.base().attention_scaling;
  }
  d["index"] = i;
  d["layer_type"] = posenc::layer_type_name(l.attention);
  d["rope"] = l.rope.has_value();
  d["theta"] = l.rope ? py::object(py::float_(l.rope->theta)) : py::none();
  d["rope_type"] = l.rope ? py::object(py::str(posenc::scaling_type_name(l.rope->scaling))) : py::none();
  d["factor"] = l.rope ? opt(posenc::scaling_factor(l.rope->scaling)) : py::none();
  d["layout"] = l.rope
                    ? py::object(py::str(l.rope->layout == posenc::pairing::interleaved ? "interleaved" : "half_split"))
                    : py::none();
  d["rotary_dim"] = rotary_dim;
  d["attention_scaling"] = attention_scaling;
  d["window"] = opt(l.window);
  d["chunk_size"] = opt(l.chunk_size);
  d["sinks"] = l.sinks;
  d["softmax_scale"] = l.softmax_scale;
  d["logit_softcap"] = opt(l.logit_softcap);
  if (l.temperature) {
    py::dict t;
    t["rule"] = l.temperature->rule == posenc::temperature_rule::llama4 ? "llama4" : "llama4_beta";
    t["floor_scale"] = l.temperature->floor_scale;
    t["scale"] = l.temperature->scale;
    d["temperature"] = t;
  } else {
    d["temperature"] = py::none();
  }
  d["alibi"] = l.alibi;
  return d;
}

template <class X>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<posenc::combined<A, B>> : std::true_type {};

template <class T>
void add_transform(py_encoder& e, const T& t) {
  e.transforms.push_back(std::make_shared<const transform_impl<T>>(t));
}

std::shared_ptr<py_encoder> layer_encoder(const py_model_config& c, std::size_t layer) {
  const posenc::layer_encoder v = posenc::make_layer_encoder(c.lc, layer);
  auto e = std::make_shared<py_encoder>();
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, posenc::no_position>) {
        } else if constexpr (is_pair<X>::value) {
          add_transform(*e, x.first());
          add_transform(*e, x.second());
        } else {
          add_transform(*e, x);
        }
      },
      v);
  e->finish();
  return e;
}

}  // namespace

void init_config(py::module_& m) {
  py::class_<py_model_config>(m, "ModelConfig",
                              "A model's positional configuration, layer by layer (posenc::layered_config).")
      .def_property_readonly("path", [](const py_model_config& c) { return c.path; })
      .def_property_readonly("model_type", [](const py_model_config& c) { return c.lc.base.model_type; })
      .def_property_readonly("family", [](const py_model_config& c) { return c.lc.family; })
      .def_property_readonly("head_dim", [](const py_model_config& c) { return c.lc.head_dim; })
      .def_property_readonly("num_layers", [](const py_model_config& c) { return c.lc.layers.size(); })
      .def_property_readonly("attention_sinks", [](const py_model_config& c) { return c.lc.attention_sinks; })
      .def_property_readonly("warnings", [](const py_model_config& c) { return c.lc.warnings; })
      .def_property_readonly(
          "deberta", [](const py_model_config& c) { return deberta_dict(c.lc.deberta); },
          "DeBERTa's relative attention (terms, buckets, table rows, projections) or None.")
      .def_property_readonly(
          "vision", [](const py_model_config& c) { return vision_dict(c.lc.vision); },
          "The rotary vision tower (vision_rope convention, head_dim, theta, grid shapes) or None.")
      .def("encoder", &layer_encoder, "layer"_a,
           "The encoder of a layer (RoPE, mRoPE, a query temperature, their combination, or NoPE).")
      .def(
          "options",
          [](const py_model_config& c, std::size_t layer) {
            if (layer >= c.lc.layers.size())
              throw posenc::config_error("layer", std::to_string(layer),
                                         "< the layer count " + std::to_string(c.lc.layers.size()));
            const posenc::attention_options o = posenc::layer_options(c.lc.layers[layer]);
            py::dict d;
            d["causal"] = o.causal;
            d["scale"] = o.scale ? py::object(py::float_(*o.scale)) : py::none();
            d["window"] = opt(o.sliding_window);
            d["chunk"] = opt(o.attention_chunk);
            d["softcap"] = opt(o.logit_softcap);
            return d;
          },
          "layer"_a,
          "The layer's attention keyword arguments (causal, scale, window, chunk, softcap) for posenc.attention.")
      .def(
          "report",
          [](const py_model_config& c) {
            py::dict d;
            d["model_type"] = c.lc.base.model_type;
            d["family"] = c.lc.family;
            d["format"] = c.lc.base.format;
            d["positional"] = posenc::positional_name(c.lc.positional);
            d["head_dim"] = c.lc.head_dim;
            d["final_logit_softcap"] = opt(c.lc.final_logit_softcap);
            d["deberta"] = deberta_dict(c.lc.deberta);
            d["vision"] = vision_dict(c.lc.vision);
            d["warnings"] = c.lc.warnings;
            py::list layers;
            for (std::size_t i = 0; i < c.lc.layers.size(); ++i) layers.append(layer_dict(c.lc.layers[i], i));
            d["layers"] = layers;
            return d;
          },
          "What `posenc model --json` prints, as a dict.")
      .def("__repr__", [](const py_model_config& c) {
        return "<posenc model config " + c.lc.base.model_type + ", " + std::to_string(c.lc.layers.size()) + " layers>";
      });
  m.def(
      "load_config",
      [](const std::string& path, bool generic) {
        py_model_config c;
        {
          py::gil_scoped_release nogil;
          c.lc = load_layered(path, generic);
        }
        c.path = path;
        return c;
      },
      "path"_a, py::kw_only(), "generic"_a = false,
      "Loads a Hugging Face config.json or a GGUF file (by its magic bytes) into the per-layer configuration. An "
      "unknown model type is a ConfigError unless generic=True (the keys read at face value, guesses in warnings).");
}

}  // namespace pyposenc
