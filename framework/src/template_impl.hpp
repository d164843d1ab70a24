// SPDX-License-Identifier: BSD-3-Clause
// What Snippets and Modules hold, and the renderer's access to the values' insides
// (skein/template.hpp is the interface; template_render.cpp renders).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skein/template.hpp"

namespace skein::detail {

struct SnippetImpl {
  std::string name;
  std::vector<std::string> params;
  std::string text;  // used when there is no callable
  Snippet::Callable callable;
  std::size_t arity = 0;
  RenderGlobals globals;
};

struct ModuleImpl {
  std::string name;
  std::shared_ptr<const SnippetImpl> snippet;  // its first parameter receives the prefix
  std::vector<std::string> args;               // the other parameters, fixed at construction
};

struct RenderAccess {
  static const std::string& text(const RenderValue& v) { return v.text_; }
  static const std::optional<std::int64_t>& integer(const RenderValue& v) { return v.integer_; }
  static const std::shared_ptr<const SnippetImpl>& snippet(const RenderValue& v) {
    return v.snippet_;
  }
  static const std::shared_ptr<const ModuleImpl>& module(const RenderValue& v) { return v.module_; }
  static const std::shared_ptr<const RenderList>& list(const RenderValue& v) { return v.list_; }
  static const std::shared_ptr<const SnippetImpl>& impl(const Snippet& s) { return s.impl_; }
  static const std::shared_ptr<const ModuleImpl>& impl(const Module& m) { return m.impl_; }
  static Snippet make_snippet(std::shared_ptr<const SnippetImpl> impl) {
    return Snippet(std::move(impl));
  }
  static Module make_module(std::shared_ptr<const ModuleImpl> impl) {
    return Module(std::move(impl));
  }
};

}  // namespace skein::detail
