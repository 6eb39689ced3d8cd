// python/src/enc_deberta.cpp — posenc.DeBERTa (He et al. 2021 disentangled attention: c2p over the
// projected key table K_r, p2c over the projected query table Q_r, v2/v3 log buckets or v1 clamping)
// and the attention family instantiated for it.
#include <posenc/encoders/deberta.hpp>

#include "ops.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

posenc::deberta_bucket_rule parse_bucket_rule(const std::string& v) {
  if (v == "hugging_face") return posenc::deberta_bucket_rule::hugging_face;
  if (v == "microsoft") return posenc::deberta_bucket_rule::microsoft;
  throw posenc::config_error("bucket_rule", "\"" + v + "\"", "\"hugging_face\" or \"microsoft\"");
}

/// The [rows, heads, head_dim] shape of a table (ValueError otherwise).
void require_table(const array_ref& t) {
  if (t.given() && t.ndim != 3)
    throw py::value_error(t.name +
                          ": expected [2 span, heads, head_dim] (the projected relative embeddings), got shape " +
                          t.shape_text());
}

}  // namespace

void init_deberta(py::module_& m) {
  using E = py_enc<posenc::deberta_relative>;
  py::class_<E, py_encoder, std::shared_ptr<E>>(
      m, "DeBERTa",
      "DeBERTa's disentangled attention: logit = (q_i . k_j + q_i . K_r[c] + k_j . Q_r[c]) / sqrt(d (1 + n)), "
      "c the table row of pos_q - pos_k (log buckets when position_buckets > 0, else clamped to "
      "max_relative_positions), n the terms given. key_table (c2p) and query_table (p2c): "
      "[2 span, heads, head_dim], the model's relative embeddings through its key / query projections "
      "(copied in); either may be None.")
      .def(py::init([](py::handle key_table, py::handle query_table, std::int64_t position_buckets,
                       std::int64_t max_relative_positions, const std::string& bucket_rule) {
             const array_ref kt = get_array(key_table, "key_table"), qt = get_array(query_table, "query_table");
             require_table(kt);
             require_table(qt);
             if (!kt.given() && !qt.given())
               throw py::type_error("DeBERTa: give key_table (c2p), query_table (p2c) or both");
             const array_ref& t = kt.given() ? kt : qt;
             if (kt.given() && qt.given() && kt.shape_text() != qt.shape_text())
               throw py::value_error("query_table: expected the shape of key_table " + kt.shape_text() + ", got " +
                                     qt.shape_text());
             const posenc::deberta_relative_config c{.head_dim = t.shape[2],
                                                     .num_heads = t.shape[1],
                                                     .position_buckets = position_buckets,
                                                     .max_relative_positions = max_relative_positions,
                                                     .c2p = kt.given(),
                                                     .p2c = qt.given(),
                                                     .bucket_rule = parse_bucket_rule(bucket_rule)};
             const std::vector<double> k = kt.given() ? to_doubles(kt) : std::vector<double>{};
             const std::vector<double> q = qt.given() ? to_doubles(qt) : std::vector<double>{};
             posenc::deberta_relative d(c, std::span<const double>(k), std::span<const double>(q));
             auto e = std::make_shared<E>(d);
             e->bias = make_bias_ops(std::move(d));
             e->finish();
             return e;
           }),
           "key_table"_a = py::none(), "query_table"_a = py::none(), py::kw_only(), "position_buckets"_a = 256,
           "max_relative_positions"_a = 512, "bucket_rule"_a = "hugging_face")
      .def_property_readonly("c2p", [](const E& e) { return e.value.config().c2p; })
      .def_property_readonly("p2c", [](const E& e) { return e.value.config().p2c; })
      .def_property_readonly("position_buckets", [](const E& e) { return e.value.config().position_buckets; })
      .def_property_readonly("max_relative_positions",
                             [](const E& e) { return e.value.config().max_relative_positions; })
      .def_property_readonly("table_rows", [](const E& e) { return e.value.config().table_rows(); })
      .def_property_readonly(
          "scale_multiplier", [](const E& e) { return e.value.softmax_scale_multiplier(); },
          "1 / sqrt(1 + n): the attention multiplies its 1 / sqrt(head_dim) by it")
      .def(
          "row", [](const E& e, std::int64_t pos_q, std::int64_t pos_k) { return e.value.row(pos_q, pos_k); },
          "pos_q"_a, "pos_k"_a, "The table row a query at pos_q reads for a key at pos_k.");
}

}  // namespace pyposenc
