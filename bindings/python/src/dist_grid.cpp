// SPDX-License-Identifier: BSD-3-Clause
// skein.GridLayout and skein.GridArray: a global 1-, 2- or 3-D array (and a trailing components
// axis) split over a process grid of a Communicator's members, with halos on every side and
// boundaries (open, periodic, reflect, constant); skein.exchange_halos and skein.redistribute.
//
// Axis order: Skein's grids are C-ordered (the last axis varies fastest). order='F' takes every
// per-axis value in Fortran's order instead (shape, grid, sizes, halo, lower, upper reversed), as
// the C API's SKEIN_ORDER_FORTRAN does, and the calls that report per-axis values or move host
// arrays take an order too: a Fortran-ordered NumPy array of the reversed shape is the same memory
// as the C-ordered global array.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dist_common.hpp"
#include "skein/grid_array.hpp"
#include "skein/grid_layout.hpp"

namespace skein::python {

namespace {

bool is_fortran(const std::string& order, const char* call) {
  if (order == "C") return false;
  if (order == "F") return true;
  raise_argument(call, "order '" + order + "' is not 'C' or 'F'", "Give order='C' or order='F'.");
}

template <class T>
std::vector<T> in_order(std::vector<T> v, bool fortran) {
  if (fortran) std::reverse(v.begin(), v.end());
  return v;
}

py::tuple tuple_in_order(std::vector<std::size_t> v, bool fortran) {
  return to_tuple(in_order(std::move(v), fortran));
}

Boundary to_boundary(const py::handle& obj, const char* call) {
  if (py::isinstance<Boundary>(obj)) return obj.cast<Boundary>();
  if (py::isinstance<py::str>(obj)) {
    const auto s = obj.cast<std::string>();
    if (s == "open") return Boundary::open();
    if (s == "periodic") return Boundary::periodic();
    if (s == "reflect") return Boundary::reflect();
  } else if (py::isinstance<py::int_>(obj) || py::isinstance<py::float_>(obj)) {
    return Boundary::constant(obj.cast<double>());
  }
  raise_argument(call, "boundary " + py::repr(obj).cast<std::string>() + " is not one Skein has",
                 "Give 'open', 'periodic', 'reflect', a number (a constant value) or a "
                 "skein.Boundary.");
}

// One boundary for every axis, or a list of one per axis.
std::vector<Boundary> to_boundaries(const py::object& obj, bool fortran, const char* call) {
  if (obj.is_none()) return {};
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    std::vector<Boundary> out;
    for (const auto item : obj.cast<py::sequence>()) out.push_back(to_boundary(item, call));
    return in_order(std::move(out), fortran);
  }
  return {to_boundary(obj, call)};
}

std::vector<std::size_t> to_sizes(const py::object& obj, bool fortran) {
  if (obj.is_none()) return {};
  if (py::isinstance<py::int_>(obj)) return {obj.cast<std::size_t>()};
  return in_order(obj.cast<std::vector<std::size_t>>(), fortran);
}

struct GridArgs {
  py::object grid = py::none(), sizes = py::none();
  std::size_t components = 1;
  py::object halo = py::none();
  std::string stencil = "star";
  py::object lower = py::none(), upper = py::none();
  std::string order = "C";
};

// The layout's shape and options from Python's keyword arguments (in the caller's order).
std::pair<Shape, GridOptions> grid_options(const py::object& shape, const GridArgs& a,
                                           const char* call) {
  const bool fortran = is_fortran(a.order, call);
  GridOptions o;
  o.grid = to_sizes(a.grid, fortran);
  if (!a.sizes.is_none()) {
    o.sizes = in_order(a.sizes.cast<std::vector<std::vector<std::size_t>>>(), fortran);
  }
  o.components = a.components;
  o.halo = to_sizes(a.halo, fortran);
  if (a.stencil == "box") {
    o.stencil = Stencil::box;
  } else if (a.stencil != "star") {
    raise_argument(call, "stencil '" + a.stencil + "' is not 'star' or 'box'",
                   "Give stencil='star' (faces) or 'box' (faces, edges and corners).");
  }
  o.lower = to_boundaries(a.lower, fortran, call);
  o.upper = to_boundaries(a.upper, fortran, call);
  return {in_order(to_shape(shape, call), fortran), std::move(o)};
}

#define SKEIN_GRID_ARGS                                                                     \
  py::arg("grid") = py::none(), py::arg("sizes") = py::none(), py::arg("components") = 1,   \
  py::arg("halo") = py::none(), py::arg("stencil") = "star", py::arg("lower") = py::none(), \
  py::arg("upper") = py::none(), py::arg("order") = "C"

const char* const grid_args_doc =
    "grid: members along each axis (0 or None: chosen); sizes: points of each grid position "
    "per axis (None: even); components: values per point (a trailing axis, never split); halo: "
    "ghost cells per side (an int for every axis, or one per axis); stencil: 'star' or 'box'; "
    "lower/upper: the boundary below index 0 and above the last of each axis ('open', "
    "'periodic', 'reflect', a constant value; one for every axis or a list); order 'C' or 'F': "
    "the axis order of shape and of every per-axis value.";

void bind_boundary(py::module_& m) {
  py::class_<Boundary>(m, "Boundary", "What fills the halo beyond one side of the domain.")
      .def_static("open", &Boundary::open)
      .def_static("periodic", &Boundary::periodic)
      .def_static("reflect", &Boundary::reflect)
      .def_static("constant", &Boundary::constant, py::arg("value"))
      .def_property_readonly("kind",
                             [](const Boundary& b) {
                               switch (b.kind) {
                                 case BoundaryKind::periodic: return "periodic";
                                 case BoundaryKind::reflect: return "reflect";
                                 case BoundaryKind::constant: return "constant";
                                 case BoundaryKind::open: break;
                               }
                               return "open";
                             })
      .def_readonly("value", &Boundary::value)
      .def("__eq__", [](const Boundary& a, const Boundary& b) { return a == b; });
}

void bind_grid_layout(py::module_& m) {
  py::class_<GridLayout>(m, "GridLayout",
                         "Which member owns which block of a global 1-, 2- or 3-D shape, over a "
                         "process grid (C order: the last axis's members are neighbours).")
      .def(py::init([](const py::object& shape, std::vector<std::size_t> members_per_rank,
                       const py::object& grid, const py::object& sizes, std::size_t components,
                       const py::object& halo, const std::string& stencil, const py::object& lower,
                       const py::object& upper, const std::string& order) {
             auto [s, o] =
                 grid_options(shape, {grid, sizes, components, halo, stencil, lower, upper, order},
                              "GridLayout");
             return GridLayout(std::move(s), std::move(members_per_rank), o);
           }),
           py::arg("shape"), py::arg("members_per_rank"), py::kw_only(), SKEIN_GRID_ARGS,
           grid_args_doc)
      .def_static(
          "over",
          [](Communicator& comm, const py::object& shape, const py::object& grid,
             const py::object& sizes, std::size_t components, const py::object& halo,
             const std::string& stencil, const py::object& lower, const py::object& upper,
             const std::string& order) {
            auto [s, o] =
                grid_options(shape, {grid, sizes, components, halo, stencil, lower, upper, order},
                             "GridLayout.over");
            const py::gil_scoped_release release;
            return GridLayout::over(comm, std::move(s), o);
          },
          py::arg("comm"), py::arg("shape"), py::kw_only(), SKEIN_GRID_ARGS,
          "The layout over the members of `comm` (collective).")
      .def_static("choose_grid", &GridLayout::choose_grid, py::arg("members"), py::arg("shape"),
                  py::arg("given") = std::vector<std::size_t>{},
                  "The process grid chosen for `members` over `shape` (C order).")
      .def(
          "global_shape",
          [](const GridLayout& l, const std::string& order) {
            return tuple_in_order(l.global_shape(), is_fortran(order, "GridLayout.global_shape"));
          },
          py::arg("order") = "C", "The full array's shape: the points' axes, then components.")
      .def_property_readonly("shape", [](const GridLayout& l) { return to_tuple(l.shape()); })
      .def_property_readonly("ndim", &GridLayout::ndim)
      .def_property_readonly("components", &GridLayout::components)
      .def_property_readonly("points", &GridLayout::points)
      .def_property_readonly("size", &GridLayout::size)
      .def(
          "process_grid",
          [](const GridLayout& l, const std::string& order) {
            return tuple_in_order(l.grid(), is_fortran(order, "GridLayout.process_grid"));
          },
          py::arg("order") = "C", "Members along each axis.")
      .def("sizes", &GridLayout::sizes, py::arg("axis"), "Points of each grid position (C axis).")
      .def_property_readonly(
          "halo", [](const GridLayout& l) { return to_tuple(l.halo()); }, "Per axis, C order.")
      .def_property_readonly(
          "stencil",
          [](const GridLayout& l) { return l.stencil() == Stencil::box ? "box" : "star"; })
      .def("lower", &GridLayout::lower, py::arg("axis"))
      .def("upper", &GridLayout::upper, py::arg("axis"))
      .def("periodic", &GridLayout::periodic, py::arg("axis"))
      .def_property_readonly("members", &GridLayout::members)
      .def_property_readonly("ranks", &GridLayout::ranks)
      .def_property_readonly("members_per_rank", &GridLayout::members_per_rank)
      .def("coords", &GridLayout::coords, py::arg("member"), "A member's grid position (C order).")
      .def(
          "member_at",
          [](const GridLayout& l, std::vector<std::size_t> coords) { return l.member_at(coords); },
          py::arg("coords"))
      .def(
          "block",
          [](const GridLayout& l, std::size_t member, const std::string& order) {
            const bool f = is_fortran(order, "GridLayout.block");
            const GridBlock b = l.block(member);
            return py::make_tuple(tuple_in_order(b.offset, f), tuple_in_order(b.extent, f));
          },
          py::arg("member"), py::arg("order") = "C",
          "(offset, extent) of a member's block, per axis.")
      .def(
          "owner",
          [](const GridLayout& l, std::vector<std::size_t> point) { return l.owner(point); },
          py::arg("point"), "The member owning a global point (C order).")
      .def(
          "block_shape",
          [](const GridLayout& l, std::size_t member, bool with_halo) {
            return to_tuple(l.block_shape(member, with_halo));
          },
          py::arg("member"), py::arg("with_halo") = false)
      .def("neighbour", &GridLayout::neighbour, py::arg("member"), py::arg("axis"), py::arg("side"),
           "The neighbour on side -1 or +1 along a (C) axis; -1 when none.")
      .def("describe", &GridLayout::describe)
      .def("__eq__", [](const GridLayout& a, const GridLayout& b) { return a == b; })
      .def("__repr__",
           [](const GridLayout& l) { return "<skein.GridLayout " + l.describe() + ">"; });
}

GridArray make_grid_array(Communicator& comm, const py::object& shape_or_layout,
                          const py::object& dtype, const py::object& queue, const GridArgs& args) {
  const char* call = "GridArray";
  const Dtype d = to_dtype(dtype, call);
  const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
  if (py::isinstance<GridLayout>(shape_or_layout)) {
    const auto layout = shape_or_layout.cast<GridLayout>();
    const py::gil_scoped_release release;
    return q == nullptr ? GridArray(comm, layout, d) : GridArray(comm, *q, layout, d);
  }
  auto [s, o] = grid_options(shape_or_layout, args, call);
  const py::gil_scoped_release release;
  GridLayout layout = GridLayout::over(comm, std::move(s), o);
  return q == nullptr ? GridArray(comm, std::move(layout), d)
                      : GridArray(comm, *q, std::move(layout), d);
}

void bind_grid_array(py::module_& m) {
  py::class_<GridArray>(m, "GridArray",
                        "A global 1-, 2- or 3-D array over a process grid: one block per local "
                        "device, each framed by its halo (C order, components last).")
      .def(py::init([](Communicator& comm, const py::object& shape, const py::object& dtype,
                       const py::object& queue, const py::object& grid, const py::object& sizes,
                       std::size_t components, const py::object& halo, const std::string& stencil,
                       const py::object& lower, const py::object& upper, const std::string& order) {
             return make_grid_array(comm, shape, dtype, queue,
                                    {grid, sizes, components, halo, stencil, lower, upper, order});
           }),
           py::arg("comm"), py::arg("shape"), py::arg("dtype"), py::kw_only(),
           py::arg("queue") = py::none(), SKEIN_GRID_ARGS, py::keep_alive<1, 2>(),
           (std::string("Collective. shape: the points' global shape, or a skein.GridLayout. "
                        "Blocks start as zeros. ") +
            grid_args_doc)
               .c_str())
      .def_property_readonly("communicator", &GridArray::communicator,
                             py::return_value_policy::reference_internal)
      .def_property_readonly("queue", &GridArray::queue)
      .def_property_readonly("layout", &GridArray::layout)
      .def_property_readonly("dtype", [](const GridArray& a) { return to_numpy(a.dtype()); })
      .def_property_readonly(
          "shape", [](const GridArray& a) { return to_tuple(a.layout().global_shape()); },
          "The global array's shape (C order, components last).")
      .def_property_readonly("size", &GridArray::size)
      .def_property_readonly("nbytes", &GridArray::nbytes)
      .def_property_readonly("rank", &GridArray::rank)
      .def_property_readonly("local_size", &GridArray::local_size)
      .def("local", &GridArray::local, py::arg("local_device") = 0,
           "A local block's points (a strided view without the halo).")
      .def("local_with_halo", &GridArray::local_with_halo, py::arg("local_device") = 0)
      .def(
          "local_block",
          [](const GridArray& a, std::size_t l, const std::string& order) {
            const bool f = is_fortran(order, "GridArray.local_block");
            const GridBlock& b = a.block(l).block;
            return py::make_tuple(tuple_in_order(b.offset, f), tuple_in_order(b.extent, f));
          },
          py::arg("local_device") = 0, py::arg("order") = "C",
          "(offset, extent) of a local block's points in the global array.")
      .def(
          "scatter",
          [](const GridArray& a, const py::object& host, int root, const std::string& order) {
            const bool f = is_fortran(order, "GridArray.scatter");
            py::array keep;
            std::string problem;
            // A Fortran-ordered array of the reversed shape is the C-ordered global array.
            const py::object source =
                f && !host.is_none() ? py::object(py::array::ensure(host).attr("T")) : host;
            const auto bytes = a.rank() == root
                                   ? root_host_bytes(source, a.dtype(), a.layout().global_shape(),
                                                     keep, problem, "GridArray.scatter")
                                   : std::span<const std::byte>();
            with_root_problem(problem, "GridArray.scatter", [&] {
              const py::gil_scoped_release release;
              a.scatter(bytes, root);
            });
          },
          py::arg("host"), py::arg("root") = 0, py::arg("order") = "C",
          "Collective: the root rank's NumPy array (the global array: global_shape(order)) to "
          "every block's points. Other ranks' `host` is not read (pass None).")
      .def(
          "gather",
          [](const GridArray& a, int root, const std::string& order) -> py::object {
            const bool f = is_fortran(order, "GridArray.gather");
            std::vector<std::byte> bytes;
            {
              const py::gil_scoped_release release;
              bytes = a.gather_bytes(root);
            }
            if (a.rank() != root) return py::none();
            py::object out = to_host_array(bytes, a.dtype(), a.layout().global_shape());
            return f ? py::object(out.attr("T")) : out;
          },
          py::arg("root") = 0, py::arg("order") = "C",
          "Collective: the global array as NumPy on the root rank (None elsewhere); order='F': "
          "a Fortran-ordered array of the reversed shape.")
      .def(
          "exchange_halos",
          [](const GridArray& a, const py::object& queue) {
            const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
            const py::gil_scoped_release release;
            if (q == nullptr) {
              a.exchange_halos();
            } else {
              a.exchange_halos(*q);
            }
          },
          py::arg("queue") = py::none(), "Collective: fills the halos as the layout says.")
      .def("fill_zero", &GridArray::fill_zero)
      .def("__repr__", [](const GridArray& a) {
        return "<skein.GridArray " + to_string(a.layout().global_shape()) + " " +
               std::string(name(a.dtype())) + " over grid " + to_string(a.layout().grid()) + ">";
      });
}

}  // namespace

void bind_dist_grid(py::module_& m) {
  bind_boundary(m);
  bind_grid_layout(m);
  bind_grid_array(m);
  m.def(
      "exchange_halos",
      [](const std::vector<GridArray>& arrays, const py::object& queue) {
        const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
        const py::gil_scoped_release release;
        if (q == nullptr) {
          exchange_halos(arrays);
        } else {
          exchange_halos(*q, arrays);
        }
      },
      py::arg("arrays"), py::arg("queue") = py::none(),
      "Collective: fills the halos of several GridArrays of one layout in one exchange.");
  m.def(
      "redistribute",
      [](const GridArray& from, const GridArray& to, const py::object& queue) {
        const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
        const py::gil_scoped_release release;
        if (q == nullptr) {
          redistribute(from, to);
        } else {
          redistribute(*q, from, to);
        }
      },
      py::arg("source"), py::arg("dest"), py::arg("queue") = py::none(),
      "Collective: `dest`'s points become `source`'s (the same global array, another layout).");
}

}  // namespace skein::python
