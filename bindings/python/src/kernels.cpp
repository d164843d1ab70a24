// SPDX-License-Identifier: BSD-3-Clause
// Kernels written by hand (grunnur's Program, Kernel and StaticKernel), and the template
// rendering they use (render, Snippet, Module, literal, skein.functions' modules). Generated
// kernels (ElementwiseKernel, ReductionKernel) are in kernels_generated.cpp.
//
// Kernel arguments from Python: a skein.Array or skein.Buffer for a pointer parameter; a Python
// number or NumPy scalar for a scalar parameter, converted to the parameter's type as the kernel's
// signature declares it (found in the program's source), exactly (a fraction for an integer or a
// value out of range is a LogicError); a list gives one value per device (indexed by device_idx).
// Everything is checked before anything is launched. Launches do not wait, so they keep the GIL:
// a release and acquire would cost more than the launch itself on small arrays. Compiling releases
// it.
#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernel_signature.hpp"
#include "operands.hpp"

namespace skein::python {

namespace {

// --- render globals -----------------------------------------------------------------------------

RenderValue to_render_value(const py::handle& v, const std::string& key) {
  if (py::isinstance<Snippet>(v)) return RenderValue(v.cast<Snippet>());
  if (py::isinstance<Module>(v)) return RenderValue(v.cast<Module>());
  if (py::isinstance<py::str>(v)) return RenderValue(v.cast<std::string>());
  if (PyBool_Check(v.ptr())) return RenderValue(std::int64_t{v.cast<bool>() ? 1 : 0});
  if (PyLong_Check(v.ptr())) return RenderValue(v.cast<std::int64_t>());
  if (PyFloat_Check(v.ptr())) return RenderValue(skein::literal(v.cast<double>()));
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    RenderList items;
    for (const auto item : v) items.push_back(to_render_value(item, key));
    return RenderValue(std::move(items));
  }
  raise_argument("render_globals",
                 "the value of '" + key + "' is a " + std::string(Py_TYPE(v.ptr())->tp_name),
                 "Bind a str, an int, a float (a C literal), a list of those, a skein.Snippet or "
                 "a skein.Module.");
}

}  // namespace

RenderGlobals to_render_globals(const py::handle& obj) {
  RenderGlobals globals;
  if (obj.is_none()) return globals;
  for (const auto& [k, v] : obj.cast<py::dict>()) {
    const auto key = k.cast<std::string>();
    globals.emplace(key, to_render_value(v, key));
  }
  return globals;
}

namespace {

ProgramOptions program_options(const py::object& compiler_options, bool fast_math, bool no_prelude,
                               const py::object& device_idxs, bool keep, const std::string& name) {
  ProgramOptions o;
  if (!compiler_options.is_none()) {
    o.compiler_options = compiler_options.cast<std::vector<std::string>>();
  }
  o.fast_math = fast_math;
  o.no_prelude = no_prelude;
  if (!device_idxs.is_none()) o.device_idxs = device_idxs.cast<std::vector<std::size_t>>();
  o.keep = keep;
  o.name = name;
  return o;
}

// PyCUDA's jit_options (a dict: max_registers, optimization_level, verbose) and message_handler
// (called with success, info log, error log).
void set_jit(ProgramOptions& o, const py::object& jit_options, const py::object& message_handler) {
  if (!jit_options.is_none()) {
    for (const auto& [key, value] : jit_options.cast<py::dict>()) {
      const auto k = key.cast<std::string>();
      if (k == "max_registers") {
        o.jit.max_registers = value.cast<unsigned>();
      } else if (k == "optimization_level") {
        o.jit.optimization_level = value.cast<unsigned>();
      } else if (k == "verbose") {
        o.jit.verbose = value.cast<bool>();
      } else {
        throw py::value_error("unknown JIT option '" + k +
                              "': give max_registers, optimization_level or verbose");
      }
    }
  }
  if (!message_handler.is_none()) {
    const auto handler = message_handler.cast<py::function>();
    o.message_handler = [handler](bool ok, const std::string& info, const std::string& error) {
      handler(ok, info, error);
    };
  }
}

WorkSize to_work_size(const py::handle& obj, const char* call) {
  if (PyLong_Check(obj.ptr())) return WorkSize(to_shape(obj, call)[0]);
  const Shape s = to_shape(obj, call);
  if (s.empty() || s.size() > 3) {
    raise_argument(call, "a launch size has 1 to 3 dimensions; got " + to_string(s),
                   "Give an int or a tuple of 1 to 3 ints.");
  }
  return WorkSize(std::span<const std::size_t>(s));
}

// A Python-side Program: the C++ program and its kernels (with their parsed signatures), made once
// per name so that `program.kernel.NAME` in a loop costs a dict lookup.
struct PyProgram {
  Program program;
  std::map<std::string, std::shared_ptr<PyKernel>, std::less<>> kernels;

