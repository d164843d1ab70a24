// SPDX-License-Identifier: BSD-3-Clause
// Datasets: creating one (shape, type, chunks and filters: the Fletcher32 checksum, shuffle and
// deflate; Skein's attributes), finding and describing them (DatasetInfo, also as JSON between
// ranks), the checks of names and write options, and File::info, exists and datasets.
#include <fmt/format.h>

#include "skein/hdf5.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>

#include "hdf5_impl.hpp"
#endif

namespace skein::hdf5 {

std::string DatasetInfo::describe() const {
  std::string text = fmt::format("{}: {} {}", name, skein::name(dtype), skein::to_string(shape));
  if (chunk_rows > 0) text += fmt::format(", chunks of {} rows", chunk_rows);
  if (compression > 0) text += fmt::format(", deflate {}", compression);
  if (checksum) text += ", fletcher32";
  if (step) text += fmt::format(", step {}", *step);
  if (time) text += fmt::format(", time {}", *time);
  return text;
}

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

// Whether `name` exists as a link (each group along the path first: H5Lexists fails on a
// missing intermediate group).
bool File::Impl::link_exists(const std::string& name) const {
  std::string prefix;
  std::size_t pos = 0;
  const std::string n = name.front() == '/' ? name.substr(1) : name;
  while (true) {
    const std::size_t slash = n.find('/', pos);
    prefix = n.substr(0, slash);
    if (SKEIN_H5_CHECK(H5Lexists, (file.get(), prefix.c_str(), H5P_DEFAULT),
                       fmt::format("looking up '{}' in HDF5 file '{}'", prefix, path)) <= 0) {
      return false;
    }
    if (slash == std::string::npos) return true;
    pos = slash + 1;
  }
}

bool File::Impl::is_dataset(const std::string& name) const {
  if (!link_exists(name)) return false;
  const hid_t object = H5Oopen(file.get(), name.c_str(), H5P_DEFAULT);
  if (object < 0) {
    H5Eclear2(H5E_DEFAULT);  // a dangling soft or external link
    return false;
  }
  const bool dataset = H5Iget_type(object) == H5I_DATASET;
  H5Oclose(object);
  return dataset;
}

// Opens dataset `name` (LogicError naming the file's datasets when there is none).
Handle File::Impl::open_dataset(const std::string& name, const std::string& call) const {
  if (!is_dataset(name)) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass the name of a dataset of the file (File::datasets() lists them).",
                     "HDF5 file '{}' has no dataset '{}' (its datasets: {})", path, name,
                     fmt::join(list_datasets("/"), ", "));
  }
  return Handle(SKEIN_H5_CHECK(H5Dopen2, (file.get(), name.c_str(), H5P_DEFAULT),
                               fmt::format("opening dataset '{}' in HDF5 file '{}'", name, path)),
                H5Dclose);
}

std::vector<std::string> File::Impl::list_datasets(const std::string& group) const {
  struct Visit {
    hid_t file;
    std::string base;
    std::vector<std::string> names;
  } visit{file.get(), group == "/" ? "" : group, {}};
  auto callback = [](hid_t g, const char* link, const H5L_info_t*, void* data) -> herr_t {
    auto* v = static_cast<Visit*>(data);
    const hid_t object = H5Oopen(g, link, H5P_DEFAULT);
    if (object < 0) {
      H5Eclear2(H5E_DEFAULT);  // dangling links are not datasets
      return 0;
    }
    if (H5Iget_type(object) == H5I_DATASET) {
      std::string n = v->base.empty() ? std::string(link) : v->base + "/" + link;
      if (!n.empty() && n.front() == '/') n.erase(0, 1);
      v->names.push_back(n);
    }
    H5Oclose(object);
    return 0;
  };
  Handle g(SKEIN_H5_CHECK(H5Gopen2, (file.get(), group.c_str(), H5P_DEFAULT),
                          fmt::format("opening group '{}' in HDF5 file '{}'", group, path)),
           H5Gclose);
  SKEIN_H5_CHECK(H5Lvisit, (g.get(), H5_INDEX_NAME, H5_ITER_INC, callback, &visit),
                 fmt::format("listing group '{}' of HDF5 file '{}'", group, path));
  std::sort(visit.names.begin(), visit.names.end());
  return visit.names;
}

