// python/src/enc_kerple.cpp — posenc.KERPLE (Chi et al. 2022: logarithmic and power kernels of the
// distance, trainable) and the attention family instantiated for it.
#include <pybind11/numpy.h>

#include <posenc/encoders/kerple.hpp>

#include "enums.hpp"
#include "ops.hpp"
#include "values.hpp"

namespace pyposenc {

using namespace pybind11::literals;

void init_kerple(py::module_& m) {
  using K = py_enc<posenc::kerple>;
  py::class_<K, py_encoder, std::shared_ptr<K>>(
      m, "KERPLE",
      "KERPLE (Chi et al. 2022): bias(h, i, j) = -r1_h ln(1 + r2_h n) ('logarithmic') or -r1_h n^r2_h ('power'), "
      "n = |i - j|; r1, r2 [num_heads] projected as the authors do (raised to min_parameter, the power's r2 capped "
      "at max_exponent).")
      .def(py::init([](py::handle r1, py::handle r2, const std::string& kernel, double min_parameter,
                       double max_exponent) {
             const std::vector<double> a = float_values(r1, "r1"), b = float_values(r2, "r2");
             if (a.size() != b.size())
               throw py::value_error("r2: expected one value per head like r1 (" + std::to_string(a.size()) +
                                     "), got " + std::to_string(b.size()));
             posenc::kerple k(
                 {.kernel = parse_choice<posenc::kerple_kernel>(
                      kernel, "kerple.kernel",
                      {{"logarithmic", posenc::kerple_kernel::logarithmic}, {"power", posenc::kerple_kernel::power}}),
                  .num_heads = static_cast<std::ptrdiff_t>(a.size()),
                  .min_parameter = min_parameter,
                  .max_exponent = max_exponent},
                 a, b);
             auto e = std::make_shared<K>(k);
             e->bias = make_bias_ops(std::move(k));
             e->finish();
             return e;
           }),
           "r1"_a, "r2"_a, py::kw_only(), "kernel"_a = "logarithmic", "min_parameter"_a = 0.01, "max_exponent"_a = 2.0)
      .def_property_readonly("kernel",
                             [](const K& e) {
                               return e.value.config().kernel == posenc::kerple_kernel::logarithmic ? "logarithmic"
                                                                                                    : "power";
                             })
      .def_property_readonly(
          "parameters",
          [](const K& e) {
            const auto p = e.value.parameters();
            return py::array_t<double>(p.size(), p.data());
          },
          "[r1, r2] after the projection: the values the bias uses (the layout of encoder_grad).");
}

}  // namespace pyposenc
