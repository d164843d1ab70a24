// SPDX-License-Identifier: BSD-3-Clause
// The extension module skein._skein. The package skein (skein/__init__.py) imports its names; a
// program imports skein, not this module.
#include "bindings.hpp"

PYBIND11_MODULE(_skein, m) {
  m.doc() = "Skein's C++ layers for Python; import skein, which re-exports these names.";
  m.attr("__version__") = skein::version();
  using namespace skein::python;
  bind_errors(m);
  bind_dtypes(m);
  bind_platforms(m);
  bind_contexts(m);
  bind_array(m);
  bind_memory(m);
  bind_functions(m);
  bind_kernels(m);
  bind_interop(m);
  bind_collectives(m);
  bind_dist(m);
  bind_io(m);
}
