// SPDX-License-Identifier: BSD-3-Clause
// Kernel signatures read from a program's source, and Python arguments packed for a launch
// (kernel_signature.hpp). Packing is on the path of every kernel call from Python, so it makes no
// Python objects and asks NumPy nothing for arrays and Python numbers.
#include <cctype>
#include <map>
#include <string>
#include <string_view>

#include "kernel_signature.hpp"
#include "operands.hpp"

namespace skein::python {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// The dtype of a scalar parameter's C type (qualifiers already removed), as the backends' preludes
// define the names (OpenCL's long is 64 bits, as is CUDA's on the 64-bit hosts Skein supports).
std::optional<Dtype> c_type_dtype(const std::string& type) {
  static const std::map<std::string, Dtype, std::less<>> types = {
      {"float", Dtype::float32},
      {"double", Dtype::float64},
      {"half", Dtype::float16},
      {"skein_float16", Dtype::float16},
      {"skein_bfloat16", Dtype::bfloat16},
      {"skein_complex64", Dtype::complex64},
      {"skein_complex128", Dtype::complex128},
      {"char", Dtype::int8},
      {"signed char", Dtype::int8},
      {"int8_t", Dtype::int8},
      {"unsigned char", Dtype::uint8},
      {"uchar", Dtype::uint8},
      {"uint8_t", Dtype::uint8},
      {"short", Dtype::int16},
      {"int16_t", Dtype::int16},
      {"unsigned short", Dtype::uint16},
      {"ushort", Dtype::uint16},
      {"uint16_t", Dtype::uint16},
      {"int", Dtype::int32},
      {"signed", Dtype::int32},
      {"signed int", Dtype::int32},
      {"int32_t", Dtype::int32},
      {"unsigned", Dtype::uint32},
      {"unsigned int", Dtype::uint32},
      {"uint", Dtype::uint32},
      {"uint32_t", Dtype::uint32},
      {"long", Dtype::int64},
      {"long long", Dtype::int64},
      {"long int", Dtype::int64},
      {"int64_t", Dtype::int64},
      {"unsigned long", Dtype::uint64},
      {"unsigned long long", Dtype::uint64},
      {"ulong", Dtype::uint64},
      {"uint64_t", Dtype::uint64},
      {"VSIZE_T", Dtype::uint64},
  };
  const auto it = types.find(type);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

KernelParam parse_param(const std::string& text) {
  KernelParam p;
  if (text.find('*') != std::string::npos || text.find('[') != std::string::npos) {
    p.pointer = true;
  }
  // Words: the last is the name, the others the type less its qualifiers.
  std::vector<std::string> words;
  std::string word;
  for (const char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  if (words.empty()) return p;
  p.name = words.back();
  words.pop_back();
  std::string type;
  for (const auto& w : words) {
    if (w == "const" || w == "volatile" || w == "restrict" || w == "RESTRICT" ||
        w == "__restrict__" || w == "__private" || w == "private") {
      continue;
    }
    type += (type.empty() ? "" : " ") + w;
  }
  if (!p.pointer) p.dtype = c_type_dtype(type);
  return p;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::optional<std::vector<KernelParam>> parse_kernel_signature(const std::string& source,
                                                               const std::string& name) {
  // `void NAME (` preceded by a kernel qualifier.
  std::size_t pos = 0;
  while ((pos = source.find(name, pos)) != std::string::npos) {
    const std::size_t end = pos + name.size();
    const bool whole = (pos == 0 || !is_word_char(source[pos - 1])) &&
                       (end == source.size() || !is_word_char(source[end]));
    std::size_t open = end;
    while (open < source.size() && std::isspace(static_cast<unsigned char>(source[open]))) ++open;
    const std::size_t line_start = source.rfind('\n', pos);
    const std::string_view before(
        source.data() + (line_start == std::string::npos ? 0 : line_start),
        pos - (line_start == std::string::npos ? 0 : line_start));
    if (whole && open < source.size() && source[open] == '(' &&
        before.find("void") != std::string_view::npos &&
        (before.find("KERNEL") != std::string_view::npos ||
         before.find("__kernel") != std::string_view::npos ||
         before.find("__global__") != std::string_view::npos ||
         before.find("kernel ") != std::string_view::npos)) {
      // The parameter list up to the matching parenthesis, split at top-level commas.
      std::vector<std::string> texts;
      std::string current;
      int depth = 0;
      std::size_t i = open + 1;
      for (; i < source.size(); ++i) {
        const char c = source[i];
        if (c == '(') ++depth;
        if (c == ')') {
          if (depth == 0) break;
          --depth;
        }
        if (c == ',' && depth == 0) {
          texts.push_back(current);
          current.clear();
        } else {
          current += c;
        }
      }
      if (!trim(current).empty()) texts.push_back(current);
      std::vector<KernelParam> params;
      for (auto& t : texts) {
        // Dynamic local memory: no argument (on OpenCL the macro adds a __local parameter that
        // the launch fills; on CUDA it is empty).
        const auto macro = t.find("LOCAL_MEM_DYNAMIC_PARAM");
        if (macro != std::string::npos) t = t.substr(0, macro);
        if (trim(t).empty() || trim(t) == "void") continue;
        if (t.find("__local") != std::string::npos || t.find("LOCAL_MEM") != std::string::npos) {
          continue;
        }
        KernelParam p = parse_param(t);
        if (p.name.starts_with("_skein_off_")) continue;  // OpenCL: the offset of a view
        if (p.name.starts_with("_skein_base_")) p.name = p.name.substr(12);
        params.push_back(std::move(p));
      }
      return params;
    }
    pos = end;
  }
  return std::nullopt;
}

std::vector<detail::KernelArg> pack_kernel_args(
    const std::optional<std::vector<KernelParam>>& signature, const std::string& kernel,
    const py::args& args, std::size_t device_idx, std::span<ScalarSlot> slots) {
  static constexpr const char* call = "Kernel.__call__";
  const std::size_t n = args.size();
  if (signature && signature->size() != n) {
    raise_argument(call,
                   "kernel '" + kernel + "' takes " + std::to_string(signature->size()) +
                       " argument(s), " + std::to_string(n) + " were given",
                   "Pass one argument per kernel parameter.");
  }
  std::vector<detail::KernelArg> packed(n);
  for (std::size_t i = 0; i < n; ++i) {
    py::handle a = args[i];
    if (PyList_Check(a.ptr())) {  // one value per device
      const auto size = static_cast<std::size_t>(PyList_GET_SIZE(a.ptr()));
      if (device_idx >= size) {
        raise_argument(call,
                       "argument " + std::to_string(i) + " of kernel '" + kernel +
                           "' is a list of " + std::to_string(size) +
                           " per-device values; device " + std::to_string(device_idx) + " has none",
                       "Give a list indexed by device_idx, with a value for each device of the "
                       "queue.");
      }
      a = PyList_GET_ITEM(a.ptr(), static_cast<py::ssize_t>(device_idx));
    }
    const KernelParam* param = signature ? &(*signature)[i] : nullptr;
    const auto where = [&] {
      return "argument " + std::to_string(i) +
             (param ? " ('" + param->name + "')" : std::string()) + " of kernel '" + kernel + "'";
    };
    if (py::isinstance<Array>(a)) {
      const auto& array = py::cast<const Array&>(a);
      if (param && !param->pointer) {
        raise_argument(call, where() + " is a scalar parameter; an array was given",
                       "Pass a number of the parameter's type.");
      }
      if (array.device_idx() != device_idx) {
        raise_argument(call,
                       where() + ": the array is on device " + std::to_string(array.device_idx()) +
                           ", the launch on device " + std::to_string(device_idx),
                       "Give each device an array of its own (a list indexed by device_idx), or "
                       "copy the array to this device.");
      }
      packed[i] = detail::make_kernel_arg(array);
      continue;
    }
    if (py::isinstance<Buffer>(a)) {
      if (param && !param->pointer) {
        raise_argument(call, where() + " is a scalar parameter; a buffer was given",
                       "Pass a number of the parameter's type.");
      }
      packed[i] = detail::make_kernel_arg(py::cast<const Buffer&>(a));
      continue;
    }
    if (py::isinstance<HostArg>(a)) {
      const auto& host = py::cast<const HostArg&>(a);
      if (param && !param->pointer) {
        raise_argument(call, where() + " is a scalar parameter; a skein.In / Out / InOut was given",
                       "Pass a number of the parameter's type.");
      }
      packed[i] = detail::KernelArg{.kind = host.kind,
                                    .size = static_cast<std::size_t>(host.array.nbytes()),
                                    .value = host.array.data()};
      continue;
    }
    if (param && param->pointer) {
      raise_argument(
          call,
          where() + " is a pointer; a " + std::string(Py_TYPE(a.ptr())->tp_name) + " was given",
          "Pass a skein.Array, a skein.Buffer, or host memory as skein.In / Out / InOut.");
    }
    const Operand value = to_operand(a, call, where());
    std::optional<Dtype> dtype = param ? param->dtype : std::nullopt;
    if (!dtype) {
      if (value.weak()) {
        raise_argument(call,
                       where() +
                           ": the parameter's type is not known here, so a Python number "
                           "cannot be converted to it",
                       "Pass a NumPy scalar of the parameter's type, e.g. numpy.int32(3) or "
                       "numpy.float32(1.5).");
      }
      dtype = value.dtype();
    }
    const std::size_t size = value.bytes_into(*dtype, std::span<std::byte, 16>(slots[i]), where());
    packed[i] = detail::KernelArg{
        .kind = detail::KernelArg::Kind::scalar, .size = size, .value = slots[i].data()};
  }
  return packed;
}

}  // namespace skein::python
