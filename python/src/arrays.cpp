// python/src/arrays.cpp — arrays from Python as posenc views: numpy through the buffer protocol,
// torch (and any __dlpack__ producer) through DLPack, never copied; the checks that turn a wrong
// dtype, rank, device, layout or a freed tensor into TypeError / ValueError naming the argument.
// clang-format off
#include <pybind11/numpy.h>  // Python.h before any standard header
// clang-format on

#include <cstring>
#include <string>

#include "binding.hpp"

namespace pyposenc {

namespace {

// DLPack 0.x ABI (dlpack.h, what torch 1.13 and numpy 1.24 export): a plain C struct layout.
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
constexpr std::int32_t dl_cpu = 1;
enum : std::uint8_t { dl_int = 0, dl_uint = 1, dl_float = 2, dl_bfloat = 4, dl_bool = 6 };

dtype from_dl(DLDataType t) {
  if (t.lanes != 1) return dtype::other;
  switch (t.code) {
    case dl_float:
      return t.bits == 32 ? dtype::f32 : t.bits == 64 ? dtype::f64 : t.bits == 16 ? dtype::f16 : dtype::other;
    case dl_bfloat:
      return t.bits == 16 ? dtype::bf16 : dtype::other;
    case dl_int:
      return t.bits == 64 ? dtype::i64 : t.bits == 32 ? dtype::i32 : dtype::other;
    case dl_uint:
      return t.bits == 8 ? dtype::u8 : dtype::other;
    case dl_bool:
      return dtype::bool_;
    default:
      return dtype::other;
  }
}

std::size_t item_size(dtype t) {
  switch (t) {
    case dtype::f64:
    case dtype::i64:
      return 8;
    case dtype::f32:
    case dtype::i32:
      return 4;
    case dtype::bf16:
    case dtype::f16:
      return 2;
    default:
      return 1;
  }
}

dtype from_numpy(const py::dtype& d) {
  const char k = d.kind();
  const auto n = d.itemsize();
  if (k == 'f') return n == 4 ? dtype::f32 : n == 8 ? dtype::f64 : n == 2 ? dtype::f16 : dtype::other;
  if (k == 'i') return n == 8 ? dtype::i64 : n == 4 ? dtype::i32 : dtype::other;
  if (k == 'u') return n == 1 ? dtype::u8 : dtype::other;
  if (k == 'b') return dtype::bool_;
  return dtype::other;
}

[[noreturn]] void value_error(const std::string& name, const std::string& what) {
  throw py::value_error(name + ": " + what);
}

array_ref from_numpy_array(const py::array& a, const char* name) {
  array_ref r;
  r.name = name;
  r.owner = a;
  const py::dtype d = a.dtype();
  if (d.byteorder() == '>') throw py::type_error(std::string(name) + ": a big-endian array (use a native byte order)");
  r.type = from_numpy(d);
  r.ndim = static_cast<int>(a.ndim());
  if (r.ndim > 8) value_error(name, "more than 8 dimensions");
  const auto es = static_cast<std::ptrdiff_t>(d.itemsize());
  for (int i = 0; i < r.ndim; ++i) {
    const auto u = static_cast<std::size_t>(i);
    r.shape[u] = a.shape(i);
    const std::ptrdiff_t s = a.strides(i);
    if (s % es != 0) value_error(name, "a stride that is not a multiple of the element size (an unaligned view)");
    r.strides[u] = s / es;
  }
  r.data = const_cast<void*>(a.data());
  r.writable = a.writeable();
  return r;
}

array_ref from_dlpack(py::handle obj, const char* name) {
  array_ref r;
  r.name = name;
  py::object o = py::reinterpret_borrow<py::object>(obj);
  if (py::hasattr(o, "device") && py::hasattr(o.attr("device"), "type")) {
    const auto dev = py::str(o.attr("device").attr("type")).cast<std::string>();
    if (dev != "cpu") value_error(name, "a tensor on device '" + dev + "' (posenc computes on the CPU: .cpu() it)");
  }
  if (py::hasattr(o, "requires_grad") && o.attr("requires_grad").cast<bool>()) o = o.attr("detach")();
  py::object cap;
  try {
    cap = o.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    value_error(name, std::string("cannot be read as an array (") + e.what() + ")");
  }
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (mt == nullptr) {
    PyErr_Clear();
    value_error(name, "its __dlpack__ did not return a DLPack capsule");
  }
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  r.dl = std::shared_ptr<void>(mt, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  const DLTensor& t = mt->dl_tensor;
  if (t.device.device_type != dl_cpu) value_error(name, "a tensor that is not in CPU memory");
  r.owner = o;
  r.type = from_dl(t.dtype);
  r.ndim = t.ndim;
  if (r.ndim > 8) value_error(name, "more than 8 dimensions");
  std::ptrdiff_t stride = 1;
  for (int i = r.ndim; i-- > 0;) {
    const auto u = static_cast<std::size_t>(i);
    r.shape[u] = static_cast<std::ptrdiff_t>(t.shape[i]);
    r.strides[u] = t.strides ? static_cast<std::ptrdiff_t>(t.strides[i]) : stride;
    stride *= r.shape[u];
  }
  r.data = static_cast<char*>(t.data) + t.byte_offset;
  if (r.size() > 0 && t.data == nullptr) value_error(name, "a tensor without storage (freed or resized to 0)");
  r.writable = true;
  return r;
}

}  // namespace

const char* dtype_name(dtype t) noexcept {
  switch (t) {
    case dtype::f32:
      return "float32";
    case dtype::f64:
      return "float64";
    case dtype::bf16:
      return "bfloat16";
    case dtype::f16:
      return "float16";
    case dtype::i64:
      return "int64";
    case dtype::i32:
      return "int32";
    case dtype::u8:
      return "uint8";
    case dtype::bool_:
      return "bool";
    case dtype::q8_0:
      return "q8_0 blocks (uint8 [..., D/32, 34])";
    default:
      return "an unsupported dtype";
  }
}

std::string array_ref::shape_text() const {
  std::string s = "(";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[static_cast<std::size_t>(i)]);
  return s + (ndim == 1 ? ",)" : ")");
}

array_ref get_array(py::handle obj, const char* name) {
  if (obj.is_none()) {
    array_ref r;
    r.name = name;
    return r;
  }
  if (py::isinstance<py::array>(obj)) return from_numpy_array(py::reinterpret_borrow<py::array>(obj), name);
  if (py::hasattr(obj, "__dlpack__")) return from_dlpack(obj, name);
  throw py::type_error(std::string(name) + ": expected a numpy array or a torch tensor, got " +
                       py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>());
}

void require_dtype(const array_ref& a, std::initializer_list<dtype> allowed) {
  for (const dtype d : allowed)
    if (a.type == d) return;
  std::string want;
  for (const dtype d : allowed) want += (want.empty() ? "" : " or ") + std::string(dtype_name(d));
  throw py::type_error(a.name + ": expected " + want + ", got " + dtype_name(a.type));
}

void require_ndim(const array_ref& a, int n, const char* layout) {
  if (a.ndim != n)
    throw py::value_error(a.name + ": expected " + std::to_string(n) + " dimensions " + layout + ", got shape " +
                          a.shape_text());
}

void require_contiguous(const array_ref& a) {
  std::ptrdiff_t want = 1;
  for (int i = a.ndim; i-- > 0;) {
    const auto u = static_cast<std::size_t>(i);
    if (a.shape[u] > 1 && a.strides[u] != want) throw py::value_error(a.name + ": must be contiguous");
    want *= a.shape[u];
  }
}

void require_writable(const array_ref& a) {
  if (!a.writable) throw py::value_error(a.name + ": a read-only array (the result is written into it)");
}

template <class T>
tensor_view<T> view4(const array_ref& a) {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, block_q8_0>) {
    if (a.type != dtype::u8 || a.ndim != 5 || a.shape[4] != 34)
      throw py::type_error(a.name + ": expected q8_0 blocks, a uint8 array [B, S, H, D/32, 34] (posenc.quantize_q8_0)");
    if (a.strides[4] != 1 || (a.shape[3] > 1 && a.strides[3] != 34))
      throw py::value_error(a.name + ": q8_0 blocks must be contiguous along their last two axes");
    std::array<std::ptrdiff_t, 4> e{}, s{};
    for (std::size_t i = 0; i < 4; ++i) {
      e[i] = a.shape[i];
      if (a.shape[i] > 1 && a.strides[i] % 34 != 0)
        throw py::value_error(a.name + ": q8_0 strides must be whole blocks of 34 bytes");
      s[i] = a.strides[i] / 34;
    }
    if (reinterpret_cast<std::uintptr_t>(a.data) % alignof(block_q8_0) != 0)
      throw py::value_error(a.name + ": q8_0 blocks must start at an even address");
    return tensor_view<T>::strided(static_cast<T*>(a.data), e, s);
  } else {
    constexpr dtype want = std::is_same_v<U, float>      ? dtype::f32
                           : std::is_same_v<U, double>   ? dtype::f64
                           : std::is_same_v<U, bfloat16> ? dtype::bf16
                                                         : dtype::f16;
    require_dtype(a, {want});
    require_ndim(a, 4, "[batch, tokens, heads, dim]");
    if constexpr (!std::is_const_v<T>) require_writable(a);
    std::array<std::ptrdiff_t, 4> e{}, s{};
    for (std::size_t i = 0; i < 4; ++i) e[i] = a.shape[i], s[i] = a.strides[i];
    try {
      return tensor_view<T>::strided(static_cast<T*>(a.data), e, s);
    } catch (const posenc::shape_error& err) {
      throw py::value_error(a.name + ": " + err.what());
    }
  }
}