  std::shared_ptr<PyKernel> kernel(const std::string& name) {
    const auto it = kernels.find(name);
    if (it != kernels.end()) return it->second;
    auto k = std::make_shared<PyKernel>(
        program.kernel(name),
        parse_kernel_signature(program.source(program.device_idxs().at(0)), name));
    kernels.emplace(name, k);
    return k;
  }
};

struct KernelHub {
  std::shared_ptr<PyProgram> program;
};

std::shared_ptr<PyProgram> make_program(const Context& context, const std::string& source,
                                        const py::object& render_globals, ProgramOptions options) {
  std::string rendered = source;
  if (!render_globals.is_none()) {
    rendered = skein::render(source, to_render_globals(render_globals), options.name);
  }
  const py::gil_scoped_release release;  // compiling takes long
  return std::make_shared<PyProgram>(PyProgram{Program(context, rendered, std::move(options)), {}});
}

void bind_program(py::module_& m) {
  py::class_<KernelHub>(m, "KernelHub", "program.kernel.NAME or program.kernel('NAME').")
      .def("__getattr__",
           [](const KernelHub& h, const std::string& name) {
             if (name.starts_with("__")) throw py::attribute_error(name);
             return h.program->kernel(name);
           })
      .def("__call__",
           [](const KernelHub& h, const std::string& name) { return h.program->kernel(name); });

  py::class_<PyProgram, std::shared_ptr<PyProgram>>(
      m, "Program", "Kernels compiled for the context's devices from one source (grunnur's).")
      .def(py::init([](const Context& context, const std::string& source,
                       const py::object& render_globals, const py::object& compiler_options,
                       bool fast_math, bool no_prelude, const py::object& device_idxs, bool keep,
                       const std::string& name) {
             return make_program(
                 context, source, render_globals,
                 program_options(compiler_options, fast_math, no_prelude, device_idxs, keep, name));
           }),
           py::arg("context"), py::arg("source"), py::arg("render_globals") = py::none(),
           py::arg("compiler_options") = py::none(), py::arg("fast_math") = false,
           py::arg("no_prelude") = false, py::arg("device_idxs") = py::none(),
           py::arg("keep") = false, py::arg("name") = "skein_program",
           "Compiles `source` (rendered as a template with render_globals when given) for the "
           "context's devices; skein.CompileError with the compiler's log when it does not "
           "compile.")
      .def_static(
          "from_binary",
          [](const Context& context, const py::bytes& binary, const py::object& device_idxs,
             const py::object& jit_options, const py::object& message_handler) {
            const std::string bytes = binary;
            ProgramOptions o;
            if (!device_idxs.is_none())
              o.device_idxs = device_idxs.cast<std::vector<std::size_t>>();
            set_jit(o, jit_options, message_handler);
            const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
            return std::make_shared<PyProgram>(
                PyProgram{Program::from_binary(context, span, o), {}});
          },
          py::arg("context"), py::arg("binary"), py::arg("device_idxs") = py::none(),
          py::arg("jit_options") = py::none(), py::arg("message_handler") = py::none(),
          "A program compiled ahead of time (PTX, CUBIN or fatbin on CUDA; an OpenCL binary, "
          "e.g. from skein.compile); jit_options (CUDA: a dict of max_registers, "
          "optimization_level, verbose) and message_handler(success, info_log, error_log) as "
          "PyCUDA's module_from_buffer.")
      .def_property_readonly("kernel",
                             [](const std::shared_ptr<PyProgram>& p) { return KernelHub{p}; })
      .def_property_readonly("context", [](const PyProgram& p) { return p.program.context(); })
      .def_property_readonly("device_idxs",
                             [](const PyProgram& p) { return p.program.device_idxs(); })
      .def(
          "source", [](const PyProgram& p, std::size_t d) { return p.program.source(d); },
          py::arg("device_idx") = 0, "The full source compiled for a device.")
      .def(
          "from_cache", [](const PyProgram& p, std::size_t d) { return p.program.from_cache(d); },
          py::arg("device_idx") = 0);
}

void bind_kernel(py::module_& m) {
  py::class_<PyKernel, std::shared_ptr<PyKernel>> kernel(m, "Kernel", "A kernel of a Program.");
  kernel.def_property_readonly("name", [](const PyKernel& k) { return k.kernel.name(); })
      .def_property_readonly(
          "parameters",
          [](const PyKernel& k) {
            py::list out;
            if (!k.signature) return py::object(py::none());
            for (const auto& p : *k.signature) {
              out.append(py::make_tuple(p.name, p.pointer ? py::object(py::str("pointer"))
                                                : p.dtype ? py::object(to_numpy(*p.dtype))
                                                          : py::object(py::none())));
            }
            return py::object(out);
          },
          "(name, 'pointer' | dtype | None) per parameter, as parsed from the source (None when "
          "the source was not available).")
      .def(
          "prepare",
          [](const std::shared_ptr<PyKernel>& k, const Queue& q, const py::object& global,
             const py::object& local, std::size_t local_mem) {
            auto prepared = k->kernel.prepare(
                q, to_work_size(global, "Kernel.prepare"),
                local.is_none() ? std::nullopt
                                : std::optional<LaunchSizes>(to_work_size(local, "Kernel.prepare")),
                LocalMem{local_mem});
            return PyPreparedKernel{k, std::move(prepared)};
          },
          py::arg("queue"), py::arg("global_size"), py::arg("local_size") = py::none(),
          py::arg("local_mem") = 0,
          "The kernel with its queue and sizes fixed: call it with the arguments only.")
      .def(
          "__call__",
          [](const std::shared_ptr<PyKernel>& k, const Queue& q, const py::handle& global,
             const py::handle& local, const py::args& args, std::size_t local_mem,
             bool time_kernel) -> py::object {
            const auto& prepared = k->prepared_for(q, global, local, local_mem);
            if (time_kernel) return py::float_(timed_launch(*k, prepared, args).seconds());
            launch_prepared(*k, prepared, args);
            return py::none();
          },
          py::arg("queue"), py::arg("global_size"), py::arg("local_size"), py::kw_only(),
          py::arg("local_mem") = 0, py::arg("time_kernel") = false,
          "Launches on every device of the queue (global/local sizes: ints or tuples; local "
          "None to let Skein choose); the arguments follow (skein.Array, skein.Buffer, numbers, "
          "skein.In / Out / InOut of NumPy arrays). Does not wait, unless an argument is an In, "
          "Out or InOut, or time_kernel=True: then it returns the kernel's device time in seconds "
          "(PyCUDA's time_kernel; the longest over the devices).")
      .def("max_total_local_sizes",
           [](const PyKernel& k) { return k.kernel.max_total_local_sizes(); });

  py::class_<PyPreparedKernel> prepared(m, "PreparedKernel",
                                        "A kernel with its queue and sizes fixed.");
  prepared.def("__call__", [](const PyPreparedKernel& p, const py::args& args) { p.launch(args); })
      .def_property_readonly("device_idxs",
                             [](const PyPreparedKernel& p) { return p.prepared.device_idxs(); });
  bind_kernel_launch(m, kernel, prepared);
}

}  // namespace