DatasetInfo File::Impl::read_info(hid_t dataset, const std::string& name) const {
  const std::string where = fmt::format("dataset '{}' in HDF5 file '{}'", name, path);
  DatasetInfo info;
  info.name = name;
  Handle type(SKEIN_H5_CHECK(H5Dget_type, (dataset), where), H5Tclose);
  std::string why;
  const auto file_type = dtype_of_type(type.get(), why);
  if (!file_type) {
    detail::raise_in(SKEIN_HERE, "hdf5::File",
                     "Skein reads integers, floats and complex numbers "
                     "({r, i} compounds); convert the dataset with another tool.",
                     "{} has {}, which no Skein dtype matches", where, why);
  }
  info.dtype = file_type->dtype;
  Handle space(SKEIN_H5_CHECK(H5Dget_space, (dataset), where), H5Sclose);
  const int ndims = SKEIN_H5_CHECK(H5Sget_simple_extent_ndims, (space.get()), where);
  std::vector<hsize_t> dims(static_cast<std::size_t>(ndims));
  SKEIN_H5_CHECK(H5Sget_simple_extent_dims, (space.get(), dims.data(), nullptr), where);
  info.shape.assign(dims.begin(), dims.end());
  Handle dcpl(SKEIN_H5_CHECK(H5Dget_create_plist, (dataset), where), H5Pclose);
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED && ndims > 0) {
    std::vector<hsize_t> chunk(static_cast<std::size_t>(ndims));
    SKEIN_H5_CHECK(H5Pget_chunk, (dcpl.get(), ndims, chunk.data()), where);
    info.chunk_rows = chunk[0];
  }
  const int filters = SKEIN_H5_CHECK(H5Pget_nfilters, (dcpl.get()), where);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, values[8] = {};
    std::size_t n = 8;
    char filter_name[64] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n, values,
                                           sizeof filter_name, filter_name, nullptr);
    if (id == H5Z_FILTER_DEFLATE && n > 0) info.compression = static_cast<int>(values[0]);
    if (id == H5Z_FILTER_FLETCHER32) info.checksum = true;
  }
  info.attributes = read_attributes(dataset, name);
  if (auto it = info.attributes.find("skein_step"); it != info.attributes.end()) {
    if (auto* v = std::get_if<std::int64_t>(&it->second)) info.step = *v;
  }
  if (auto it = info.attributes.find("skein_time"); it != info.attributes.end()) {
    if (auto* v = std::get_if<double>(&it->second)) info.time = *v;
  }
  if (auto it = info.attributes.find("skein_layout"); it != info.attributes.end()) {
    if (auto* v = std::get_if<std::string>(&it->second)) info.layout = *v;
  }
  return info;
}

namespace internal {

json info_to_json(const DatasetInfo& info) {
  json j{{"name", info.name},
         {"shape", info.shape},
         {"dtype", std::string(name(info.dtype))},
         {"chunk_rows", info.chunk_rows},
         {"compression", info.compression},
         {"checksum", info.checksum},
         {"layout", info.layout},
         {"attributes", attributes_to_json(info.attributes)}};
  if (info.step) j["step"] = *info.step;
  if (info.time) j["time"] = std::bit_cast<std::uint64_t>(*info.time);
  return j;
}

DatasetInfo info_from_json(const json& j) {
  DatasetInfo info;
  info.name = j["name"].get<std::string>();
  info.shape = j["shape"].get<Shape>();
  info.dtype = dtype_from_name(j["dtype"].get<std::string>());
  info.chunk_rows = j["chunk_rows"].get<std::size_t>();
  info.compression = j["compression"].get<int>();
  info.checksum = j["checksum"].get<bool>();
  info.layout = j["layout"].get<std::string>();
  info.attributes = attributes_from_json(j["attributes"]);
  if (j.contains("step")) info.step = j["step"].get<std::int64_t>();
  if (j.contains("time")) info.time = std::bit_cast<double>(j["time"].get<std::uint64_t>());
  return info;
}

}  // namespace internal

