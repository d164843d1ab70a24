// SPDX-License-Identifier: BSD-3-Clause
// skein_hdf5_*: a skein::hdf5::File over a communicator's ranks, grids written and read as
// datasets of their global shape, and double attributes. Builds without HDF5 or MPI answer
// SKEIN_ERROR_UNSUPPORTED.
#include <memory>
#include <string>
#include <variant>

#include "errors.hpp"
#include "handles.hpp"
#include "skein/config.h"
#include "skein/hdf5.hpp"

namespace skein::capi {

namespace {

hdf5::File& file_of(skein_hdf5_file* file) {
  require(file, "file");
  return *file->file;
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

skein_status skein_hdf5_create(skein_communicator* comm, const char* path, skein_hdf5_file** file) {
  const char* function = "skein_hdf5_create";
  return guard(function, [&] {
    need_hdf5(function);
    require(comm, "comm");
    require(path, "path");
    require(file, "file");
    auto made = std::make_unique<skein::hdf5::File>(skein::hdf5::File::create(*comm->comm, path));
    *file = new skein_hdf5_file{std::move(made)};
  });
}

skein_status skein_hdf5_open(skein_communicator* comm, const char* path, int read_write,
                             skein_hdf5_file** file) {
  const char* function = "skein_hdf5_open";
  return guard(function, [&] {
    need_hdf5(function);
    require(comm, "comm");
    require(path, "path");
    require(file, "file");
    const auto access =
        read_write != 0 ? skein::hdf5::Access::read_write : skein::hdf5::Access::read_only;
    auto made =
        std::make_unique<skein::hdf5::File>(skein::hdf5::File::open(*comm->comm, path, access));
    *file = new skein_hdf5_file{std::move(made)};
  });
}

skein_status skein_hdf5_close(skein_hdf5_file* file) {
  return guard("skein_hdf5_close", [&] {
    if (file == nullptr) return;
    // The handle goes whether or not closing succeeds: a file that failed to close cannot be
    // closed again.
    const std::unique_ptr<skein_hdf5_file> owned(file);
    owned->file->close();
  });
}

skein_status skein_hdf5_write_grid(skein_hdf5_file* file, const char* name,
                                   const skein_grid* grid) {
  return guard("skein_hdf5_write_grid", [&] {
    skein::hdf5::File& f = file_of(file);
    require(name, "name");
    require(grid, "grid");
    f.write(name, grid->grid);
  });
}

skein_status skein_hdf5_read_grid(skein_hdf5_file* file, const char* name, const skein_grid* grid) {
  return guard("skein_hdf5_read_grid", [&] {
    skein::hdf5::File& f = file_of(file);
    require(name, "name");
    require(grid, "grid");
    f.read(name, grid->grid);
  });
}

skein_status skein_hdf5_set_attribute(skein_hdf5_file* file, const char* object, const char* name,
                                      double value) {
  return guard("skein_hdf5_set_attribute", [&] {
    skein::hdf5::File& f = file_of(file);
    require(object, "object");
    require(name, "name");
    f.set_attribute(object, name, skein::hdf5::AttributeValue(value));
  });
}

skein_status skein_hdf5_get_attribute(skein_hdf5_file* file, const char* object, const char* name,
                                      double* value) {
  return guard("skein_hdf5_get_attribute", [&] {
    skein::hdf5::File& f = file_of(file);
    require(object, "object");
    require(name, "name");
    require(value, "value");
    const auto found = f.attribute(object, name);
    if (!found) {
      invalid(std::string("\"") + object + "\" has no attribute \"" + name + "\"",
              "Pass the name of an attribute the object has (skein_hdf5_set_attribute).");
    }
    if (const auto* d = std::get_if<double>(&*found)) {
      *value = *d;
    } else if (const auto* i = std::get_if<std::int64_t>(&*found)) {
      *value = static_cast<double>(*i);
    } else {
      invalid(std::string("attribute \"") + name + "\" of \"" + object + "\" is " +
                  skein::hdf5::to_string(*found) + ", not a number",
              "Read it with h5py or the C++ API (skein::hdf5::File::attribute).");
    }
  });
}

}  // extern "C"