template tensor_view<float> view4(const array_ref&);
template tensor_view<const float> view4(const array_ref&);
template tensor_view<double> view4(const array_ref&);
template tensor_view<const double> view4(const array_ref&);
template tensor_view<bfloat16> view4(const array_ref&);
template tensor_view<const bfloat16> view4(const array_ref&);
template tensor_view<float16> view4(const array_ref&);
template tensor_view<const float16> view4(const array_ref&);
template tensor_view<const block_q8_0> view4(const array_ref&);
template tensor_view<block_q8_0> view4(const array_ref&);

template <class T>
std::span<T> span1(const array_ref& a) {
  using U = std::remove_const_t<T>;
  constexpr dtype want = std::is_same_v<U, float> ? dtype::f32 : dtype::f64;
  require_dtype(a, {want});
  require_ndim(a, 1, "");
  if (a.shape[0] > 1 && a.strides[0] != 1) throw py::value_error(a.name + ": must be contiguous");
  if constexpr (!std::is_const_v<T>) require_writable(a);
  return {static_cast<T*>(a.data), static_cast<std::size_t>(a.shape[0])};
}
template std::span<float> span1(const array_ref&);
template std::span<double> span1(const array_ref&);
template std::span<const double> span1(const array_ref&);

std::vector<std::int64_t> int_vector(py::handle obj, const char* name) {
  array_ref a;
  if (py::isinstance<py::array>(obj) || py::hasattr(obj, "__dlpack__")) {
    a = get_array(obj, name);
  } else {
    try {
      a = get_array(py::array_t<std::int64_t, py::array::forcecast>::ensure(obj), name);
    } catch (...) {
      throw py::type_error(std::string(name) + ": expected integers (a list, numpy array or torch tensor)");
    }
    if (!a.given())
      throw py::type_error(std::string(name) + ": expected integers (a list, numpy array or torch tensor)");
  }
  require_dtype(a, {dtype::i64, dtype::i32, dtype::u8, dtype::bool_});
  std::vector<std::int64_t> out(static_cast<std::size_t>(a.size()));
  std::array<std::ptrdiff_t, 8> idx{};
  for (std::size_t n = 0; n < out.size(); ++n) {
    std::ptrdiff_t off = 0;
    for (int i = 0; i < a.ndim; ++i) off += idx[static_cast<std::size_t>(i)] * a.strides[static_cast<std::size_t>(i)];
    const char* p = static_cast<const char*>(a.data) + off * static_cast<std::ptrdiff_t>(item_size(a.type));
    switch (a.type) {
      case dtype::i64:
        std::memcpy(&out[n], p, 8);
        break;
      case dtype::i32: {
        std::int32_t x;
        std::memcpy(&x, p, 4);
        out[n] = x;
        break;
      }
      default:
        out[n] = static_cast<unsigned char>(*p);
    }
    for (int i = a.ndim; i-- > 0;) {  // next index, row-major
      const auto u = static_cast<std::size_t>(i);
      if (++idx[u] < a.shape[u]) break;
      idx[u] = 0;
    }
  }
  return out;
}

