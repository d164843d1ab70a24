// SPDX-License-Identifier: BSD-3-Clause
// File's reads of arrays: into a DistArray (each rank its rows, any layout), into a
// ReplicatedArray (every device of every rank) and onto every rank's host (read_host_bytes).
#include <fmt/format.h>

#include <cstring>

#include "hdf5_impl.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace skein::hdf5 {

void File::read(const std::string& name_in, const DistArray& array) {
  skein::detail::TraceRange trace(trace_read());
  const std::string call = "hdf5::File::read";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  const BlockLayout& layout = array.layout();
  f.agree_on_call(
      call, fmt::format("read DistArray '{}' {} {} split {}", name, skein::name(array.dtype()),
                        shape_text(array.shape()), layout.describe()));
  std::exception_ptr failure;
  try {
    check_name(name, call);
    f.check_array_ranks(layout.ranks(), array.rank(), call);
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);

  Handle dataset;
  const DatasetInfo info = info_from_json(json::parse(f.on_file_ranks(call, [&] {
    dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
  if (info.dtype != array.dtype() || info.shape != array.shape()) {
    detail::raise_in(
        SKEIN_HERE, call,
        "Read into a DistArray of the dataset's global shape and dtype (File::info() gives them).",
        "dataset '{}' of HDF5 file '{}' is {} {}, but the array is {} {}", name, f.path,
        skein::name(info.dtype), shape_text(info.shape), skein::name(array.dtype()),
        shape_text(array.shape()));
  }
  Impl::RowPlan plan;
  plan.shape = array.shape();
  plan.dtype = array.dtype();
  for (int r = 0; r < f.size; ++r) plan.rank_rows.push_back(layout.rank_rows(r));
  const std::size_t row_bytes = layout.row_size() * itemsize(array.dtype());
  plan.store = [&](RowRange rows, std::span<const std::byte> src) {
    for (const auto& b : array.blocks()) {
      const std::size_t lo = std::max(rows.begin, b.rows.begin),
                        hi = std::min(rows.end, b.rows.end);
      if (lo >= hi) continue;
      b.interior.slice(lo - b.rows.begin, hi - b.rows.begin)
          .set(src.subspan((lo - rows.begin) * row_bytes, (hi - lo) * row_bytes));
    }
  };
  f.read_rows(dataset.get(), name, plan, call);
}

void File::read(const std::string& name, const ReplicatedArray& array) {
  const std::string call = "hdf5::File::read";
  const DatasetInfo info = this->info(name);
  if (info.dtype != array.dtype() || info.shape != array.shape()) {
    detail::raise_in(
        SKEIN_HERE, call,
        "Read into a ReplicatedArray of the dataset's shape and dtype (File::info() gives them).",
        "dataset '{}' of HDF5 file '{}' is {} {}, but the array is {} {}", name, path(),
        skein::name(info.dtype), shape_text(info.shape), skein::name(array.dtype()),
        shape_text(array.shape()));
  }
  const std::vector<std::byte> host = read_host_bytes_as(name, array.dtype());
  array.set(std::span<const std::byte>(host));
}

std::vector<std::byte> File::read_host_bytes(const std::string& name) {
  return read_host_bytes_as(name, std::nullopt);
}

std::vector<std::byte> File::read_host_bytes_as(const std::string& name_in,
                                                std::optional<Dtype> expected) {
  const std::string call = "hdf5::File::read_host";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("read host data '{}' as {}", name,
                                    expected ? skein::name(*expected) : "its dtype"));
  std::exception_ptr failure;
  try {
    check_name(name, call);
  } catch (...) {
    failure = std::current_exception();
  }
  f.share_failure(failure, call);
  Handle dataset;
  const DatasetInfo info = info_from_json(json::parse(f.on_file_ranks(call, [&] {
    dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
  if (expected && *expected != info.dtype) {
    detail::raise_in(SKEIN_HERE, call, "Read it as the dataset's dtype (File::info() gives it).",
                     "dataset '{}' of HDF5 file '{}' is {} {}, not {}", name, f.path,
                     skein::name(info.dtype), shape_text(info.shape), skein::name(*expected));
  }
  const std::size_t row_bytes = row_elements(info.shape) * itemsize(info.dtype);
  // Owned through `owner`: the broadcast below may time out with MPI still writing it.
  auto owner =
      std::make_shared<std::vector<std::byte>>(shape_size(info.shape) * itemsize(info.dtype));
  std::vector<std::byte>& out = *owner;
  // Every rank reads the whole dataset: on the parallel path each rank selects all rows (MPI-IO
  // reads them once and spreads them); through rank 0 rank 0 reads and the rows are broadcast.
  Impl::RowPlan plan;
  plan.shape = info.shape;
  plan.dtype = info.dtype;
  if (f.parallel) {
    plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{0, rows_of(info.shape)});
    plan.store = [&](RowRange rows, std::span<const std::byte> src) {
      std::memcpy(out.data() + rows.begin * row_bytes, src.data(), src.size());
    };
    f.read_rows(dataset.get(), name, plan, call);
    return std::move(out);
  }
  plan.rank_rows.assign(static_cast<std::size_t>(f.size), RowRange{});
  plan.rank_rows[0] = {0, rows_of(info.shape)};
  plan.store = [&](RowRange rows, std::span<const std::byte> src) {
    std::memcpy(out.data() + rows.begin * row_bytes, src.data(), src.size());
  };
  f.read_rows(dataset.get(), name, plan, call);
  f.agreement.broadcast_bytes(call, std::span(out), 0, owner);
  return std::move(out);
}

}  // namespace skein::hdf5

#endif
