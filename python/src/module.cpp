// python/src/module.cpp — the extension module posenc._posenc: exceptions and the parts' registration.
#include <posenc/core/errors.hpp>
#include <posenc/kernels/isa.hpp>
#include <posenc/version.hpp>

#include "binding.hpp"

PYBIND11_MODULE(_posenc, m) {
  namespace py = pybind11;
  m.doc() = "posenc: positional encodings for transformer attention (the C++ library's Python binding)";
  m.attr("__version__") = std::to_string(POSENC_VERSION_MAJOR) + "." + std::to_string(POSENC_VERSION_MINOR) + "." +
                          std::to_string(POSENC_VERSION_PATCH);
  static py::exception<posenc::config_error> config_error(m, "ConfigError", PyExc_ValueError);
  static py::exception<posenc::shape_error> shape_error(m, "ShapeError", config_error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const posenc::shape_error& e) {
      shape_error(e.what());
    } catch (const posenc::config_error& e) {
      config_error(e.what());
    }
  });
  m.def(
      "_isa", [] { return std::string(posenc::kernels::isa_name(posenc::kernels::active_isa())); },
      "The kernel ISA posenc's dispatch chose on this CPU.");
  pyposenc::init_arrays(m);
  pyposenc::init_transforms(m);
  pyposenc::init_additive(m);
  pyposenc::init_alibi(m);
  pyposenc::init_t5(m);
  pyposenc::init_shaw(m);
  pyposenc::init_deberta(m);
  pyposenc::init_fire(m);
  pyposenc::init_kerple(m);
  pyposenc::init_cope(m);
  pyposenc::init_vision(m);
  pyposenc::init_attention(m);
  pyposenc::init_caches(m);
#ifdef POSENC_PYTHON_CONFIG
  pyposenc::init_config(m);
#endif
}