namespace internal {

void check_name(const std::string& name, const std::string& call) {
  if (name.empty() || name == "/") {
    detail::raise_in(SKEIN_HERE, call, "Pass a dataset name such as \"u\" or \"fields/u\".",
                     "the dataset name '{}' is empty", name);
  }
}

void check_write_options(const WriteOptions& o, const std::string& call) {
  if (o.compression < 0 || o.compression > 9) {
    detail::raise_in(SKEIN_HERE, call,
                     "Use a deflate level from 1 (fast) to 9 (small), or 0 for none.",
                     "WriteOptions::compression is {}", o.compression);
  }
  for (const auto& [k, v] : o.attributes) {
    if (k.empty() || k.rfind("skein_", 0) == 0) {
      detail::raise_in(
          SKEIN_HERE, call,
          "Name user attributes without the skein_ prefix (Skein's own attributes use it).",
          "attribute name '{}' is {}", k, k.empty() ? "empty" : "reserved for Skein");
    }
  }
}

std::string describe_options(const WriteOptions& o) {
  std::vector<std::string> attrs;
  for (const auto& [k, v] : o.attributes) attrs.push_back(k + "=" + to_string(v));
  return fmt::format(
      "chunk_rows {} compression {} shuffle {} checksum {} step {} time {} overwrite {} "
      "attributes {{{}}}",
      o.chunk_rows, o.compression, o.shuffle, o.checksum, o.step ? std::to_string(*o.step) : "-",
      o.time ? fmt::format("{:a}", *o.time) : "-", o.overwrite, fmt::join(attrs, ", "));
}

Handle make_dataset(File::Impl& f, const std::string& name, const Shape& shape, Dtype dtype,
                    const WriteOptions& o, const Attributes& skein_attributes,
                    const std::string& call) {
  const std::string where = fmt::format("dataset '{}' in HDF5 file '{}'", name, f.path);
  Handle dataset;
  if (f.is_dataset(name)) {
    const Handle existing(
        SKEIN_H5_CHECK(H5Dopen2, (f.file.get(), name.c_str(), H5P_DEFAULT), where), H5Dclose);
    const DatasetInfo info = f.read_info(existing.get(), name);
    if (!o.overwrite || info.shape != shape || info.dtype != dtype) {
      detail::raise_in(
          SKEIN_HERE, call,
          o.overwrite ? "Write over it only with the same shape and dtype, or use another name."
                      : "Use another name, or set WriteOptions::overwrite to write over "
                        "it (same shape and dtype).",
          "{} exists already ({} {}; this write: {} {})", where, skein::name(info.dtype),
          shape_text(info.shape), skein::name(dtype), shape_text(shape));
    }
    dataset = Handle(SKEIN_H5_CHECK(H5Dopen2, (f.file.get(), name.c_str(), H5P_DEFAULT), where),
                     H5Dclose);
    // A step or time the new data does not have must not stay from the old.
    for (const char* stale : {"skein_step", "skein_time"}) {
      const bool given =
          std::string(stale) == "skein_step" ? o.step.has_value() : o.time.has_value();
      if (!given && SKEIN_H5_CHECK(H5Aexists, (dataset.get(), stale), where) > 0) {
        SKEIN_H5_CHECK(H5Adelete, (dataset.get(), stale), where);
      }
    }
  } else if (f.link_exists(name)) {
    detail::raise_in(SKEIN_HERE, call, "Use a name that is not a group of the file.",
                     "'{}' in HDF5 file '{}' is a group, not a dataset", name, f.path);
  } else {
    Handle space;
    if (shape.empty()) {
      space = Handle(SKEIN_H5_CHECK(H5Screate, (H5S_SCALAR), where), H5Sclose);
    } else {
      const std::vector<hsize_t> dims(shape.begin(), shape.end());
      space = Handle(SKEIN_H5_CHECK(H5Screate_simple,
                                    (static_cast<int>(dims.size()), dims.data(), nullptr), where),
                     H5Sclose);
    }
    Handle dcpl(SKEIN_H5_CHECK(H5Pcreate, (H5P_DATASET_CREATE), where), H5Pclose);
    std::size_t chunk_rows = o.chunk_rows;
    if (chunk_rows == 0 && (o.compression > 0 || o.checksum)) {
      const std::size_t row_bytes = std::max<std::size_t>(1, row_elements(shape) * itemsize(dtype));
      chunk_rows = std::max<std::size_t>(1, (std::size_t{1} << 20) / row_bytes);
    }
    // HDF5 refuses chunks larger than a fixed-size dataset and chunks of 0-D or empty datasets:
    // those stay contiguous, unfiltered (an empty one has nothing to protect or compress).
    const bool chunked = chunk_rows > 0 && !shape.empty() && shape_size(shape) > 0;
    const bool filtered = chunked && (o.compression > 0 || o.checksum);
    if (chunked) {
      std::vector<hsize_t> chunk(shape.begin(), shape.end());
      chunk[0] = std::min(chunk_rows, shape[0]);
      SKEIN_H5_CHECK(H5Pset_chunk, (dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
                     where);
      if (o.compression > 0) {
        if (o.shuffle) SKEIN_H5_CHECK(H5Pset_shuffle, (dcpl.get()), where);
        SKEIN_H5_CHECK(H5Pset_deflate, (dcpl.get(), static_cast<unsigned>(o.compression)), where);
      }
      // Last in the pipeline, so that the checksum covers the bytes as they lie in the file.
      if (o.checksum) SKEIN_H5_CHECK(H5Pset_fletcher32, (dcpl.get()), where);
    }
    if (!filtered) {
      // Every element is written: HDF5 need not write fill values first.
      SKEIN_H5_CHECK(H5Pset_fill_time, (dcpl.get(), H5D_FILL_TIME_NEVER), where);
    }
    Handle lcpl(SKEIN_H5_CHECK(H5Pcreate, (H5P_LINK_CREATE), where), H5Pclose);
    SKEIN_H5_CHECK(H5Pset_create_intermediate_group, (lcpl.get(), 1), where);
    Handle type = type_of(dtype);
    dataset = Handle(SKEIN_H5_CHECK(H5Dcreate2,
                                    (f.file.get(), name.c_str(), type.get(), space.get(),
                                     lcpl.get(), dcpl.get(), H5P_DEFAULT),
                                    where),
                     H5Dclose);
  }
  Attributes all = skein_attributes;
  all["skein_dtype"] = std::string(skein::name(dtype));
  all["skein_global_shape"] = std::vector<std::int64_t>(shape.begin(), shape.end());
  if (o.step) all["skein_step"] = *o.step;
  if (o.time) all["skein_time"] = *o.time;
  for (const auto& [k, v] : o.attributes) all[k] = v;
  for (const auto& [k, v] : all) write_attribute(dataset.get(), name, k, v);
  return dataset;
}

}  // namespace internal

DatasetInfo File::info(const std::string& name_in) {
  const std::string call = "hdf5::File::info";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("info '{}'", name));
  return info_from_json(json::parse(f.on_file_ranks(call, [&] {
    check_name(name, call);
    Handle dataset = f.open_dataset(name, call);
    return info_to_json(f.read_info(dataset.get(), name)).dump();
  })));
}

bool File::exists(const std::string& name_in) {
  const std::string call = "hdf5::File::exists";
  Impl& f = checked(call.c_str());
  const std::string name = normalise(name_in);
  f.agree_on_call(call, fmt::format("exists '{}'", name));
  return f.on_file_ranks(call, [&] {
    return std::string(name.empty() || name == "/" ? "0" : f.is_dataset(name) ? "1" : "0");
  }) == "1";
}

std::vector<std::string> File::datasets(const std::string& group_in) {
  const std::string call = "hdf5::File::datasets";
  Impl& f = checked(call.c_str());
  const std::string group = group_in.empty() ? "/" : normalise(group_in);
  f.agree_on_call(call, fmt::format("datasets '{}'", group));
  return json::parse(f.on_file_ranks(call, [&] { return json(f.list_datasets(group)).dump(); }))
      .get<std::vector<std::string>>();
}

#endif

}  // namespace skein::hdf5
