// SPDX-License-Identifier: BSD-3-Clause
// Default contexts and context caches (PyCUDA's tools.make_default_context,
// context_dependent_memoize, clear_context_caches; pygpu's get/set_default_context,
// GpuContext.largest_memblock and bin_id), and platforms from native handles (grunnur's
// Platform.from_backend_platform).
#include <Python.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "skein/context_memo.hpp"
#include "skein/opencl.hpp"

namespace skein::python {

namespace {

// A memo table holding a dict (args -> value) in a context's shared state. The context may be
// released on a thread without the GIL, so the dict is released with the GIL taken (and leaked
// when the interpreter is going away, as pybind11 leaks what outlives it).
struct PyMemoTable final : detail::MemoTable {
  py::object dict;
  PyMemoTable() {
    py::gil_scoped_acquire gil;
    dict = py::dict();
  }
  ~PyMemoTable() override {
#if PY_VERSION_HEX >= 0x030D0000
    const bool finalizing = Py_IsFinalizing() != 0;
#else
    const bool finalizing = _Py_IsFinalizing() != 0;
#endif
    if (!Py_IsInitialized() || finalizing) {
      (void)dict.release();
      return;
    }
    try {
      py::gil_scoped_acquire gil;
      dict = py::object();
    } catch (...) {
      (void)dict.release();  // a destructor must not throw: leaked, as at interpreter exit
    }
  }
};

std::shared_ptr<detail::MemoTable> make_py_table() { return std::make_shared<PyMemoTable>(); }

// The C++ half of skein.context_dependent_memoize (skein/__init__.py): a memo id whose tables
// hold the values, dropped from every context when the object goes.
class PyContextMemo {
 public:
  PyContextMemo() : id_(detail::new_memo_id()) {}
  ~PyContextMemo() { detail::drop_memo_tables(nullptr, id_); }
  PyContextMemo(const PyContextMemo&) = delete;
  PyContextMemo& operator=(const PyContextMemo&) = delete;
  py::object table(const Context& context) const {
    auto t = detail::memo_table(context, id_, &make_py_table);
    return static_cast<PyMemoTable&>(*t).dict;
  }
  void clear(const std::optional<Context>& context) const {
    detail::drop_memo_tables(context ? &*context : nullptr, id_);
  }

 private:
  std::uint64_t id_;
};

std::optional<ApiId> to_api(const py::object& obj) {
  if (obj.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(obj)) return api_id_from_shortcut(obj.cast<std::string>());
  if (py::isinstance<Api>(obj)) return obj.cast<Api>().id();
  return obj.cast<ApiId>();
}

}  // namespace

void bind_context_tools(py::module_& m) {
  m.def(
      "make_default_context",
      [](const py::object& api, const py::kwargs& kwargs) {
        return make_default_context(to_api(api), device_filter(kwargs, "make_default_context"));
      },
      py::arg("api") = py::none(),
      "A context on the first device (of `api`: an APIID, API or 'cuda'/'opencl'; every available "
      "API's, CUDA first, for None) on which one can be made, passing over devices that refuse "
      "(busy, exclusive-process, out of memory). Keywords: the device filters of "
      "Context.from_criteria. Raises RuntimeError listing every device tried and its error when "
      "none succeeds.");
  m.def("set_default_context", &set_default_context, py::arg("context"),
        "Sets (or, with None, clears) the process's default context. No Skein call reads it: "
        "get_default_context() hands it back.");
  m.def("get_default_context", &default_context,
        "The context set by set_default_context(), or None.");
  m.def("clear_context_caches", &clear_context_caches, py::call_guard<py::gil_scoped_release>(),
        "Empties the programs every context holds loaded, the generated kernels' programs and "
        "every context_dependent_memoize cache: the next use loads (from the disk compile cache) "
        "or compiles again.");
  m.def("loaded_programs", &loaded_programs, py::arg("context"),
        "The number of programs the context holds loaded (per device and source).");
  m.def("largest_allocation", &largest_allocation, py::arg("context"), py::arg("device_idx") = 0,
        "pygpu's largest_memblock: the largest allocation device_idx can be asked for now, in "
        "bytes (CUDA: cuMemGetInfo's free memory; OpenCL: CL_DEVICE_MAX_MEM_ALLOC_SIZE bounded by "
        "the free-memory estimate).");
  m.def("binary_id", &binary_id, py::arg("device"),
        "pygpu's bin_id: 'sm_90' on CUDA; 'PLATFORM VERSION / DEVICE / DRIVER' on OpenCL.");

  // grunnur's Program(..., render_args=...) renders a def with positional arguments: Skein's
  // parameterised templates are Snippets (skein/template.hpp), rendered with their arguments.
  m.def(
      "render_snippet",
      [](const Snippet& snippet, const std::vector<std::string>& args) {
        return skein::render(snippet, args);
      },
      py::arg("snippet"), py::arg("args") = std::vector<std::string>{},
      "Renders a Snippet called with `args` (strings) as the main text: grunnur's render_args.");

  py::class_<PyContextMemo>(m, "_ContextMemo")
      .def(py::init<>())
      .def("table", &PyContextMemo::table, py::arg("context"))
      .def("clear", &PyContextMemo::clear, py::arg("context") = py::none());

  py::reinterpret_borrow<py::class_<Device>>(m.attr("Device"))
      .def_property_readonly("binary_id", &binary_id, "binary_id(device): pygpu's bin_id.");
  py::reinterpret_borrow<py::class_<Platform>>(m.attr("Platform"))
      .def_static(
          "from_backend_platform",
          [](const py::object& obj) -> Platform {
#if SKEIN_HAS_OPENCL
            // pyopencl's Platform has int_ptr; an int is the cl_platform_id itself.
            const py::object handle = py::hasattr(obj, "int_ptr") ? obj.attr("int_ptr") : obj;
            if (!py::isinstance<py::int_>(handle)) {
              raise_argument("Platform.from_backend_platform",
                             "expected a cl_platform_id as an int, or an object with int_ptr",
                             "Pass pyopencl's Platform, or its int_ptr.");
            }
            return opencl::platform_from_native(
                reinterpret_cast<cl_platform_id>(handle.cast<std::uintptr_t>()));
#else
            (void)obj;
            raise_argument("Platform.from_backend_platform", "this Skein was built without OpenCL",
                           "CUDA has one platform: Platform.from_index(api, 0).");
#endif
          },
          py::arg("obj"),
          "The Platform of an OpenCL cl_platform_id (an int, or pyopencl's Platform). CUDA has "
          "one platform: Platform.from_index(api, 0).")
      .def_property_readonly(
          "native",
          [](const Platform& p) -> std::uintptr_t {
#if SKEIN_HAS_OPENCL
            return reinterpret_cast<std::uintptr_t>(opencl::native_platform(p));
#else
            (void)p;
            raise_argument("Platform.native", "this Skein was built without OpenCL",
                           "CUDA has no platform handle.");
#endif
          },
          "The cl_platform_id as an int (OpenCL platforms only).");
}

}  // namespace skein::python
