// python/src/enc_t5.cpp — posenc.T5Bias (Raffel et al. 2020, HF T5Attention buckets, bit-exact) and
// the attention family instantiated for it.
#include <pybind11/numpy.h>

#include <posenc/encoders/t5.hpp>

#include "ops.hpp"

namespace pyposenc {

using namespace pybind11::literals;

void init_t5(py::module_& m) {
  using T = py_enc<posenc::t5_bias>;
  py::class_<T, py_encoder, std::shared_ptr<T>>(
      m, "T5Bias",
      "T5 relative position buckets: bias(h, i, j) = table[bucket(pos_j - pos_i), h]; table [num_buckets, num_heads] "
      "as HF relative_attention_bias.weight (copied in).")
      .def(py::init([](py::handle table, bool bidirectional, std::ptrdiff_t max_distance) {
             const array_ref a = get_array(table, "table");
             if (!a.given()) throw py::type_error("table: expected a [num_buckets, num_heads] array");
             require_ndim(a, 2, "[num_buckets, num_heads]");
             const std::vector<double> values = to_doubles(a);
             posenc::t5_bias t({.num_buckets = a.shape[0],
                                .max_distance = max_distance,
                                .bidirectional = bidirectional,
                                .num_heads = a.shape[1]},
                               std::span<const double>(values));
             auto e = std::make_shared<T>(t);
             e->bias = make_bias_ops(std::move(t));
             e->finish();
             return e;
           }),
           "table"_a, py::kw_only(), "bidirectional"_a = true, "max_distance"_a = 128)
      .def_property_readonly("num_buckets", [](const T& e) { return e.value.config().num_buckets; })
      .def_property_readonly("max_distance", [](const T& e) { return e.value.config().max_distance; })
      .def_property_readonly("bidirectional", [](const T& e) { return e.value.config().bidirectional; })
      .def(
          "buckets",
          [](const T& e, py::handle d) {
            const auto v = int_vector(d, "relative_positions");
            py::array_t<std::int64_t> out(v.size());
            auto* o = out.mutable_data();
            for (std::size_t i = 0; i < v.size(); ++i) o[i] = e.value.buckets()(v[i]);
            return out;
          },
          "relative_positions"_a, "HF's bucket of each relative position (key - query).");
  m.def("t5_bucket", &posenc::t5_bucket, "relative_position"_a, "bidirectional"_a = true, "num_buckets"_a = 32,
        "max_distance"_a = 128, "HF T5Attention._relative_position_bucket of one relative position (key - query).");
}

}  // namespace pyposenc