std::vector<double> to_doubles(const array_ref& a) {
  require_dtype(a, {dtype::f32, dtype::f64, dtype::bf16, dtype::f16});
  std::vector<double> out(static_cast<std::size_t>(a.size()));
  std::array<std::ptrdiff_t, 8> idx{};
  for (std::size_t n = 0; n < out.size(); ++n) {
    std::ptrdiff_t off = 0;
    for (int i = 0; i < a.ndim; ++i) off += idx[static_cast<std::size_t>(i)] * a.strides[static_cast<std::size_t>(i)];
    switch (a.type) {
      case dtype::f32:
        out[n] = static_cast<const float*>(a.data)[off];
        break;
      case dtype::f64:
        out[n] = static_cast<const double*>(a.data)[off];
        break;
      case dtype::bf16:
        out[n] = static_cast<float>(static_cast<const bfloat16*>(a.data)[off]);
        break;
      default:
        out[n] = static_cast<float>(static_cast<const float16*>(a.data)[off]);
    }
    for (int i = a.ndim; i-- > 0;) {
      const auto u = static_cast<std::size_t>(i);
      if (++idx[u] < a.shape[u]) break;
      idx[u] = 0;
    }
  }
  return out;
}

void init_arrays(py::module_&) {}

}  // namespace pyposenc
