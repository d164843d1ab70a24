// SPDX-License-Identifier: BSD-3-Clause
// (To be written: see bindings.hpp for what this file binds.)
#include "bindings.hpp"

namespace skein::python {

void bind_interop(py::module_& /*m*/) {}

}  // namespace skein::python