// The prepared kernel for these sizes: the last one made when they are the same (a loop launching
// one kernel with one size prepares it once).
const PreparedKernel& PyKernel::prepared_for(const Queue& q, const py::handle& global,
                                             const py::handle& local, std::size_t local_mem) {
  const WorkSize g = to_work_size(global, "Kernel.__call__");
  std::optional<WorkSize> l;
  if (!local.is_none()) l = to_work_size(local, "Kernel.__call__");
  if (!last || !(last->queue == q) || !(last->global == g) || last->local != l ||
      last->local_mem != local_mem) {
    auto prepared = kernel.prepare(q, g, l ? std::optional<LaunchSizes>(*l) : std::nullopt,
                                   LocalMem{local_mem});
    last = Last{q, g, l, local_mem, std::move(prepared)};
  }
  return last->prepared;
}

void launch_prepared(const PyKernel& kernel, const PreparedKernel& prepared, const py::args& args) {
  const auto& devices = prepared.device_idxs();
  std::vector<std::vector<detail::KernelArg>> packed(devices.size());
  std::vector<ScalarSlot> slots(args.size() * devices.size());
  for (std::size_t k = 0; k < devices.size(); ++k) {
    packed[k] = pack_kernel_args(kernel.signature, kernel.kernel.name(), args, devices[k],
                                 std::span(slots).subspan(k * args.size(), args.size()));
  }
  if (devices.size() > 1) {
    for (const auto& arg : packed[0]) {
      if (arg.kind != detail::KernelArg::Kind::buffer &&
          arg.kind != detail::KernelArg::Kind::scalar) {
        raise_argument("Kernel.__call__",
                       "kernel '" + kernel.kernel.name() +
                           "': skein.In, Out and InOut take a launch on one device; this one is "
                           "on " +
                           std::to_string(devices.size()) + " devices",
                       "Launch on a queue of one device, or pass skein.Arrays (a list with one "
                       "per device).");
      }
    }
  }
  for (std::size_t k = 0; k < devices.size(); ++k) prepared.launch_packed(devices[k], packed[k]);
}

