// python/src/enc_shaw.cpp — posenc.Shaw (Shaw et al. 2018 relative keys and values; tensor2tensor,
// CTranslate2, HF BERT relative_key) and the attention family instantiated for it.
#include <posenc/encoders/shaw.hpp>

#include "enums.hpp"
#include "ops.hpp"

namespace pyposenc {

using namespace pybind11::literals;

void init_shaw(py::module_& m) {
  using S = py_enc<posenc::shaw_relative>;
  py::class_<S, py_encoder, std::shared_ptr<S>>(
      m, "Shaw",
      "Shaw relative position representations: logit += q_i . A_K[c], out += sum_j p_ij A_V[c] with c = "
      "clip(pos_j - pos_i, -k_left, k_right) + k_left. Tables [rows, head_dim] (shared by the heads) or "
      "[heads, rows, head_dim], rows = k_left + k_right + 1 (copied in).")
      .def(py::init([](py::handle key_table, py::handle value_table, std::optional<std::int64_t> k_left,
                       std::optional<std::int64_t> k_right, const std::string& sign, bool clip) {
             const array_ref kt = get_array(key_table, "key_table"), vt = get_array(value_table, "value_table");
             if (!kt.given())
               throw py::type_error("key_table: expected a [rows, head_dim] or [heads, rows, head_dim] array");
             if (kt.ndim != 2 && kt.ndim != 3)
               throw py::value_error("key_table: expected [rows, head_dim] or [heads, rows, head_dim], got shape " +
                                     kt.shape_text());
             const bool per_head = kt.ndim == 3;
             const std::ptrdiff_t rows = kt.shape[per_head ? 1 : 0], D = kt.shape[per_head ? 2 : 1];
             if (vt.given() && vt.shape_text() != kt.shape_text())
               throw py::value_error("value_table: expected the shape of key_table " + kt.shape_text() + ", got " +
                                     vt.shape_text());
             const std::int64_t left = k_left.value_or((rows - 1) / 2);
             posenc::shaw_relative_config c{.head_dim = D,
                                            .k_left = left,
                                            .k_right = k_right.value_or(rows - 1 - left),
                                            .sign = parse_shaw_sign(sign),
                                            .clip = clip,
                                            .use_value_term = vt.given(),
                                            .shared_across_heads = !per_head,
                                            .num_heads = per_head ? kt.shape[0] : 1};
             const std::vector<double> k = to_doubles(kt), v = vt.given() ? to_doubles(vt) : std::vector<double>{};
             posenc::shaw_relative s(c, std::span<const double>(k), std::span<const double>(v));
             auto e = std::make_shared<S>(s);
             e->bias = make_bias_ops(std::move(s));
             e->finish();
             return e;
           }),
           "key_table"_a, "value_table"_a = py::none(), py::kw_only(), "k_left"_a = py::none(),
           "k_right"_a = py::none(), "sign"_a = "key_minus_query", "clip"_a = true)
      .def_property_readonly("k_left", [](const S& e) { return e.value.config().k_left; })
      .def_property_readonly("k_right", [](const S& e) { return e.value.config().k_right; })
      .def_property_readonly("has_value_term", [](const S& e) { return e.value.config().use_value_term; });
}

}  // namespace pyposenc
