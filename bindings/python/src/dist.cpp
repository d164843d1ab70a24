// SPDX-License-Identifier: BSD-3-Clause
// skein.BlockLayout, skein.DistArray (a global 1-D or 2-D array in blocks of rows over a
// Communicator's members, with halo rows) and skein.ReplicatedArray (the same array on every
// member). Host data moves through NumPy arrays; collective calls release the GIL. The grid arrays
// are dist_grid.cpp's, the operations on them dist_ops.cpp's.
#include <string>
#include <utility>
#include <vector>

#include "dist_common.hpp"
#include "skein/dist_array.hpp"

namespace skein::python {

void bind_dist_grid(py::module_& m);  // dist_grid.cpp
void bind_dist_ops(py::module_& m);   // dist_ops.cpp

namespace {

RowSplit to_split(const py::object& counts, const py::object& weights, const char* call) {
  if (!counts.is_none() && !weights.is_none()) {
    raise_argument(call, "both counts and weights are given", "Give one of them (or neither).");
  }
  if (!counts.is_none()) return RowSplit::counts(counts.cast<std::vector<std::size_t>>());
  if (!weights.is_none()) return RowSplit::weights(weights.cast<std::vector<double>>());
  return RowSplit::even();
}

py::tuple rows_tuple(RowRange r) { return py::make_tuple(r.begin, r.end); }

Shape local_rows_shape(const DistArray& a) {
  Shape s = a.shape();
  s[0] = a.rank_rows().size();
  return s;
}

void bind_block_layout(py::module_& m) {
  py::class_<BlockLayout>(m, "BlockLayout",
                          "Which member owns which rows of a global 1-D or 2-D shape (blocks of "
                          "consecutive rows, in member order; a member may own none).")
      .def(py::init([](const py::object& shape, std::vector<std::size_t> members_per_rank,
                       const py::object& counts, const py::object& weights, std::size_t halo,
                       bool periodic) {
             return BlockLayout(to_shape(shape, "BlockLayout"), std::move(members_per_rank),
                                to_split(counts, weights, "BlockLayout"), Halo{halo, periodic});
           }),
           py::arg("shape"), py::arg("members_per_rank"), py::kw_only(),
           py::arg("counts") = py::none(), py::arg("weights") = py::none(), py::arg("halo") = 0,
           py::arg("periodic") = false,
           "members_per_rank[r]: the devices of rank r. counts: rows per member; weights: rows "
           "in proportion; neither: even blocks. halo: ghost rows above and below each block.")
      .def_static(
          "over",
          [](Communicator& comm, const py::object& shape, const py::object& counts,
             const py::object& weights, std::size_t halo, bool periodic) {
            const Shape s = to_shape(shape, "BlockLayout.over");
            const RowSplit split = to_split(counts, weights, "BlockLayout.over");
            const py::gil_scoped_release release;
            return BlockLayout::over(comm, s, split, Halo{halo, periodic});
          },
          py::arg("comm"), py::arg("shape"), py::kw_only(), py::arg("counts") = py::none(),
          py::arg("weights") = py::none(), py::arg("halo") = 0, py::arg("periodic") = false,
          "The layout over the members of `comm` (collective).")
      .def_property_readonly("shape", [](const BlockLayout& l) { return to_tuple(l.shape()); })
      .def_property_readonly("ndim", &BlockLayout::ndim)
      .def_property_readonly("rows", &BlockLayout::rows)
      .def_property_readonly("row_size", &BlockLayout::row_size)
      .def_property_readonly("halo", [](const BlockLayout& l) { return l.halo().width; })
      .def_property_readonly("periodic", [](const BlockLayout& l) { return l.halo().periodic; })
      .def_property_readonly("members", &BlockLayout::members)
      .def_property_readonly("ranks", &BlockLayout::ranks)
      .def_property_readonly("members_per_rank", &BlockLayout::members_per_rank)
      .def(
          "member_rows",
          [](const BlockLayout& l, std::size_t m) { return rows_tuple(l.member_rows(m)); },
          py::arg("member"), "The (begin, end) rows of a member's block.")
      .def(
          "rank_rows", [](const BlockLayout& l, int r) { return rows_tuple(l.rank_rows(r)); },
          py::arg("rank"), "The (begin, end) rows of all of a rank's members together.")
      .def(
          "block_shape",
          [](const BlockLayout& l, std::size_t m, bool with_halo) {
            return to_tuple(l.block_shape(m, with_halo));
          },
          py::arg("member"), py::arg("with_halo") = false)
      .def(
          "location",
          [](const BlockLayout& l, std::size_t m) {
            const MemberLocation loc = l.location(m);
            return py::make_tuple(loc.member, loc.rank, loc.local_device);
          },
          py::arg("member"), "(member, rank, local_device) of a member.")
      .def(
          "owner", [](const BlockLayout& l, std::size_t row) { return l.owner(row).member; },
          py::arg("row"), "The member owning a global row.")
      .def("prev_neighbour", &BlockLayout::prev_neighbour, py::arg("member"))
      .def("next_neighbour", &BlockLayout::next_neighbour, py::arg("member"))
      .def("describe", &BlockLayout::describe)
      .def("__eq__", [](const BlockLayout& a, const BlockLayout& b) { return a == b; })
      .def("__repr__",
           [](const BlockLayout& l) { return "<skein.BlockLayout " + l.describe() + ">"; });
}

DistArray make_dist_array(Communicator& comm, const py::object& shape_or_layout,
                          const py::object& dtype, const py::object& queue,
                          const py::object& counts, const py::object& weights, std::size_t halo,
                          bool periodic) {
  const char* call = "DistArray";
  const Dtype d = to_dtype(dtype, call);
  if (py::isinstance<BlockLayout>(shape_or_layout)) {
    if (!counts.is_none() || !weights.is_none() || halo != 0 || periodic) {
      raise_argument(call, "a layout and counts, weights, halo or periodic are given",
                     "The layout says how the rows are split: give it alone, or a shape.");
    }
    const auto layout = shape_or_layout.cast<BlockLayout>();
    const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
    const py::gil_scoped_release release;
    return q == nullptr ? DistArray(comm, layout, d) : DistArray(comm, *q, layout, d);
  }
  const Shape s = to_shape(shape_or_layout, call);
  const RowSplit split = to_split(counts, weights, call);
  const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
  const py::gil_scoped_release release;
  if (q == nullptr) return DistArray(comm, s, d, split, Halo{halo, periodic});
  return DistArray(comm, *q, BlockLayout::over(comm, s, split, Halo{halo, periodic}), d);
}

void bind_dist_array_host(py::class_<DistArray>& c) {
  c.def(
       "scatter",
       [](const DistArray& a, const py::object& host, int root) {
         py::array keep;
         std::string problem;
         const bool is_root = a.rank() == root;
         const auto bytes = is_root ? root_host_bytes(host, a.dtype(), a.shape(), keep, problem,
                                                      "DistArray.scatter")
                                    : std::span<const std::byte>();
         with_root_problem(problem, "DistArray.scatter", [&] {
           const py::gil_scoped_release release;
           a.scatter(bytes, root);
         });
       },
       py::arg("host"), py::arg("root") = 0,
       "Collective: the root rank's NumPy array (the whole global array) to every block. Other "
       "ranks' `host` is not read (pass None).")
      .def(
          "gather",
          [](const DistArray& a, int root) -> py::object {
            std::vector<std::byte> bytes;
            {
              const py::gil_scoped_release release;
              bytes = a.gather_bytes(root);
            }
            if (a.rank() != root) return py::none();
            return to_host_array(bytes, a.dtype(), a.shape());
          },
          py::arg("root") = 0,
          "Collective: the whole global array as a NumPy array on the root rank (None on the "
          "others).")
      .def(
          "all_gather",
          [](const DistArray& a) {
            std::vector<std::byte> bytes;
            {
              const py::gil_scoped_release release;
              bytes = a.all_gather_bytes();
            }
            return to_host_array(bytes, a.dtype(), a.shape());
          },
          "Collective: the whole global array as a NumPy array on every rank.")
      .def(
          "scatter_local",
          [](const DistArray& a, const py::object& host) {
            py::array keep;
            std::string problem;
            const auto bytes = root_host_bytes(host, a.dtype(), local_rows_shape(a), keep, problem,
                                               "DistArray.scatter_local");
            if (!problem.empty()) {
              raise_argument("DistArray.scatter_local",
                             "the host array must be this rank's rows " +
                                 to_string(local_rows_shape(a)) + " " +
                                 std::string(name(a.dtype())) + "; " + problem,
                             "Pass host[begin:end] for (begin, end) = array.rank_rows.");
            }
            const py::gil_scoped_release release;
            a.scatter_local(bytes);
          },
          py::arg("host_rows"), "Not collective: this rank's rows (rank_rows) from the host.")
      .def(
          "gather_local",
          [](const DistArray& a) {
            std::vector<std::byte> bytes;
            {
              const py::gil_scoped_release release;
              bytes = a.gather_local_bytes();
            }
            return to_host_array(bytes, a.dtype(), local_rows_shape(a));
          },
          "Not collective: this rank's rows (rank_rows) as a NumPy array.");
}

void bind_dist_array(py::module_& m) {
  py::class_<DistArray> c(m, "DistArray",
                          "A global 1-D or 2-D array in blocks of rows over a Communicator's "
                          "members (one skein.Array per local device), with optional halo rows.");
  c.def(py::init(&make_dist_array), py::arg("comm"), py::arg("shape"), py::arg("dtype"),
        py::kw_only(), py::arg("queue") = py::none(), py::arg("counts") = py::none(),
        py::arg("weights") = py::none(), py::arg("halo") = 0, py::arg("periodic") = false,
        py::keep_alive<1, 2>(),
        "Collective. shape: the global shape, or a skein.BlockLayout (then no split options). "
        "Blocks start as zeros. queue: over the communicator's context (default: a new one).")
      .def_property_readonly("communicator", &DistArray::communicator,
                             py::return_value_policy::reference_internal)
      .def_property_readonly("queue", &DistArray::queue)
      .def_property_readonly("layout", &DistArray::layout)
      .def_property_readonly("dtype", [](const DistArray& a) { return to_numpy(a.dtype()); })
      .def_property_readonly("shape", [](const DistArray& a) { return to_tuple(a.shape()); })
      .def_property_readonly("size", &DistArray::size)
      .def_property_readonly("nbytes", &DistArray::nbytes)
      .def_property_readonly("rank", &DistArray::rank)
      .def_property_readonly("local_size", &DistArray::local_size)
      .def("local", &DistArray::local, py::arg("local_device") = 0,
           "A local device's block (its interior rows) as a skein.Array view.")
      .def("local_with_halo", &DistArray::local_with_halo, py::arg("local_device") = 0)
      .def(
          "local_rows",
          [](const DistArray& a, std::size_t l) { return rows_tuple(a.local_rows(l)); },
          py::arg("local_device") = 0, "The (begin, end) global rows of a local block.")
      .def_property_readonly("rank_rows",
                             [](const DistArray& a) { return rows_tuple(a.rank_rows()); })
      .def(
          "exchange_halos",
          [](const DistArray& a, const py::object& queue) {
            if (queue.is_none()) {
              const py::gil_scoped_release release;
              a.exchange_halos();
            } else {
              const Queue& q = queue.cast<const Queue&>();
              const py::gil_scoped_release release;
              a.exchange_halos(q);
            }
          },
          py::arg("queue") = py::none(),
          "Collective: fills every block's halo rows from its neighbours.")
      .def("set", &DistArray::set, py::arg("source"),
           "Not collective: device copy of every block from a DistArray of the same layout.")
      .def("fill_zero", &DistArray::fill_zero)
      .def("__repr__", [](const DistArray& a) {
        return "<skein.DistArray " + to_string(a.shape()) + " " + std::string(name(a.dtype())) +
               ", rank " + std::to_string(a.rank()) + " rows [" +
               std::to_string(a.rank_rows().begin) + ", " + std::to_string(a.rank_rows().end) +
               ")>";
      });
  bind_dist_array_host(c);
}

void bind_replicated_array(py::module_& m) {
  py::class_<ReplicatedArray>(m, "ReplicatedArray", "The same full array on every member's device.")
      .def(py::init([](Communicator& comm, const py::object& shape, const py::object& dtype,
                       const py::object& queue) {
             const Shape s = to_shape(shape, "ReplicatedArray");
             const Dtype d = to_dtype(dtype, "ReplicatedArray");
             const Queue* q = queue.is_none() ? nullptr : &queue.cast<const Queue&>();
             const py::gil_scoped_release release;
             return q == nullptr ? ReplicatedArray(comm, s, d) : ReplicatedArray(comm, *q, s, d);
           }),
           py::arg("comm"), py::arg("shape"), py::arg("dtype"), py::kw_only(),
           py::arg("queue") = py::none(), py::keep_alive<1, 2>(),
           "Collective: zeros of `shape` on every member.")
      .def_property_readonly("shape", [](const ReplicatedArray& a) { return to_tuple(a.shape()); })
      .def_property_readonly("dtype", [](const ReplicatedArray& a) { return to_numpy(a.dtype()); })
      .def_property_readonly("queue", &ReplicatedArray::queue)
      .def_property_readonly("local_size", &ReplicatedArray::local_size)
      .def("local", &ReplicatedArray::local, py::arg("local_device") = 0)
      .def(
          "set",
          [](const ReplicatedArray& a, const py::object& host) {
            py::array keep;
            std::string problem;
            const auto bytes =
                root_host_bytes(host, a.dtype(), a.shape(), keep, problem, "ReplicatedArray.set");
            if (!problem.empty()) raise_argument("ReplicatedArray.set", problem, "");
            const py::gil_scoped_release release;
            a.set(bytes);
          },
          py::arg("host"), "Not collective: this rank's host array to each of its devices.")
      .def(
          "broadcast_from_host",
          [](const ReplicatedArray& a, const py::object& host, int root) {
            py::array keep;
            std::string problem;
            const auto bytes = a.rank() == root
                                   ? root_host_bytes(host, a.dtype(), a.shape(), keep, problem,
                                                     "ReplicatedArray.broadcast_from_host")
                                   : std::span<const std::byte>();
            with_root_problem(problem, "ReplicatedArray.broadcast_from_host", [&] {
              const py::gil_scoped_release release;
              a.broadcast_from_host(bytes, root);
            });
          },
          py::arg("host"), py::arg("root") = 0,
          "Collective: the root rank's host array to every device of every rank.")
      .def(
          "broadcast",
          [](const ReplicatedArray& a, int root_member) {
            const py::gil_scoped_release release;
            a.broadcast(root_member);
          },
          py::arg("root_member") = 0)
      .def(
          "get",
          [](const ReplicatedArray& a, std::size_t local_device) {
            std::vector<std::byte> bytes;
            {
              const py::gil_scoped_release release;
              bytes = a.get_bytes(local_device);
            }
            return to_host_array(bytes, a.dtype(), a.shape());
          },
          py::arg("local_device") = 0, "Not collective: one local device's copy as NumPy.");
}

}  // namespace

void bind_dist(py::module_& m) {
  bind_block_layout(m);
  bind_dist_array(m);
  bind_replicated_array(m);
  bind_dist_grid(m);
  bind_dist_ops(m);
}

}  // namespace skein::python
