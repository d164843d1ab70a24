// SPDX-License-Identifier: BSD-3-Clause
// The extension module skein._skein. The package skein (skein/__init__.py) imports its names; a
// program imports skein, not this module.
#include "bindings.hpp"

PYBIND11_MODULE(_skein, m) {
  m.doc() = "Skein's C++ layers for Python; import skein, which re-exports these names.";
  m.attr("__version__") = skein::version();
  // pygpu's abi_version()/api_version(): the library's numbers at run time, and those of the
  // headers this module was compiled with; they differ when it loads another libskein_framework.
  m.def(
      "version",
      [] {
        const skein::Version v = skein::version_numbers();
        return pybind11::make_tuple(v.major, v.minor, v.patch);
      },
      "The loaded Skein library's version as (major, minor, patch) (skein.__version__ is the "
      "string).");
  m.def(
      "header_version",
      [] {
        constexpr skein::Version v = skein::header_version();
        return pybind11::make_tuple(v.major, v.minor, v.patch);
      },
      "The version of the Skein headers this module was compiled with, as (major, minor, "
      "patch): a program that checks skein.version() == skein.header_version() detects a module "
      "run against another installation's library.");
  // What this Skein was built with (<skein/config.h>): a program or test asks before it uses an
  // optional part (DLPack, HDF5, ...), whose calls otherwise raise saying that it is missing.
  pybind11::dict config;
  config["cuda"] = SKEIN_HAS_CUDA != 0;
  config["nccl"] = SKEIN_HAS_NCCL != 0;
  config["opencl"] = SKEIN_HAS_OPENCL != 0;
  config["clblast"] = SKEIN_HAS_CLBLAST != 0;
  config["mpi"] = SKEIN_HAS_MPI != 0;
  config["hdf5"] = SKEIN_HAS_HDF5 != 0;
  config["hdf5_parallel"] = SKEIN_HAS_HDF5_PARALLEL != 0;
  config["dlpack"] = SKEIN_HAS_DLPACK != 0;
  m.attr("config") = config;
  using namespace skein::python;
  bind_errors(m);
  bind_dtypes(m);
  bind_platforms(m);
  bind_contexts(m);
  bind_array(m);
  bind_memory(m);
  bind_functions(m);
  bind_kernels(m);
  bind_context_tools(m);
  bind_interop(m);
  bind_collectives(m);
  bind_dist(m);
  bind_io(m);
  bind_records(m);
}
