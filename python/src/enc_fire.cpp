// python/src/enc_fire.cpp — posenc.FIRE (Li et al. 2023: a one-hidden-layer MLP of the log-normalised
// distance, trainable) and the attention family instantiated for it.
#include <pybind11/numpy.h>

#include <posenc/encoders/fire.hpp>

#include "ops.hpp"
#include "values.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

py::array_t<double> to_array(std::span<const double> s) {
  return py::array_t<double>(s.size(), s.data());
}

// Optional numbers arrive as handles (None or a number): std::optional casters trip GCC 12's
// -Wmaybe-uninitialized inside pybind11's argument loader.
template <class T>
T number_or(py::handle x, T otherwise, const char* name) {
  if (x.is_none()) return otherwise;
  try {
    return x.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(name) + ": expected a number");
  }
}

posenc::fire make_fire(py::handle parameters, std::ptrdiff_t num_heads, py::handle mlp_width, double eps, py::handle c,
                       py::handle threshold, py::handle w1, py::handle b1, py::handle w2, py::handle b2) {
  const bool named = !w1.is_none() || !b1.is_none() || !w2.is_none() || !b2.is_none();
  if (!parameters.is_none()) {
    if (named || !c.is_none() || !threshold.is_none())
      throw py::type_error("FIRE: give either parameters (flat) or c, threshold, w1, b1, w2, b2, not both");
    const std::vector<double> flat = float_values(parameters, "parameters");
    return posenc::fire(
        {.num_heads = num_heads, .mlp_width = number_or<std::ptrdiff_t>(mlp_width, 32, "mlp_width"), .eps = eps},
        std::span<const double>(flat));
  }
  if (w1.is_none() || b1.is_none() || w2.is_none() || b2.is_none())
    throw py::type_error("FIRE: give parameters (flat) or all of w1, b1, w2 and b2");
  posenc::fire_parameters p{.c = number_or(c, 0.1, "c"),
                            .threshold = number_or(threshold, 512.0, "threshold"),
                            .w1 = float_values(w1, "w1"),
                            .b1 = float_values(b1, "b1"),
                            .w2 = float_values(w2, "w2"),
                            .b2 = float_values(b2, "b2")};
  const auto width = number_or(mlp_width, static_cast<std::ptrdiff_t>(p.w1.size()), "mlp_width");
  return posenc::fire({.num_heads = num_heads, .mlp_width = width, .eps = eps}, p);
}

}  // namespace

void init_fire(py::module_& m) {
  using F = py_enc<posenc::fire>;
  py::class_<F, py_encoder, std::shared_ptr<F>>(
      m, "FIRE",
      "FIRE (Li et al. 2023): bias(h, i, j) = f(u)_h, u = psi(|i - j|) / (psi(max(L, i)) + eps), psi(x) = "
      "ln(1 + c x), f(u)_h = sum_k W2[h, k] relu(W1[k] u + b1[k]) + b2[h]; |c| and |L| are used. Parameters "
      "named (c, threshold = L, w1 [W], b1 [W], w2 [num_heads, W], b2 [num_heads]) or flat in that order "
      "(copied in).")
      .def(py::init([](py::handle parameters, std::ptrdiff_t num_heads, py::handle mlp_width, double eps, py::handle c,
                       py::handle threshold, py::handle w1, py::handle b1, py::handle w2, py::handle b2) {
             posenc::fire f = make_fire(parameters, num_heads, mlp_width, eps, c, threshold, w1, b1, w2, b2);
             auto e = std::make_shared<F>(f);
             e->bias = make_bias_ops(std::move(f));
             e->finish();
             return e;
           }),
           "parameters"_a = py::none(), py::kw_only(), "num_heads"_a, "mlp_width"_a = py::none(), "eps"_a = 1e-6,
           "c"_a = py::none(), "threshold"_a = py::none(), "w1"_a = py::none(), "b1"_a = py::none(),
           "w2"_a = py::none(), "b2"_a = py::none())
      .def_property_readonly("mlp_width", [](const F& e) { return e.value.config().mlp_width; })
      .def_property_readonly("eps", [](const F& e) { return e.value.config().eps; })
      .def_property_readonly(
          "parameters", [](const F& e) { return to_array(e.value.parameters()); },
          "The flat parameters [c, L, w1, b1, w2, b2] (the layout of encoder_grad).")
      .def(
          "normalized_distance",
          [](const F& e, std::int64_t pos_q, std::int64_t pos_k) { return e.value.normalized_distance(pos_q, pos_k); },
          "pos_q"_a, "pos_k"_a, "u: what the MLP reads for a query at pos_q and a key at pos_k.")
      .def(
          "mlp",
          [](const F& e, std::ptrdiff_t h, double u) {
            if (h < 0 || h >= e.value.num_heads())
              throw py::value_error("h: expected a head in [0, " + std::to_string(e.value.num_heads()) + ")");
            return e.value.mlp(h, u);
          },
          "h"_a, "u"_a, "f(u)_h: the MLP's output for head h.");
}

}  // namespace pyposenc
