// SPDX-License-Identifier: BSD-3-Clause
// Skein's C++ exceptions become the Python classes of skein/errors.py, with the same message and
// its parts as attributes. The classes live in Python (their docstrings and bases with the
// built-in exceptions are plain there); the translator looks them up in skein.errors, which the
// package's __init__ imports before anything can raise.
#include <exception>
#include <string>

#include "bindings.hpp"

namespace skein::python {

namespace {

// Sets the Python error to an instance of skein.errors.<name> built from `e`; the extra
// attributes of the subclasses are set by `more`.
template <class More>
void set_error(const char* name, const Error& e, More&& more) {
  const py::object cls = py::module_::import("skein.errors").attr(name);
  py::object exc = cls(py::str(e.what()));
  const ErrorInfo& info = e.info();
  exc.attr("call") = info.call;
  exc.attr("code") = info.code;
  exc.attr("code_name") = info.code_name;
  exc.attr("device") = info.device;
  exc.attr("hint") = info.hint;
  more(exc);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void set_error(const char* name, const Error& e) {
  set_error(name, e, [](py::object&) {});
}

void translate(std::exception_ptr p) {
  // Most derived first: the first matching handler wins.
  try {
    std::rethrow_exception(p);
  } catch (const CheckpointError& e) {
    set_error("CheckpointError", e);
  } catch (const TimeoutError& e) {
    set_error("TimeoutError", e);
  } catch (const ApiUnavailableError& e) {
    set_error("ApiUnavailableError", e);
  } catch (const RenderError& e) {
    set_error("RenderError", e);
  } catch (const CompileError& e) {
    set_error("CompileError", e, [&](py::object& exc) {
      exc.attr("log") = e.log();
      exc.attr("source") = e.source();
      exc.attr("options") = e.options();
    });
  } catch (const MemoryError& e) {
    set_error("MemoryError", e, [&](py::object& exc) {
      exc.attr("requested") = e.requested();
      exc.attr("available") = e.available();
    });
  } catch (const LaunchError& e) {
    set_error("LaunchError", e);
  } catch (const LogicError& e) {
    set_error("LogicError", e);
  } catch (const RuntimeError& e) {
    set_error("RuntimeError", e);
  } catch (const Error& e) {
    set_error("Error", e);
  }
  // Anything else propagates to pybind11's own translators (std::exception and its kind).
}

}  // namespace

void raise_argument(const std::string& call, const std::string& what, const std::string& hint) {
  throw LogicError(ErrorInfo{.what = what, .call = call, .hint = hint});
}

void bind_errors(py::module_& m) {
  py::register_exception_translator(&translate);
  // For the tests: raises the C++ exception named, so that each class's translation (message,
  // attributes, Python class and built-in bases) is checked without provoking the fault itself.
  m.def(
      "_raise_for_test",
      [](const std::string& kind) {
        const ErrorInfo info{.what = "a test of the translation",
                             .call = "skein._raise_for_test",
                             .code_name = "TEST_CODE",
                             .code = 7,
                             .has_code = true,
                             .device = "no device",
                             .hint = "Nothing to do."};
        if (kind == "LogicError") throw LogicError(info);
        if (kind == "RuntimeError") throw RuntimeError(info);
        if (kind == "ApiUnavailableError") throw ApiUnavailableError(info);
        if (kind == "MemoryError") throw MemoryError(info, 1024, 512);
        if (kind == "LaunchError") throw LaunchError(info);
        if (kind == "CompileError") throw CompileError(info, "the log", "the source", "-O3");
        if (kind == "RenderError") throw RenderError(info);
        if (kind == "TimeoutError") throw TimeoutError(info);
        if (kind == "CheckpointError") throw CheckpointError(info);
        throw Error(info);
      },
      py::arg("kind"));
}

}  // namespace skein::python
