// python/src/additive.cpp — the additive (embedding) encoders: posenc.Sinusoidal and
// posenc.LearnedAbsolute (add rows to embeddings in place, scatter their gradient back), and the
// q8_0 block format (quantize / dequantize, ggml's block_q8_0).
#include <pybind11/numpy.h>

#include <posenc/encoders/learned.hpp>
#include <posenc/encoders/sinusoidal.hpp>
#include <posenc/kernels/q8_0.hpp>

#include "binding.hpp"
#include "enums.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

/// x as rows [N, d] with a unit last stride (any leading shape, row stride uniform after flattening
/// is not required: each row is found from the leading indices).
template <class T, class F>
void for_rows(const array_ref& x, std::ptrdiff_t d, F&& f) {
  if (x.ndim < 1 || x.shape[static_cast<std::size_t>(x.ndim - 1)] != d)
    throw py::value_error(x.name + ": expected a last axis of " + std::to_string(d) + ", got shape " + x.shape_text());
  if (d > 1 && x.strides[static_cast<std::size_t>(x.ndim - 1)] != 1)
    throw py::value_error(x.name + ": the last axis must be contiguous");
  const std::ptrdiff_t n = d == 0 ? 0 : x.size() / d;
  std::array<std::ptrdiff_t, 8> idx{};
  for (std::ptrdiff_t r = 0; r < n; ++r) {
    std::ptrdiff_t off = 0;
    for (int i = 0; i + 1 < x.ndim; ++i)
      off += idx[static_cast<std::size_t>(i)] * x.strides[static_cast<std::size_t>(i)];
    f(r, std::span<T>(static_cast<T*>(x.data) + off, static_cast<std::size_t>(d)));
    for (int i = x.ndim - 1; i-- > 0;) {
      const auto u = static_cast<std::size_t>(i);
      if (++idx[u] < x.shape[u]) break;
      idx[u] = 0;
    }
  }
}

template <class E>
void add_rows(const E& e, py::handle xo, py::handle po) {
  const array_ref x = get_array(xo, "x");
  require_writable(x);
  const auto p = int_vector(po, "positions");
  const std::ptrdiff_t d = e.model_dim();
  if (static_cast<std::ptrdiff_t>(p.size()) * d != x.size())
    throw py::value_error("positions: expected one position per row of x (" +
                          std::to_string(x.size() / std::max<std::ptrdiff_t>(d, 1)) + "), got " +
                          std::to_string(p.size()));
  auto go = [&](auto tag) {
    using T = decltype(tag);
    for_rows<T>(x, d, [&](std::ptrdiff_t r, std::span<T> row) { e.add(p[static_cast<std::size_t>(r)], row); });
  };
  if (x.type == dtype::f32)
    go(float{});
  else if (x.type == dtype::f64)
    go(double{});
  else
    require_dtype(x, {dtype::f32, dtype::f64});
}

}  // namespace

