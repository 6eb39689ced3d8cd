// python/src/caches.cpp — posenc.KVCache (one layer's contiguous cache: explicit positions, masks,
// RoPE steering for length-dependent schedules, StreamingLLM window shifts, q8_0 storage) and
// posenc.PagedKVCache (vLLM's block layout), over posenc::kv_cache<float> / paged_kv_cache. Each
// call goes through the encoder's bias ops (ops.hpp), GIL released; the Python layer (_api.py)
// allocates outputs.
// clang-format off
#include <pybind11/numpy.h>  // Python.h before any standard header
// clang-format on

#include <cmath>

#include "enums.hpp"
#include "ops.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

const py_encoder& enc_of(py::handle e) {
  if (e.is_none()) {
    static const py_encoder none = [] {
      py_encoder x;
      x.finish();
      return x;
    }();
    return none;
  }
  try {
    return e.cast<const py_encoder&>();
  } catch (const py::cast_error&) {
    throw py::type_error("encoder: expected a posenc encoder or None");
  }
}

void attend_options(cache_args& a, const py::kwargs& kw) {
  for (const auto& [key, value] : kw) {
    const auto k = key.cast<std::string>();
    if (value.is_none()) continue;
    if (k == "scale")
      a.opts.scale = value.cast<double>();
    else if (k == "causal")
      a.opts.causal = value.cast<bool>();
    else if (k == "window")
      a.opts.sliding_window = value.cast<std::int64_t>();
    else if (k == "chunk")
      a.opts.attention_chunk = value.cast<std::int64_t>();
    else if (k == "softcap")
      a.opts.logit_softcap = value.cast<double>();
    else if (k == "sinks") {
      const array_ref s = get_array(value, "sinks");
      require_ndim(s, 1, "[query heads]");
      a.sinks = to_doubles(s);
      for (const double x : a.sinks)
        if (std::isnan(x)) throw py::value_error("sinks: NaN");
      a.opts.sinks = a.sinks;
    } else {
      throw py::type_error("unexpected keyword argument '" + k + "'");
    }
  }
}

/// A read-only numpy view of cache memory that keeps the cache alive.
template <class T>
py::array cache_view(tensor_view<const T> v, py::handle owner) {
  const std::vector<py::ssize_t> shape(v.extents().begin(), v.extents().end());
  std::vector<py::ssize_t> strides;
  for (auto s : v.strides()) strides.push_back(static_cast<py::ssize_t>(s * static_cast<std::ptrdiff_t>(sizeof(T))));
  py::array a(py::dtype::of<T>(), shape, strides, v.data(), owner);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

const char* event_name(int e) {
  switch (static_cast<posenc::cache_event>(e)) {
    case posenc::cache_event::rerotated:
      return "rerotated";
    case posenc::cache_event::dropped:
      return "dropped";
    case posenc::cache_event::kept_stale:
      return "kept_stale";
    default:
      return "none";
  }
}

void check_shift(const py_encoder& e, const char* param) {
  if (e.chain && !e.chain->is_lone_rope())
    throw posenc::config_error(param, std::string("the encoder's query/key transform '") +
                                          std::string(e.chain->name()) +
                                          "' is not a rotation; its cached keys cannot be moved to new positions");
}

}  // namespace

