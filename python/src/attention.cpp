// python/src/attention.cpp — the attention entry points of the module (_posenc.attention, ...):
// keyword options into posenc::attention_options, arrays into views, the call through the
// encoder's bias ops with the GIL released. The Python layer (posenc/_api.py) allocates outputs.
#include <cmath>
#include <string>

#include "binding.hpp"

namespace pyposenc {

using namespace pybind11::literals;

int& max_threads() noexcept {
  static int n = 0;
  return n;
}

posenc::fast_attention_options fast_options() {
  posenc::fast_attention_options f;
  if (const int n = max_threads(); n > 0)
    f.executor = [n](std::ptrdiff_t count, posenc::task_ref t) { posenc::default_pool().run(count, t, n); };
  return f;
}

namespace {

template <class T>
std::vector<T> narrow(const std::vector<std::int64_t>& v, const char* name) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] < std::numeric_limits<T>::min() || v[i] > std::numeric_limits<T>::max())
      throw py::value_error(std::string(name) + ": value " + std::to_string(v[i]) + " out of range");
    out[i] = static_cast<T>(v[i]);
  }
  return out;
}

const py_encoder& encoder_of(py::handle e) {
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
    throw py::type_error(
        "encoder: expected a posenc encoder (posenc.RoPE, posenc.ALiBi, ..., posenc.combine(...)) "
        "or None, got " +
        py::str(py::type::handle_of(e).attr("__name__")).cast<std::string>());
  }
}

void run(op o, call_args& a, py::handle encoder) {
  const py_encoder& e = encoder_of(encoder);
  e.bias->run(o, a, e.chain ? &*e.chain : nullptr);
}

}  // namespace

void fill_options(call_args& a, const py::kwargs& kw, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t, std::ptrdiff_t) {
  auto& o = a.opts;
  for (const auto& [key, value] : kw) {
    const auto k = key.cast<std::string>();
    if (value.is_none()) continue;
    if (k == "scale") {
      o.scale = value.cast<double>();
    } else if (k == "causal") {
      o.causal = value.cast<bool>();
    } else if (k == "window") {
      o.sliding_window = value.cast<std::int64_t>();
    } else if (k == "chunk") {
      o.attention_chunk = value.cast<std::int64_t>();
    } else if (k == "softcap") {
      o.logit_softcap = value.cast<double>();
    } else if (k == "sinks") {
      const array_ref s = get_array(value, "sinks");
      require_ndim(s, 1, "[query heads]");
      a.sinks = to_doubles(s);
      for (const double x : a.sinks)
        if (std::isnan(x)) throw py::value_error("sinks: NaN");
      o.sinks = a.sinks;
    } else if (k == "query_positions") {
      a.qpos = int_vector(value, "query_positions");
      o.query_positions = a.qpos;
    } else if (k == "key_positions") {
      a.kpos = int_vector(value, "key_positions");
      o.key_positions = a.kpos;
    } else if (k == "key_lengths") {
      a.klen = int_vector(value, "key_lengths");
      o.key_lengths = a.klen;
    } else if (k == "key_mask") {
      a.kmask = narrow<std::uint8_t>(int_vector(value, "key_mask"), "key_mask");
      o.key_mask = a.kmask;
    } else if (k == "query_segments") {
      a.qseg = narrow<std::int32_t>(int_vector(value, "query_segments"), "query_segments");
      o.query_segments = a.qseg;
    } else if (k == "key_segments") {
      a.kseg = narrow<std::int32_t>(int_vector(value, "key_segments"), "key_segments");
      o.key_segments = a.kseg;
    } else if (k == "transform_queries") {
      o.transform_queries = value.cast<bool>();
    } else if (k == "transform_keys") {
      o.transform_keys = value.cast<bool>();
    } else if (k == "bf16_dot_products") {
      a.bf16_dot_products = value.cast<bool>();
    } else if (k == "q8_0_int8_dot_products") {
      a.q8_0_int8_dot_products = value.cast<bool>();
    } else if (k == "cu_seqlens_q") {
      a.cu_q = narrow<std::int32_t>(int_vector(value, "cu_seqlens_q"), "cu_seqlens_q");
      a.ragged = true;
    } else if (k == "cu_seqlens_k") {
      a.cu_k = narrow<std::int32_t>(int_vector(value, "cu_seqlens_k"), "cu_seqlens_k");
      a.ragged = true;
    } else {
      throw py::type_error("unexpected keyword argument '" + k + "'");
    }
  }
  if (a.ragged && (a.cu_q.empty() || a.cu_k.empty()))
    throw py::value_error("cu_seqlens_q, cu_seqlens_k: give both for a ragged batch");
}

