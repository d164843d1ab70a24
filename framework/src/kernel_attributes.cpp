// SPDX-License-Identifier: BSD-3-Clause
// What a compiled kernel says of itself and the settings it takes (pygpu's preflsize and numargs,
// PyCUDA's Function.get_attribute, set_attribute, set_cache_config and set_shared_config).
#include <fmt/format.h>

#include <cctype>
#include <string>
#include <string_view>

#include "kernel_impl.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/kernel_source.hpp"

namespace skein {

const char* name(KernelAttribute attribute) {
  switch (attribute) {
    case KernelAttribute::max_threads_per_block: return "max_threads_per_block";
    case KernelAttribute::shared_size_bytes: return "shared_size_bytes";
    case KernelAttribute::const_size_bytes: return "const_size_bytes";
    case KernelAttribute::local_size_bytes: return "local_size_bytes";
    case KernelAttribute::num_regs: return "num_regs";
    case KernelAttribute::ptx_version: return "ptx_version";
    case KernelAttribute::binary_version: return "binary_version";
    case KernelAttribute::cache_mode_ca: return "cache_mode_ca";
    case KernelAttribute::max_dynamic_shared_size_bytes: return "max_dynamic_shared_size_bytes";
    case KernelAttribute::preferred_shared_memory_carveout:
      return "preferred_shared_memory_carveout";
  }
  return "unknown";
}

const char* name(SharedConfig config) {
  switch (config) {
    case SharedConfig::default_bank_size: return "default_bank_size";
    case SharedConfig::four_byte_bank_size: return "four_byte_bank_size";
    case SharedConfig::eight_byte_bank_size: return "eight_byte_bank_size";
  }
  return "unknown";
}

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `word` is in `text` as a whole word (KERNEL, not WITHIN_KERNEL).
bool has_name_word(std::string_view text, std::string_view word) {
  for (std::size_t at = text.find(word); at != std::string_view::npos;
       at = text.find(word, at + 1)) {
    const std::size_t end = at + word.size();
    if ((at == 0 || !is_name_char(text[at - 1])) &&
        (end == text.size() || !is_name_char(text[end]))) {
      return true;
    }
  }
  return false;
}

}  // namespace

long detail::count_source_params(std::string_view source, const std::string& name) {
  for (std::size_t pos = source.find(name); pos != std::string_view::npos;
       pos = source.find(name, pos + 1)) {
    const std::size_t end = pos + name.size();
    if ((pos > 0 && is_name_char(source[pos - 1])) ||
        (end < source.size() && is_name_char(source[end]))) {
      continue;
    }
    std::size_t open = end;
    while (open < source.size() && std::isspace(static_cast<unsigned char>(source[open]))) ++open;
    const std::size_t line = source.rfind('\n', pos);
    const std::size_t from = line == std::string_view::npos ? 0 : line + 1;
    const std::string_view before = source.substr(from, pos - from);
    if (open >= source.size() || source[open] != '(' ||
        (!has_name_word(before, "KERNEL") && !has_name_word(before, "__global__"))) {
      continue;
    }
    long commas = 0;
    std::string list;  // the parameter list without blanks
    int depth = 0;
    for (std::size_t i = open + 1; i < source.size(); ++i) {
      const char c = source[i];
      if (c == ')' && depth == 0) break;
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (c == ',' && depth == 0) ++commas;
      if (!std::isspace(static_cast<unsigned char>(c))) list += c;
    }
    return list.empty() || list == "void" ? 0 : commas + 1;
  }
  return -1;
}

std::size_t Kernel::preferred_local_size_multiple(std::size_t device_idx) const {
  return attributes(device_idx).preferred_local_size_multiple;
}

std::size_t Kernel::num_args() const {
  const std::size_t d = impl_->program.device_idxs().front();
  if (const auto& params = impl_->kernels[d]->params()) return params->size();
  const long count = detail::count_source_params(impl_->program.source(d), impl_->name);
  if (count < 0) {
    detail::raise_in(SKEIN_HERE, "Kernel::num_args",
                     "Use a driver of CUDA 12.4 or later (cuFuncGetParamInfo), or build the "
                     "program from source.",
                     "kernel '{}' on {}: the driver cannot count its parameters and the program "
                     "has no source declaring it",
                     impl_->name, impl_->program.context().device(d).description());
  }
  return static_cast<std::size_t>(count);
}

std::int64_t Kernel::get_attribute(std::size_t device_idx, KernelAttribute attribute) const {
  (void)attributes(device_idx);  // checks the device
  return impl_->kernels[device_idx]->get_attribute(attribute);
}

void Kernel::set_attribute(KernelAttribute attribute, std::int64_t value) const {
  for (std::size_t d : impl_->program.device_idxs()) {
    impl_->kernels[d]->set_attribute(attribute, value);
  }
}

void Kernel::set_cache_config(CacheConfig config) const {
  for (std::size_t d : impl_->program.device_idxs()) impl_->kernels[d]->set_cache_config(config);
}

void Kernel::set_shared_config(SharedConfig config) const {
  for (std::size_t d : impl_->program.device_idxs()) impl_->kernels[d]->set_shared_config(config);
}

}  // namespace skein
