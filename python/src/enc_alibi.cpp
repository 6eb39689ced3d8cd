// python/src/enc_alibi.cpp — posenc.ALiBi (Press et al. 2022; BLOOM, MPT, Falcon) and the attention
// family instantiated for it.
#include <pybind11/numpy.h>

#include <posenc/encoders/alibi.hpp>

#include "enums.hpp"
#include "ops.hpp"

namespace pyposenc {

using namespace pybind11::literals;

void init_alibi(py::module_& m) {
  using A = py_enc<posenc::alibi>;
  py::class_<A, py_encoder, std::shared_ptr<A>>(
      m, "ALiBi",
      "Attention with linear biases: bias(h, i, j) = -m_h |pos_i - pos_j| ('symmetric'), m_h (pos_j - pos_i) "
      "('causal_true_distance') or m_h pos_j ('causal_row_shift', BLOOM); slopes 2^(-max_bias k / n) by default.")
      .def(py::init([](std::ptrdiff_t num_heads, double max_bias, const std::string& mode, std::ptrdiff_t head_start,
                       std::optional<std::ptrdiff_t> local_heads, std::optional<std::vector<double>> slopes) {
             posenc::alibi a({.num_heads = num_heads,
                              .max_bias = max_bias,
                              .mode = parse_alibi_mode(mode),
                              .head_start = head_start,
                              .local_heads = local_heads,
                              .slopes = slopes.value_or(std::vector<double>{})});
             auto e = std::make_shared<A>(a);
             e->bias = make_bias_ops(std::move(a));
             e->finish();
             return e;
           }),
           py::kw_only(), "num_heads"_a, "max_bias"_a = 8.0, "mode"_a = "symmetric", "head_start"_a = 0,
           "local_heads"_a = py::none(), "slopes"_a = py::none())
      .def_property_readonly("slopes", [](const A& e) {
        const auto s = e.value.slopes();
        return py::array_t<double>(s.size(), s.data());
      });
  m.def(
      "alibi_slopes",
      [](std::ptrdiff_t n, double max_bias) {
        const auto s = posenc::alibi_slopes(n, max_bias);
        return py::array_t<double>(s.size(), s.data());
      },
      "num_heads"_a, "max_bias"_a = 8.0, "The ALiBi slopes of n heads (BLOOM's rule for n not a power of two).");
}

}  // namespace pyposenc