namespace {

// StaticKernel: the C++ class launches through a variadic call only, so the packed arguments go
// in as one type (RawArg, which make_kernel_arg below turns back into its KernelArg), through one
// instantiation per argument count.
constexpr std::size_t kMaxStaticArgs = 24;

template <std::size_t... I>
void call_static(const StaticKernel& k, const MultiDevice<RawArg>* a, std::index_sequence<I...>) {
  k(a[I]...);
}
template <std::size_t... N>
constexpr auto static_callers(std::index_sequence<N...>) {
  using Fn = void (*)(const StaticKernel&, const MultiDevice<RawArg>*);
  return std::array<Fn, sizeof...(N)>{[](const StaticKernel& k, const MultiDevice<RawArg>* a) {
    call_static(k, a, std::make_index_sequence<N>{});
  }...};
}

struct PyStaticKernel {
  StaticKernel kernel;
  std::optional<std::vector<KernelParam>> signature;

  void launch(const py::args& args) const {
    if (args.size() > kMaxStaticArgs) {
      raise_argument("StaticKernel.__call__",
                     std::to_string(args.size()) + " arguments; at most " +
                         std::to_string(kMaxStaticArgs) + " are taken",
                     "Pass fewer arguments (group scalars into an array).");
    }
    const auto& devices = kernel.queue().device_idxs();
    std::vector<MultiDevice<RawArg>> per_arg(args.size());
    std::vector<ScalarSlot> slots(args.size() * devices.size());
    for (std::size_t k = 0; k < devices.size(); ++k) {
      const auto packed = pack_kernel_args(signature, "static kernel", args, devices[k],
                                           std::span(slots).subspan(k * args.size(), args.size()));
      for (std::size_t i = 0; i < packed.size(); ++i) per_arg[i].set(devices[k], RawArg{packed[i]});
    }
    static constexpr auto callers = static_callers(std::make_index_sequence<kMaxStaticArgs + 1>{});
    callers[args.size()](kernel, per_arg.data());
  }
};

void bind_static_kernel(py::module_& m) {
  py::class_<PyStaticKernel>(m, "StaticKernel",
                             "A kernel compiled and prepared for one queue and size, on a "
                             "virtual grid (grunnur's StaticKernel).")
      .def(py::init([](const Queue& q, const std::string& template_source, const std::string& name,
                       const py::object& global_size, const py::object& local_size,
                       const py::object& render_globals, const py::object& compiler_options,
                       const py::object& max_num_groups) {
             StaticKernelOptions o;
             if (!compiler_options.is_none()) {
               o.program.compiler_options = compiler_options.cast<std::vector<std::string>>();
             }
             if (!max_num_groups.is_none()) o.max_num_groups = max_num_groups.cast<std::size_t>();
             const WorkSize g = to_work_size(global_size, "StaticKernel");
             std::optional<WorkSize> l;
             if (!local_size.is_none()) l = to_work_size(local_size, "StaticKernel");
             const RenderGlobals globals = to_render_globals(render_globals);
             std::optional<StaticKernel> k;
             {
               const py::gil_scoped_release release;
               k.emplace(q, template_source, name, g, l, globals, std::move(o));
             }
             auto sig = parse_kernel_signature(k->source(q.device_idxs().at(0)), name);
             return PyStaticKernel{std::move(*k), std::move(sig)};
           }),
           py::arg("queue"), py::arg("template_source"), py::arg("name"), py::arg("global_size"),
           py::arg("local_size") = py::none(), py::arg("render_globals") = py::none(),
           py::arg("compiler_options") = py::none(), py::arg("max_num_groups") = py::none())
      .def("__call__", [](const PyStaticKernel& k, const py::args& args) { k.launch(args); })
      .def_property_readonly("local_size",
                             [](const PyStaticKernel& k) {
                               const auto& l = k.kernel.local_size();
                               std::vector<std::size_t> v;
                               for (unsigned d = 0; d < l.dims(); ++d) v.push_back(l[d]);
                               return to_tuple(v);
                             })
      .def(
          "source", [](const PyStaticKernel& k, std::size_t d) { return k.kernel.source(d); },
          py::arg("device_idx") = 0);
}

void bind_templates(py::module_& m) {
  py::class_<Snippet>(m, "Snippet", "A reusable parameterised piece of source (${name(a, b)}).")
      .def(py::init([](std::vector<std::string> params, std::string text,
                       const py::object& render_globals, std::string name) {
             return Snippet(std::move(params), std::move(text), to_render_globals(render_globals),
                            std::move(name));
           }),
           py::arg("params"), py::arg("text"), py::arg("render_globals") = py::none(),
           py::arg("name") = "snippet")
      .def_static(
          "from_string",
          [](std::string text, const py::object& render_globals, std::string name) {
            return Snippet::from_string(std::move(text), to_render_globals(render_globals),
                                        std::move(name));
          },
          py::arg("text"), py::arg("render_globals") = py::none(), py::arg("name") = "snippet")
      .def_static(
          "from_callable",
          [](std::size_t arity, py::function fn, const py::object& render_globals,
             std::string name) {
            auto shared = std::make_shared<py::function>(std::move(fn));
            return Snippet::from_callable(
                arity,
                [shared](std::span<const std::string> args) {
                  const py::gil_scoped_acquire acquire;
                  py::tuple t(args.size());
                  for (std::size_t i = 0; i < args.size(); ++i) t[i] = py::str(args[i]);
                  return (*shared)(*t).cast<std::string>();
                },
                to_render_globals(render_globals), std::move(name));
          },
          py::arg("arity"), py::arg("callable"), py::arg("render_globals") = py::none(),
          py::arg("name") = "snippet")
      .def_property_readonly("name", &Snippet::name)
      .def_property_readonly("arity", &Snippet::arity);
  py::class_<Module>(m, "Module", "Source rendered once under a unique prefix (${name}).")
      .def(py::init([](std::string text, const py::object& render_globals, std::string name) {
             return Module(std::move(text), to_render_globals(render_globals), std::move(name));
           }),
           py::arg("text"), py::arg("render_globals") = py::none(), py::arg("name") = "module")
      .def_static(
          "from_snippet",
          [](const Snippet& s, std::vector<std::string> args, std::string name) {
            return Module::from_snippet(s, std::move(args), std::move(name));
          },
          py::arg("snippet"), py::arg("args") = std::vector<std::string>{}, py::arg("name") = "")
      .def_property_readonly("name", &Module::name);
  m.def(
      "render",
      [](const std::string& text, const py::object& render_globals, const std::string& name) {
        return skein::render(text, to_render_globals(render_globals), name);
      },
      py::arg("text"), py::arg("render_globals") = py::none(),
      py::arg("template_name") = "<source>",
      "Renders a template (Mako's syntax, the part a kernel writer needs): the modules' code, then "
      "the text.");
  m.def(
      "compile",
      [](const Context& context, const std::string& source, std::size_t device_idx,
         const py::object& compiler_options, bool fast_math, bool no_prelude,
         const std::string& target, const std::string& arch, const std::string& name,
         const py::object& message_handler) {
        ProgramOptions o =
            program_options(compiler_options, fast_math, no_prelude, py::none(), false, name);
        set_jit(o, py::none(), message_handler);
        CompileTarget t;
        if (target == "ptx") {
          t.format = BinaryFormat::ptx;
        } else if (target != "native" && target != "cubin") {
          throw py::value_error("target must be 'native' (or 'cubin') or 'ptx', not '" + target +
                                "'");
        }
        t.arch = arch;
        const auto bytes = skein::compile(context, device_idx, source, o, t);
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      },
      py::arg("context"), py::arg("source"), py::arg("device_idx") = 0,
      py::arg("compiler_options") = py::none(), py::arg("fast_math") = false,
      py::arg("no_prelude") = false, py::arg("target") = "native", py::arg("arch") = "",
      py::arg("name") = "skein_program", py::arg("message_handler") = py::none(),
      "PyCUDA's compiler.compile(): `source` (rendered) compiled for one device without loading, "
      "as bytes for Program.from_binary: target 'native' (CUDA: a CUBIN; OpenCL: the device's "
      "binary) or 'ptx' (CUDA); arch: CUDA's 'sm_XY' / 'compute_XY' (default the device's).");
  m.def("literal", py::overload_cast<double>(&skein::literal), py::arg("value"),
        "A C literal of the exact value (double).");

  auto f = m.def_submodule("functions", "Arithmetic over real and complex dtypes as modules.");
  const auto dts = [](const py::object& o) {
    std::vector<Dtype> out;
    for (const auto d : o) out.push_back(to_dtype(d, "skein.functions"));
    return out;
  };
  const auto opt = [](const py::object& o) {
    return o.is_none() ? std::nullopt : std::optional<Dtype>(to_dtype(o, "skein.functions"));
  };
  f.def(
      "add",
      [=](const py::object& in, const py::object& out) {
        return functions::add(dts(in), opt(out));
      },
      py::arg("in_dtypes"), py::arg("out_dtype") = py::none());
  f.def(
      "mul",
      [=](const py::object& in, const py::object& out) {
        return functions::mul(dts(in), opt(out));
      },
      py::arg("in_dtypes"), py::arg("out_dtype") = py::none());
  f.def(
      "div",
      [=](const py::object& a, const py::object& b, const py::object& out) {
        return functions::div(*opt(a), *opt(b), opt(out));
      },
      py::arg("dividend"), py::arg("divisor"), py::arg("out_dtype") = py::none());
  f.def(
      "cast",
      [=](const py::object& a, const py::object& b) { return functions::cast(*opt(a), *opt(b)); },
      py::arg("from_dtype"), py::arg("to_dtype"));
  using One = Module (*)(Dtype);
  for (const auto& [name, fn] : {std::pair<const char*, One>{"conj", &functions::conj},
                                 {"exp", &functions::exp},
                                 {"polar", &functions::polar},
                                 {"polar_unit", &functions::polar_unit},
                                 {"norm", &functions::norm}}) {
    f.def(
        name, [=](const py::object& d) { return fn(*opt(d)); }, py::arg("dtype"));
  }
}

}  // namespace

void bind_kernels(py::module_& m) {
  bind_templates(m);
  bind_program(m);
  bind_kernel(m);
  bind_static_kernel(m);
  bind_generated_kernels(m);
  bind_stencil_kernels(m);
}

}  // namespace skein::python