void init_caches(py::module_& m) {
  py::class_<kv_cache_holder>(m, "_KVCache")
      .def(py::init([](std::ptrdiff_t batch, std::ptrdiff_t kv_heads, std::ptrdiff_t head_dim,
                       std::optional<std::ptrdiff_t> value_dim, std::ptrdiff_t capacity, const std::string& policy,
                       const std::string& key_type, const std::string& value_type) {
             return kv_cache_holder{
                 posenc::kv_cache<float>({.batch = batch,
                                          .kv_heads = kv_heads,
                                          .head_dim = head_dim,
                                          .value_dim = value_dim,
                                          .capacity = capacity,
                                          .policy = parse_cache_policy(policy),
                                          .key_type = parse_cache_type(key_type, "kv_cache.key_type"),
                                          .value_type = parse_cache_type(value_type, "kv_cache.value_type")})};
           }),
           py::kw_only(), "batch"_a = 1, "kv_heads"_a, "head_dim"_a, "value_dim"_a = py::none(), "capacity"_a = 0,
           "policy"_a = "rerotate_cached_keys", "key_type"_a = "float32", "value_type"_a = "float32")
      .def_property_readonly("length", [](const kv_cache_holder& c) { return c.cache.length(); })
      .def_property_readonly("capacity", [](const kv_cache_holder& c) { return c.cache.capacity(); })
      .def_property_readonly("batch", [](const kv_cache_holder& c) { return c.cache.batch(); })
      .def_property_readonly(
          "value_dim",
          [](const kv_cache_holder& c) { return c.cache.config().value_dim.value_or(c.cache.config().head_dim); })
      .def_property_readonly("positions",
                             [](const kv_cache_holder& c) {
                               const auto p = c.cache.positions();
                               py::array_t<std::int64_t> out({c.cache.batch(), c.cache.length()});
                               std::copy(p.begin(), p.end(), out.mutable_data());
                               return out;
                             })
      .def_property_readonly(
          "keys",
          [](py::object self) {
            const auto& c = self.cast<const kv_cache_holder&>();
            if (c.cache.config().key_type == posenc::kv_cache_type::q8_0)
              throw py::type_error("keys: the cache stores q8_0 keys (see keys_q8_0)");
            return cache_view(c.cache.keys(), self);
          },
          "The cached keys [B, length, Hkv, D] after the key transform: a read-only view of the cache's memory.")
      .def_property_readonly(
          "values",
          [](py::object self) {
            const auto& c = self.cast<const kv_cache_holder&>();
            if (c.cache.config().value_type == posenc::kv_cache_type::q8_0)
              throw py::type_error("values: the cache stores q8_0 values");
            return cache_view(c.cache.values(), self);
          },
          "The cached values [B, length, Hkv, Dv]: a read-only view of the cache's memory.")
      .def("clear", [](kv_cache_holder& c) { c.cache.clear(); })
      .def(
          "truncate", [](kv_cache_holder& c, std::ptrdiff_t n) { c.cache.truncate(n); }, "n"_a)
      .def(
          "append",
          [](kv_cache_holder& c, py::handle encoder, py::handle k, py::handle v, py::handle positions,
             py::handle token_mask) {
            const py_encoder& e = enc_of(encoder);
            cache_args a;
            a.k = get_array(k, "k"), a.v = get_array(v, "v");
            a.positions = int_vector(positions, "positions");
            if (!token_mask.is_none())
              for (const auto x : int_vector(token_mask, "token_mask")) a.token_mask.push_back(x != 0 ? 1 : 0);
            e.bias->run_cache(cache_op::append, c, a, e.chain ? &*e.chain : nullptr);
            return std::string(event_name(a.event));
          },
          "encoder"_a, "k"_a, "v"_a, "positions"_a, "token_mask"_a = py::none(),
          "Appends k [B, n, Hkv, D] (through the encoder's key transform) and v at positions [B * n]; returns what "
          "the cache did about a length-dependent RoPE schedule: 'none', 'rerotated', 'dropped' (the cache is now "
          "empty: re-prefill) or 'kept_stale'.")
      .def(
          "_attend",
          [](const kv_cache_holder& c, py::handle encoder, py::handle q, py::handle out, py::handle positions,
             const py::kwargs& kw) {
            const py_encoder& e = enc_of(encoder);
            cache_args a;
            a.q = get_array(q, "q"), a.out = get_array(out, "out");
            a.positions = int_vector(positions, "q_positions");
            attend_options(a, kw);
            e.bias->run_cache(cache_op::attend, const_cast<kv_cache_holder&>(c), a, e.chain ? &*e.chain : nullptr);
          },
          "encoder"_a, "q"_a, "out"_a, "q_positions"_a)
      .def(
          "shift_window",
          [](kv_cache_holder& c, py::handle encoder, std::ptrdiff_t sink_tokens, std::ptrdiff_t evict) {
            const py_encoder& e = enc_of(encoder);
            check_shift(e, "kv_cache.shift_window");
            cache_args a;
            a.sink_tokens = sink_tokens, a.evict = evict;
            e.bias->run_cache(cache_op::shift_window, c, a, e.chain ? &*e.chain : nullptr);
          },
          "encoder"_a, "sink_tokens"_a, "evict"_a,
          "StreamingLLM: keeps the first sink_tokens, evicts the next `evict`, moves the rest down (RoPE keys are "
          "re-rotated by -evict).");

  py::class_<paged_cache_holder>(m, "_PagedKVCache")
      .def(py::init([](std::ptrdiff_t kv_heads, std::ptrdiff_t head_dim, std::optional<std::ptrdiff_t> value_dim,
                       std::ptrdiff_t block_size, std::ptrdiff_t num_blocks, const std::string& key_type,
                       const std::string& value_type) {
             return paged_cache_holder{
                 posenc::paged_kv_cache({.kv_heads = kv_heads,
                                         .head_dim = head_dim,
                                         .value_dim = value_dim,
                                         .block_size = block_size,
                                         .num_blocks = num_blocks,
                                         .key_type = parse_cache_type(key_type, "paged_kv_cache.key_type"),
                                         .value_type = parse_cache_type(value_type, "paged_kv_cache.value_type")})};
           }),
           py::kw_only(), "kv_heads"_a, "head_dim"_a, "value_dim"_a = py::none(), "block_size"_a = 16, "num_blocks"_a,
           "key_type"_a = "float32", "value_type"_a = "float32")
      .def_property_readonly("free_blocks", [](const paged_cache_holder& c) { return c.cache.free_blocks(); })
      .def("add_sequence", [](paged_cache_holder& c) { return c.cache.add_sequence(); })
      .def(
          "free_sequence", [](paged_cache_holder& c, std::ptrdiff_t s) { c.cache.free_sequence(s); }, "s"_a)
      .def(
          "length", [](const paged_cache_holder& c, std::ptrdiff_t s) { return c.cache.length(s); }, "s"_a)
      .def(
          "blocks",
          [](const paged_cache_holder& c, std::ptrdiff_t s) {
            const auto b = c.cache.blocks(s);
            return py::array_t<std::int32_t>(b.size(), b.data());
          },
          "s"_a)
      .def(
          "append",
          [](paged_cache_holder& c, py::handle encoder, std::ptrdiff_t s, py::handle k, py::handle v) {
            const py_encoder& e = enc_of(encoder);
            cache_args a;
            a.sequence = s;
            a.k = get_array(k, "k"), a.v = get_array(v, "v");
            e.bias->run_paged_cache(cache_op::append, c, a, e.chain ? &*e.chain : nullptr);
          },
          "encoder"_a, "s"_a, "k"_a, "v"_a,
          "Appends k [1, n, Hkv, D] (through the key transform, at positions length(s) ..) and v to sequence s.")
      .def(
          "_attend",
          [](const paged_cache_holder& c, py::handle encoder, py::handle seqs, py::handle q, py::handle out,
             const py::kwargs& kw) {
            const py_encoder& e = enc_of(encoder);
            cache_args a;
            for (const auto x : int_vector(seqs, "sequences")) a.sequences.push_back(static_cast<std::ptrdiff_t>(x));
            a.q = get_array(q, "q"), a.out = get_array(out, "out");
            attend_options(a, kw);
            e.bias->run_paged_cache(cache_op::attend, const_cast<paged_cache_holder&>(c), a,
                                    e.chain ? &*e.chain : nullptr);
          },
          "encoder"_a, "sequences"_a, "q"_a, "out"_a)
      .def(
          "shift_window",
          [](paged_cache_holder& c, py::handle encoder, std::ptrdiff_t s, std::ptrdiff_t sink_tokens,
             std::ptrdiff_t evict) {
            const py_encoder& e = enc_of(encoder);
            check_shift(e, "paged_kv_cache.shift_window");
            cache_args a;
            a.sequence = s, a.sink_tokens = sink_tokens, a.evict = evict;
            e.bias->run_paged_cache(cache_op::shift_window, c, a, e.chain ? &*e.chain : nullptr);
          },
          "encoder"_a, "s"_a, "sink_tokens"_a, "evict"_a);
}

}  // namespace pyposenc
