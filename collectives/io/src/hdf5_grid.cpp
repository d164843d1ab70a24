// SPDX-License-Identifier: BSD-3-Clause
// HDF5 files of GridArrays (skein/hdf5.hpp's File::write / File::read of a GridArray).
//
// A GridArray's global array is one dataset of its layout's global_shape() (the points' axes, then
// the components axis when there is one), and each member's block is a box of it: the member's
// points along each axis, the components axis whole; halos are never written. Every rank moves the
// boxes of its own members with File's transfer loop (hdf5_transfer.hpp): each block's interior
// goes from its device to a contiguous host buffer (Array::get of the interior view, in pieces of
// at most FileOptions::max_bytes_per_call) and from there to its hyperslab of the dataset, and
// back when reading. With parallel HDF5 every rank writes and reads its own hyperslabs with
// collective MPI-IO transfers (a rank whose members own no points takes part with an empty
// selection; several members of a rank move in successive rounds); with serial HDF5 the pieces
// travel through rank 0, one at a time. The calls share File's agreement between ranks, error
// sharing, dataset creation (chunks of whole rows along the first axis, the Fletcher32 checksum,
// shuffle and deflate as WriteOptions says: parallel HDF5 writes filtered datasets with these
// collective transfers), and attributes (skein_layout holds GridLayout::describe()).
#include <fmt/format.h>

#include "hdf5_impl.hpp"
#include "skein/grid_array.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace skein::hdf5 {

namespace {

// The boxes of every rank's members with points (in local order), as a BoxPlan without callbacks,
// and this rank's blocks in the same order.
File::Impl::BoxPlan grid_plan(const GridArray& array, std::vector<const LocalGridBlock*>& local) {
  const GridLayout& layout = array.layout();
  File::Impl::BoxPlan plan;
  plan.shape = layout.global_shape();
  plan.dtype = array.dtype();
  const bool components = plan.shape.size() > layout.ndim();
  for (int r = 0; r < layout.ranks(); ++r) {
    std::vector<Box> boxes;
    for (std::size_t l = 0; l < layout.members_of_rank(r); ++l) {
      const std::size_t member = layout.member_of(r, l);
      const GridBlock block = layout.block(member);
      if (block.empty()) continue;
      Box box{block.offset, block.extent};
      if (components) {
        box.offset.push_back(0);
        box.extent.push_back(layout.components());
      }
      boxes.push_back(std::move(box));
      if (r == array.rank()) {
        for (const auto& b : array.blocks()) {
          if (b.member == member) local.push_back(&b);
        }
      }
    }
    plan.rank_boxes.push_back(std::move(boxes));
  }
  return plan;
}

// Planes [begin, end) of a piece along its block's first axis: the rows of its interior view.
Array piece_view(const LocalGridBlock& b, const Box& part) {
  const std::size_t begin = part.offset[0] - b.block.offset[0];
  return b.interior.slice(begin, begin + part.extent[0]);
}

// The checks every rank makes before a GridArray's transfer (shared: all raise, or none).
void check_grid_call(File::Impl& f, const GridArray& array, const std::string& name,
                     const std::string& call, const WriteOptions* options) {
  std::exception_ptr failure;
  try {
    check_name(name, call);
    if (options) {
      check_write_options(*options, call);
      f.check_writable(call);
    }
    f.check_array_ranks(array.layout().ranks(), array.rank(), call);
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
}

}  // namespace

void File::write(const std::string& name_in, const GridArray& array, const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  const GridLayout& layout = array.layout();
  f.agree_on_call(call, fmt::format("write GridArray '{}' {} {} over {} ({})", name,
                                    skein::name(array.dtype()), shape_text(layout.global_shape()),
                                    layout.describe(), describe_options(options)));
  check_grid_call(f, array, name, call, &options);
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, layout.global_shape(), array.dtype(), options,
                           {{"skein_layout", layout.describe()}}, call);
    return std::string();
  });
  std::vector<const LocalGridBlock*> local;
  Impl::BoxPlan plan = grid_plan(array, local);
  plan.fetch = [&](std::size_t box, const Box& part, std::span<std::byte> dest) {
    piece_view(*local[box], part).get(dest);
  };
  f.write_boxes(dataset.get(), name, plan, call);
}

void File::read(const std::string& name_in, const GridArray& array) {
  skein::detail::TraceRange trace(trace_read());
  const std::string call = "hdf5::File::read";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  const GridLayout& layout = array.layout();
  f.agree_on_call(call,
                  fmt::format("read GridArray '{}' {} {} over {}", name, skein::name(array.dtype()),
                              shape_text(layout.global_shape()), layout.describe()));
  check_grid_call(f, array, name, call, nullptr);
  Handle dataset;
  const DatasetInfo found = info_from_json(json::parse(f.on_file_ranks(call, [&] {
    dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
  // The same verdict on every rank: the info came from the file ranks to all.
  if (found.shape != layout.global_shape() || found.dtype != array.dtype()) {
    detail::raise_in(
        SKEIN_HERE, call,
        "Read it into a GridArray of the dataset's global shape and dtype (any process grid).",
        "dataset '{}' of HDF5 file '{}' is {} {}, the GridArray {} {}", name, f.path,
        skein::name(found.dtype), shape_text(found.shape), skein::name(array.dtype()),
        shape_text(layout.global_shape()));
  }
  std::vector<const LocalGridBlock*> local;
  Impl::BoxPlan plan = grid_plan(array, local);
  plan.store = [&](std::size_t box, const Box& part, std::span<const std::byte> src) {
    piece_view(*local[box], part).set(src);
  };
  f.read_boxes(dataset.get(), name, plan, call);
}

}  // namespace skein::hdf5

#endif