void init_attention(py::module_& m) {
  m.def(
      "_attention",
      [](py::handle q, py::handle k, py::handle v, py::handle out, py::handle encoder, py::handle lse,
         const py::kwargs& kw) {
        call_args a;
        a.q = get_array(q, "q"), a.k = get_array(k, "k"), a.v = get_array(v, "v"), a.out = get_array(out, "out");
        const array_ref l = get_array(lse, "lse");
        if (l.given()) a.lse = span1<float>(l);
        fill_options(a, kw, 0, 0, 0, 0);
        run(op::attention, a, encoder);
      },
      "q"_a, "k"_a, "v"_a, "out"_a, "encoder"_a, "lse"_a = py::none());
  m.def(
      "_attention_paged",
      [](py::handle q, py::handle kb, py::handle vb, py::handle table, py::handle lengths, py::handle out,
         py::handle encoder, const py::kwargs& kw) {
        call_args a;
        a.q = get_array(q, "q"), a.k = get_array(kb, "k_blocks"), a.v = get_array(vb, "v_blocks");
        a.out = get_array(out, "out");
        const array_ref t = get_array(table, "block_table");
        if (!t.given()) throw py::type_error("block_table: expected an int32 array [sequences, blocks_per_sequence]");
        require_ndim(t, 2, "[sequences, blocks_per_sequence]");
        a.blocks_per_sequence = t.shape[1];
        a.block_table = narrow<std::int32_t>(int_vector(table, "block_table"), "block_table");
        a.lengths = narrow<std::int32_t>(int_vector(lengths, "lengths"), "lengths");
        fill_options(a, kw, 0, 0, 0, 0);
        run(op::attention_paged, a, encoder);
      },
      "q"_a, "k_blocks"_a, "v_blocks"_a, "block_table"_a, "lengths"_a, "out"_a, "encoder"_a);
  m.def(
      "_attention_backward",
      [](py::handle q, py::handle k, py::handle v, py::handle out, py::handle lse, py::handle dout, py::handle dq,
         py::handle dk, py::handle dv, py::handle encoder, py::handle egrad, py::handle sgrad, const py::kwargs& kw) {
        call_args a;
        a.q = get_array(q, "q"), a.k = get_array(k, "k"), a.v = get_array(v, "v"), a.out = get_array(out, "out");
        a.dout = get_array(dout, "dout"), a.dq = get_array(dq, "dq"), a.dk = get_array(dk, "dk");
        a.dv = get_array(dv, "dv");
        const array_ref l = get_array(lse, "lse"), eg = get_array(egrad, "encoder_grad"),
                        sg = get_array(sgrad, "sinks_grad");
        if (!l.given()) throw py::type_error("lse: expected the float32 log-sum-exp of the forward");
        a.lse = span1<float>(l);
        if (eg.given()) a.encoder_grad = span1<double>(eg);
        if (sg.given()) a.sinks_grad = span1<double>(sg);
        fill_options(a, kw, 0, 0, 0, 0);
        run(op::attention_backward, a, encoder);
      },
      "q"_a, "k"_a, "v"_a, "out"_a, "lse"_a, "dout"_a, "dq"_a, "dk"_a, "dv"_a, "encoder"_a,
      "encoder_grad"_a = py::none(), "sinks_grad"_a = py::none());
  m.def(
      "_sdpa",
      [](py::handle q, py::handle k, py::handle v, py::handle out, py::handle encoder, const py::kwargs& kw) {
        call_args a;
        a.q = get_array(q, "q"), a.k = get_array(k, "k"), a.v = get_array(v, "v"), a.out = get_array(out, "out");
        require_dtype(a.q, {dtype::f32, dtype::f64});
        fill_options(a, kw, 0, 0, 0, 0);
        run(op::sdpa, a, encoder);
      },
      "q"_a, "k"_a, "v"_a, "out"_a, "encoder"_a);
  m.def(
      "_sdpa_backward",
      [](py::handle q, py::handle k, py::handle v, py::handle dout, py::handle dq, py::handle dk, py::handle dv,
         py::handle encoder, py::handle egrad, py::handle sgrad, const py::kwargs& kw) {
        call_args a;
        a.q = get_array(q, "q"), a.k = get_array(k, "k"), a.v = get_array(v, "v");
        a.dout = get_array(dout, "dout"), a.dq = get_array(dq, "dq"), a.dk = get_array(dk, "dk");
        a.dv = get_array(dv, "dv");
        require_dtype(a.q, {dtype::f32, dtype::f64});
        const array_ref eg = get_array(egrad, "encoder_grad"), sg = get_array(sgrad, "sinks_grad");
        if (eg.given()) a.encoder_grad = span1<double>(eg);
        if (sg.given()) a.sinks_grad = span1<double>(sg);
        fill_options(a, kw, 0, 0, 0, 0);
        run(op::sdpa_backward, a, encoder);
      },
      "q"_a, "k"_a, "v"_a, "dout"_a, "dq"_a, "dk"_a, "dv"_a, "encoder"_a, "encoder_grad"_a = py::none(),
      "sinks_grad"_a = py::none());
  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 0) throw py::value_error("n: expected >= 0 (0: every thread of the pool)");
        max_threads() = n;
      },
      "n"_a,
      "Threads posenc's pool uses for one call (0: all; the pool has POSENC_NUM_THREADS threads, or one per core).");
  m.def("get_num_threads", [] {
    const int n = max_threads(), size = posenc::default_pool().size();
    return n > 0 && n < size ? n : size;
  });
}

}  // namespace pyposenc
