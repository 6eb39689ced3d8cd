// python/src/vision.cpp — 2D/3D vision RoPE: posenc.VisionPositions (the (t, h, w) patch coordinates
// of vision tokens in each tower's order), the window and segment helpers of Qwen2.5-VL and the
// frame masks, and posenc.VisionRoPE, a q/k transform whose position of a token is its index into
// the coordinate table (rope/vision_rope.hpp), so attention, sdpa and their backwards take it as is.
#include <pybind11/numpy.h>

#include <posenc/rope/vision_positions.hpp>
#include <posenc/rope/vision_rope.hpp>

#include "binding.hpp"
#include "enums.hpp"

namespace pyposenc {

using namespace pybind11::literals;

namespace {

template <class T>
py::array_t<T> to_array(const std::vector<T>& v) {
  return py::array_t<T>(static_cast<py::ssize_t>(v.size()), v.data());
}

/// Grids as (t, h, w) triples: a list of triples or an int array [n, 3].
std::vector<posenc::vision_grid_thw> grids_from(py::handle obj) {
  const std::vector<std::int64_t> v = int_vector(obj, "grid_thw");
  if (v.empty() || v.size() % 3 != 0)
    throw py::value_error("grid_thw: expected (t, h, w) triples, [n, 3], got " + std::to_string(v.size()) +
                          " integers");
  std::vector<posenc::vision_grid_thw> g(v.size() / 3);
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
  return g;
}

posenc::vision_rope_convention parse_convention(const std::string& v) {
  return parse_choice<posenc::vision_rope_convention>(
      v, "vision_rope.convention",
      {{"pixtral", posenc::vision_rope_convention::pixtral},
       {"qwen_vl", posenc::vision_rope_convention::qwen_vl},
       {"llama4", posenc::vision_rope_convention::llama4},
       {"minimax_m3_vl", posenc::vision_rope_convention::minimax_m3_vl}});
}

const char* convention_name(posenc::vision_rope_convention c) {
  switch (c) {
    case posenc::vision_rope_convention::pixtral:
      return "pixtral";
    case posenc::vision_rope_convention::qwen_vl:
      return "qwen_vl";
    case posenc::vision_rope_convention::llama4:
      return "llama4";
    case posenc::vision_rope_convention::minimax_m3_vl:
      return "minimax_m3_vl";
  }
  return "?";
}

void bind_positions(py::module_& m) {
  using P = posenc::vision_positions;
  py::class_<P>(m, "VisionPositions",
                "The (t, h, w) grid coordinates of vision tokens in sequence order (frame, row, column in patches), "
                "and which tokens are not rotated (Llama 4's class token).")
      .def(py::init([](py::handle t, py::handle h, py::handle w, py::handle unrotated) {
             P p{int_vector(t, "t"), int_vector(h, "h"), int_vector(w, "w"), {}};
             if (!unrotated.is_none())
               for (const std::int64_t x : int_vector(unrotated, "unrotated"))
                 p.unrotated.push_back(static_cast<unsigned char>(x != 0));
             p.validate();
             return p;
           }),
           "t"_a, "h"_a, "w"_a, "unrotated"_a = py::none())
      .def_static(
          "raster", [](py::handle g) { return posenc::vision_raster_positions(grids_from(g)); }, "grid_thw"_a,
          "Frame by frame, row by row (Pixtral), grid after grid.")
      .def_static(
          "merged",
          [](py::handle g, std::int64_t merge_size) {
            return posenc::vision_merged_positions(grids_from(g), merge_size);
          },
          "grid_thw"_a, "spatial_merge_size"_a,
          "Frame by frame, the merge blocks row by row, each block row by row (HF get_vision_position_ids: Qwen2-VL, "
          "2.5-VL, 3-VL, MiniMax-M3-VL).")
      .def_static("llama4", &posenc::llama4_vision_positions, "patches_per_side"_a,
                  "Llama 4's tile: side x side patches in raster order, then the class token (not rotated).")
      .def(
          "permute_merge_units",
          [](const P& p, py::handle order, std::int64_t merge_size) {
            return posenc::permute_merge_units(p, int_vector(order, "unit_order"), merge_size);
          },
          "unit_order"_a, "spatial_merge_size"_a,
          "The tokens regrouped by merge unit in unit_order (Qwen2.5-VL's window_index).")
      .def("__len__", [](const P& p) { return p.size(); })
      .def_property_readonly("t", [](const P& p) { return to_array(p.t); })
      .def_property_readonly("h", [](const P& p) { return to_array(p.h); })
      .def_property_readonly("w", [](const P& p) { return to_array(p.w); })
      .def_property_readonly("unrotated", [](const P& p) -> py::object {
        if (p.unrotated.empty()) return py::none();
        py::array_t<bool> out(static_cast<py::ssize_t>(p.unrotated.size()));
        for (std::size_t i = 0; i < p.unrotated.size(); ++i) out.mutable_data()[i] = p.unrotated[i] != 0;
        return py::object(out);
      });

  m.def(
      "vision_window_index",
      [](py::handle g, std::int64_t merge_size, std::int64_t window_size, std::int64_t patch_size) {
        const posenc::vision_windows w =
            posenc::vision_window_index(grids_from(g), merge_size, window_size, patch_size);
        return py::make_tuple(to_array(w.unit_order), to_array(w.offsets));
      },
      "grid_thw"_a, "spatial_merge_size"_a, "window_size"_a, "patch_size"_a,
      "Qwen2.5-VL's windows (HF get_vision_window_index): (unit_order, token offsets of the windows from 0).");
  m.def(
      "vision_segments",
      [](py::handle offsets) { return to_array(posenc::vision_segments(int_vector(offsets, "offsets"))); }, "offsets"_a,
      "Segment ids (int32) from boundaries: the query_segments / key_segments of a block-diagonal mask.");
  m.def(
      "vision_frame_offsets", [](py::handle g) { return to_array(posenc::vision_frame_offsets(grids_from(g))); },
      "grid_thw"_a, "The token offsets of every frame of every grid (each frame attends to itself).");
}

}  // namespace

void init_vision(py::module_& m) {
  bind_positions(m);
  using V = py_enc<posenc::vision_rope_bound>;
  py::class_<V, py_encoder, std::shared_ptr<V>>(
      m, "VisionRoPE",
      "2D/3D RoPE of vision towers: each rotation pair turns by one grid coordinate of its token. convention "
      "'pixtral', 'qwen_vl' (Qwen2-VL, 2.5-VL, 3-VL), 'llama4' or 'minimax_m3_vl' (t, h, w). The positions a call "
      "passes (default 0 .. S - 1) index the bound VisionPositions table.")
      .def(py::init([](const posenc::vision_positions& positions, std::ptrdiff_t head_dim,
                       const std::string& convention, double theta, const std::string& angles) {
             const posenc::vision_rope r({.head_dim = head_dim,
                                          .theta = theta,
                                          .convention = parse_convention(convention),
                                          .angles = parse_angle_mode(angles)});
             posenc::vision_rope_bound b = r.bind(positions);
             auto e = std::make_shared<V>(b);
             e->transforms.push_back(std::make_shared<const transform_impl<posenc::vision_rope_bound>>(std::move(b)));
             e->finish();
             return e;
           }),
           "positions"_a, py::kw_only(), "head_dim"_a, "convention"_a = "qwen_vl", "theta"_a = 10000.0,
           "angles"_a = "exact")
      .def_property_readonly("convention",
                             [](const V& e) { return convention_name(e.value.encoder().config().convention); })
      .def_property_readonly("theta", [](const V& e) { return e.value.encoder().config().theta; })
      .def_property_readonly("rotary_dim", [](const V& e) { return e.value.encoder().rotary_dim(); })
      .def_property_readonly(
          "inv_freq",
          [](const V& e) {
            const auto f = e.value.encoder().inv_freq();
            return py::array_t<double>(static_cast<py::ssize_t>(f.size()), f.data());
          },
          "The frequency of each pair (rad per patch).")
      .def_property_readonly(
          "pair_axes",
          [](const V& e) {
            const auto a = e.value.encoder().pair_axes();
            return py::array_t<std::uint8_t>(static_cast<py::ssize_t>(a.size()), a.data());
          },
          "The coordinate each pair follows: 0 = t, 1 = h, 2 = w.")
      .def_property_readonly("position_offset", [](const V& e) { return e.value.encoder().position_offset(); })
      .def_property_readonly("positions", [](const V& e) { return e.value.positions(); });
}

}  // namespace pyposenc