void init_additive(py::module_& m) {
  using S = py_enc<posenc::sinusoidal>;
  py::class_<S, py_encoder, std::shared_ptr<S>>(
      m, "Sinusoidal",
      "The sinusoidal table of Vaswani et al. added to embeddings; conventions: layout 'interleaved' (paper, "
      "DistilBERT) or 'concatenated' (Marian, t2t, fairseq), spacing 'paper' or 'endpoint'.")
      .def(py::init([](std::ptrdiff_t d_model, const std::string& layout, const std::string& spacing,
                       double min_timescale, double max_timescale, std::int64_t position_origin,
                       std::optional<std::int64_t> padding_idx, double scale) {
             posenc::sinusoidal_config c{.d_model = d_model};
             c.layout =
                 parse_choice<posenc::sinusoidal_layout>(layout, "sinusoidal.layout",
                                                         {{"interleaved", posenc::sinusoidal_layout::interleaved},
                                                          {"concatenated", posenc::sinusoidal_layout::concatenated}});
             c.spacing = parse_choice<posenc::sinusoidal_spacing>(
                 spacing, "sinusoidal.spacing",
                 {{"paper", posenc::sinusoidal_spacing::paper}, {"endpoint", posenc::sinusoidal_spacing::endpoint}});
             c.min_timescale = min_timescale, c.max_timescale = max_timescale;
             c.position_origin = position_origin, c.padding_idx = padding_idx, c.scale = scale;
             auto e = std::make_shared<S>(posenc::sinusoidal(c));
             e->finish();
             return e;
           }),
           py::kw_only(), "d_model"_a, "layout"_a = "interleaved", "spacing"_a = "paper", "min_timescale"_a = 1.0,
           "max_timescale"_a = 1e4, "position_origin"_a = 0, "padding_idx"_a = py::none(), "scale"_a = 1.0)
      .def_property_readonly("model_dim", [](const S& e) { return e.value.model_dim(); })
      .def(
          "encode",
          [](const S& e, py::handle positions) {
            const auto p = int_vector(positions, "positions");
            const auto d = static_cast<std::size_t>(e.value.model_dim());
            py::array_t<double> out({p.size(), d});
            for (std::size_t i = 0; i < p.size(); ++i)
              e.value.encode(p[i], std::span<double>(out.mutable_data() + i * d, d));
            return out;
          },
          "positions"_a, "The encoding rows of the positions, float64 [len(positions), d_model].")
      .def(
          "add",
          [](const S& e, py::object x, py::handle p) {
            add_rows(e.value, x, p);
            return x;
          },
          "x"_a, "positions"_a, "Adds the rows of the positions to x [..., d_model] (float32/64) in place; returns x.");

  using L = py_enc<posenc::learned_absolute>;
  py::class_<L, py_encoder, std::shared_ptr<L>>(
      m, "LearnedAbsolute",
      "A learned absolute position table [max_len, d_model] (GPT-2, BERT; offset 2 for OPT), added to embeddings.")
      .def(py::init([](py::handle table, std::int64_t offset, const std::string& oor) {
             const array_ref a = get_array(table, "table");
             if (!a.given()) throw py::type_error("table: expected a [max_len, d_model] array");
             require_ndim(a, 2, "[max_len, d_model]");
             const std::vector<double> v = to_doubles(a);
             auto e = std::make_shared<L>(posenc::learned_absolute({.max_len = a.shape[0],
                                                                    .model_dim = a.shape[1],
                                                                    .offset = offset,
                                                                    .out_of_range = parse_out_of_range(oor)},
                                                                   std::span<const double>(v)));
             e->finish();
             return e;
           }),
           "table"_a, py::kw_only(), "offset"_a = 0, "out_of_range"_a = "error")
      .def_property_readonly("model_dim", [](const L& e) { return e.value.model_dim(); })
      .def_property_readonly("max_len", [](const L& e) { return e.value.max_len(); })
      .def(
          "add",
          [](const L& e, py::object x, py::handle p) {
            add_rows(e.value, x, p);
            return x;
          },
          "x"_a, "positions"_a,
          "Adds the table rows of the positions to x [..., d_model] (float32/64) in place; returns x.")
      .def(
          "accumulate_gradient",
          [](const L& e, py::handle positions, py::handle dx, py::handle grad) {
            const auto p = int_vector(positions, "positions");
            const array_ref x = get_array(dx, "dx"), g = get_array(grad, "grad");
            const auto gs = span1<double>(g);
            const std::ptrdiff_t d = e.value.model_dim();
            if (static_cast<std::ptrdiff_t>(p.size()) * d != x.size())
              throw py::value_error("positions: expected one position per row of dx");
            auto go = [&](auto tag) {
              using T = decltype(tag);
              for_rows<T>(x, d, [&](std::ptrdiff_t r, std::span<T> row) {
                e.value.accumulate_add_gradient(p[static_cast<std::size_t>(r)], std::span<const T>(row), gs);
              });
            };
            if (x.type == dtype::f32)
              go(float{});
            else if (x.type == dtype::f64)
              go(double{});
            else
              require_dtype(x, {dtype::f32, dtype::f64});
          },
          "positions"_a, "dx"_a, "grad"_a,
          "grad (float64 [max_len * d_model]) += the gradient of the table for embedding gradients dx [..., d_model].");

  m.def(
      "_quantize_q8_0",
      [](py::handle xo, py::handle yo) {
        const array_ref x = get_array(xo, "x"), y = get_array(yo, "out");
        require_dtype(x, {dtype::f32});
        const std::ptrdiff_t D = x.ndim ? x.shape[static_cast<std::size_t>(x.ndim - 1)] : 0;
        if (D % 32 != 0) throw py::value_error("x: the last axis must be a multiple of 32, got " + std::to_string(D));
        require_contiguous(x);
        require_contiguous(y);
        require_writable(y);
        if (y.type != dtype::u8 || y.size() != x.size() / 32 * 34)
          throw py::value_error("out: expected uint8 [..., D/32, 34]");
        auto* out = static_cast<block_q8_0*>(y.data);
        const std::ptrdiff_t rows = x.size() / std::max<std::ptrdiff_t>(D, 1);
        for (std::ptrdiff_t r = 0; r < rows; ++r)
          posenc::kernels::quantize_row_q8_0(static_cast<const float*>(x.data) + r * D, out + r * (D / 32), D);
      },
      "x"_a, "out"_a);
  m.def(
      "_dequantize_q8_0",
      [](py::handle yo, py::handle xo) {
        const array_ref y = get_array(yo, "blocks"), x = get_array(xo, "out");
        require_contiguous(y);
        require_contiguous(x);
        require_dtype(x, {dtype::f32});
        if (y.type != dtype::u8 || x.size() != y.size() / 34 * 32)
          throw py::value_error("blocks: expected uint8 [..., n, 34]");
        const auto* in = static_cast<const block_q8_0*>(y.data);
        const std::ptrdiff_t n = x.size();
        posenc::kernels::dequantize_row_q8_0(in, static_cast<float*>(x.data), n);
      },
      "blocks"_a, "out"_a);
}

}  // namespace pyposenc
