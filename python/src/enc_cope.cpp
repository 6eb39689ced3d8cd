// python/src/enc_cope.cpp — posenc.CoPE (Golovneva et al. 2024 contextual positions: gates
// sigmoid(q . c / sqrt(d)), positions summed from the key to the query, embeddings interpolated at
// the fractional position; trainable table) and the attention family instantiated for it.
#include <posenc/encoders/cope.hpp>

#include "enums.hpp"
#include "ops.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

posenc::contextual_gate_source parse_gate_source(const std::string& v) {
  return parse_choice<posenc::contextual_gate_source>(
      v, "cope.gate_source",
      {{"keys", posenc::contextual_gate_source::keys}, {"values", posenc::contextual_gate_source::values}});
}

/// A [rows, cols] float array (TypeError when missing, ValueError for another rank).
array_ref table_2d(py::handle t, const char* name, const char* layout) {
  const array_ref a = get_array(t, name);
  if (!a.given()) throw py::type_error(std::string(name) + ": expected a " + layout + " array");
  require_ndim(a, 2, layout);
  return a;
}

}  // namespace

void init_cope(py::module_& m) {
  using C = py_enc<posenc::cope>;
  auto make = [](std::vector<double> table, std::ptrdiff_t npos, std::ptrdiff_t head_dim, const std::string& gates,
                 bool scale_position_term) {
    posenc::cope c({.head_dim = head_dim,
                    .npos = npos,
                    .gate_source = parse_gate_source(gates),
                    .scale_position_term = scale_position_term},
                   std::span<const double>(table));
    auto e = std::make_shared<C>(c);
    e->bias = make_bias_ops(std::move(c));
    e->finish();
    return e;
  };
  py::class_<C, py_encoder, std::shared_ptr<C>>(
      m, "CoPE",
      "Contextual position encoding (Golovneva et al. 2024, the authors' ContextPosSelfAttn): g_ij = sigmoid(q_i . "
      "c_j / sqrt(d)) (c: the keys, or the values), p_ij = min(sum_{k >= j} g_ik, npos - 1), logit += q_i . E[p_ij] "
      "interpolated between floor and ceil (inside the 1 / sqrt(d) scaling unless scale_position_term=False). table "
      "E: [npos, head_dim], shared by the heads (copied in); CoPE.from_reference takes the authors' [head_dim, npos]. "
      "sdpa and sdpa_backward compute it.")
      .def(py::init([make](py::handle table, const std::string& gate_source, bool scale_position_term) {
             const array_ref a = table_2d(table, "table", "[npos, head_dim]");
             return make(to_doubles(a), a.shape[0], a.shape[1], gate_source, scale_position_term);
           }),
           "table"_a, py::kw_only(), "gate_source"_a = "keys", "scale_position_term"_a = true)
      .def_static(
          "from_reference",
          [make](py::handle pos_emb, const std::string& gate_source, bool scale_position_term) {
            const array_ref a = table_2d(pos_emb, "pos_emb", "[head_dim, npos]");
            return make(posenc::cope_table_from_reference(to_doubles(a), a.shape[0], a.shape[1]), a.shape[1],
                        a.shape[0], gate_source, scale_position_term);
          },
          "pos_emb"_a, py::kw_only(), "gate_source"_a = "keys", "scale_position_term"_a = true,
          "CoPE from the authors' parameter pos_emb [head_dim, npos] (its transpose is the table).")
      .def_property_readonly("npos", [](const C& e) { return e.value.config().npos; })
      .def_property_readonly(
          "gate_source",
          [](const C& e) { return e.value.gate_source() == posenc::contextual_gate_source::keys ? "keys" : "values"; })
      .def_property_readonly("scale_position_term", [](const C& e) { return e.value.position_term_scaled(); })
      .def(
          "gate", [](const C& e, double x) { return e.value.gate(x); }, "x"_a, "sigmoid(x / sqrt(head_dim)).");
}

}  // namespace pyposenc
