// SPDX-License-Identifier: BSD-3-Clause
// File's writes of arrays: a DistArray (each rank its rows), a ReplicatedArray (rank 0's first
// device) and host data of one rank (write_host). Each agrees on the call, shares the checks'
// failures, creates the dataset on the file ranks and moves the rows (hdf5_transfer_*.cpp).
#include <fmt/format.h>

#include <cstring>

#include "hdf5_impl.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace skein::hdf5 {

void File::write(const std::string& name_in, const DistArray& array, const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  const BlockLayout& layout = array.layout();
  f.agree_on_call(call, fmt::format("write DistArray '{}' {} {} split {} ({})", name,
                                    skein::name(array.dtype()), shape_text(array.shape()),
                                    layout.describe(), describe_options(options)));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    check_write_options(options, call);
    f.check_writable(call);
    f.check_array_ranks(layout.ranks(), array.rank(), call);
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);

  std::vector<std::int64_t> starts;
  for (std::size_t m = 0; m < layout.members(); ++m)
    starts.push_back(static_cast<std::int64_t>(layout.member_rows(m).begin));
  starts.push_back(static_cast<std::int64_t>(layout.rows()));
  const Attributes skein_attributes = {{"skein_layout", layout.describe()},
                                       {"skein_row_starts", starts}};
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, array.shape(), array.dtype(), options, skein_attributes, call);
    return std::string();
  });

  Impl::RowPlan plan;
  plan.shape = array.shape();
  plan.dtype = array.dtype();
  for (int r = 0; r < f.size; ++r) plan.rank_rows.push_back(layout.rank_rows(r));
  const std::size_t row_bytes = layout.row_size() * itemsize(array.dtype());
  plan.fetch = [&](RowRange rows, std::span<std::byte> dest) {
    for (const auto& b : array.blocks()) {
      const std::size_t lo = std::max(rows.begin, b.rows.begin),
                        hi = std::min(rows.end, b.rows.end);
      if (lo >= hi) continue;
      b.interior.slice(lo - b.rows.begin, hi - b.rows.begin)
          .get(dest.subspan((lo - rows.begin) * row_bytes, (hi - lo) * row_bytes));
    }
  };
  f.write_rows(dataset.get(), name, plan, call);
}

void File::write(const std::string& name_in, const ReplicatedArray& array,
                 const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(
      call, fmt::format("write ReplicatedArray '{}' {} {} ({})", name, skein::name(array.dtype()),
                        shape_text(array.shape()), describe_options(options)));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    check_write_options(options, call);
    f.check_writable(call);
    if (array.rank() != f.rank) {
      detail::raise_in(
          SKEIN_HERE, call, "Open the file over the array's communicator.",
          "this process is rank {} of the array's communicator but rank {} of the file's",
          array.rank(), f.rank);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, array.shape(), array.dtype(), options, {}, call);
    return std::string();
  });
  Impl::RowPlan plan;
  plan.shape = array.shape();
  plan.dtype = array.dtype();
  plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{});
  plan.rank_rows[0] = {0, rows_of(array.shape())};
  plan.fetch = [&](RowRange rows, std::span<std::byte> dest) {
    const Array local = array.local(0);
    if (local.ndim() == 0) {
      local.get(dest);
    } else {
      local.slice(rows.begin, rows.end).get(dest);
    }
  };
  f.write_rows(dataset.get(), name, plan, call);
}

void File::write_host(const std::string& name_in, std::span<const std::byte> data,
                      const std::optional<Shape>& shape_in, Dtype dtype, int root_rank,
                      const WriteOptions& options) {
  skein::detail::TraceRange trace(trace_write());
  const std::string call = "hdf5::File::write_host";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(
      call, fmt::format("write host data '{}' {} {} from rank {} ({})", name, skein::name(dtype),
                        shape_in ? shape_text(*shape_in) : "of the root's size", root_rank,
                        describe_options(options)));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    check_write_options(options, call);
    f.check_writable(call);
    if (root_rank < 0 || root_rank >= f.size) {
      detail::raise_in(SKEIN_HERE, call, "Pass a rank of the file's communicator as the root.",
                       "root rank {} does not exist (the file's communicator has {} ranks)",
                       root_rank, f.size);
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Shape shape;
  if (shape_in) {
    shape = *shape_in;
  } else {
    auto n =
        std::make_shared<std::uint64_t>(f.rank == root_rank ? data.size() / itemsize(dtype) : 0);
    f.agreement.broadcast_bytes(call, std::as_writable_bytes(std::span(n.get(), 1)), root_rank, n);
    shape = {static_cast<std::size_t>(*n)};
  }
  try {
    if (f.rank == root_rank && data.size() != shape_size(shape) * itemsize(dtype)) {
      detail::raise_in(
          SKEIN_HERE, call, "On the root rank, pass the whole array (shape_size(shape) elements).",
          "rank {} (the root): the host data has {} bytes, but shape {} of {} has {}", f.rank,
          data.size(), shape_text(shape), skein::name(dtype), shape_size(shape) * itemsize(dtype));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Handle dataset;
  f.on_file_ranks(call, [&] {
    dataset = make_dataset(f, name, shape, dtype, options, {}, call);
    return std::string();
  });
  Impl::RowPlan plan;
  plan.shape = shape;
  plan.dtype = dtype;
  plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{});
  plan.rank_rows[static_cast<std::size_t>(root_rank)] = {0, rows_of(shape)};
  const std::size_t row_bytes = row_elements(shape) * itemsize(dtype);
  plan.fetch = [&](RowRange rows, std::span<std::byte> dest) {
    std::memcpy(dest.data(), data.data() + rows.begin * row_bytes, rows.size() * row_bytes);
  };
  f.write_rows(dataset.get(), name, plan, call);
}

}  // namespace skein::hdf5

#endif
