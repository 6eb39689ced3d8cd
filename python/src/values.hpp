// python/src/values.hpp — small parameter vectors from Python (lists, numpy arrays, torch tensors) as
// doubles, for the encoders whose parameters are a few numbers per head (FIRE, KERPLE).
#pragma once

// clang-format off
#include <pybind11/numpy.h>  // Python.h before any standard header
// clang-format on

#include <string>
#include <vector>

#include "binding.hpp"

namespace pyposenc {

/// `obj` flattened to doubles (row-major): a torch tensor through DLPack, anything numpy can convert
/// (lists, integer arrays) through numpy. TypeError naming `name` for None or non-numbers.
inline std::vector<double> float_values(py::handle obj, const char* name) {
  const std::string what = std::string(name) + ": expected numbers (a list, numpy array or torch tensor)";
  if (obj.is_none()) throw py::type_error(what);
  if (!py::isinstance<py::array>(obj) && py::hasattr(obj, "__dlpack__")) return to_doubles(get_array(obj, name));
  auto a = py::array_t<double, py::array::forcecast>::ensure(obj);
  if (!a) throw py::type_error(what);
  return to_doubles(get_array(a, name));
}

}  // namespace pyposenc
