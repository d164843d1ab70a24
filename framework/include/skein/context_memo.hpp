// SPDX-License-Identifier: BSD-3-Clause
// Values computed once per context (PyCUDA's tools.context_dependent_memoize): typically kernels
// built for a context, which a code would otherwise build again on every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "skein/context.hpp"
#include "skein/export.hpp"

namespace skein {

namespace detail {

// One ContextMemo's values in one context. The tables live in the context's shared state, so they
// go when the context goes.
struct MemoTable {
  virtual ~MemoTable() = default;
};

SKEIN_EXPORT std::uint64_t new_memo_id();
// The table of memo `memo` in `context`, made by `make` when the context has none yet.
// Threads: locked per context.
SKEIN_EXPORT std::shared_ptr<MemoTable> memo_table(const Context& context, std::uint64_t memo,
                                                   std::shared_ptr<MemoTable> (*make)());
// The table if the context has one, else null.
SKEIN_EXPORT std::shared_ptr<MemoTable> find_memo_table(const Context& context, std::uint64_t memo);
// Drops memo `memo`'s table from `context`, or (context null) from every live context.
SKEIN_EXPORT void drop_memo_tables(const Context* context, std::uint64_t memo) noexcept;

}  // namespace detail

// A function of a context and keys whose results are kept per context and per keys: the first
// call with a context and keys calls the function, later calls with the same return its value
// again (a copy: hold values that are cheap handles, such as Program, Kernel, ElementwiseKernel,
// or a std::shared_ptr). Keys must be ordered by operator< (std::map). Example:
//   static const skein::ContextMemo<skein::Program, int> scale_program(
//       [](const skein::Context& c, const int& n) { return skein::Program(c, source_for(n)); });
//   const skein::Program p = scale_program(context, 4);  // compiled once per context and n
//
// Values are dropped when their context is destroyed (they live in its shared state), when the
// memo is cleared or destroyed, and by skein::clear_context_caches(). A value that holds its own
// context (a Program, Kernel or array does) keeps the context alive while the value is kept, as
// PyCUDA's memo holds its contexts: clear() or clear_context_caches() releases both.
//
// Threads: calls may come from any number of threads at once. The function is called without a
// lock held (it may use other memos, or this one with other keys); two threads asking at once for
// a key not yet computed may both call it, and both get the value stored first. An exception from
// the function propagates and stores nothing.
template <class Value, class... Keys>
class ContextMemo {
 public:
  using Function = std::function<Value(const Context&, const Keys&...)>;

  explicit ContextMemo(Function function)
      : function_(std::move(function)), id_(detail::new_memo_id()) {}
  ~ContextMemo() { detail::drop_memo_tables(nullptr, id_); }
  ContextMemo(const ContextMemo&) = delete;
  ContextMemo& operator=(const ContextMemo&) = delete;

  // The value for (context, keys), computed on first use.
  Value operator()(const Context& context, const Keys&... keys) const {
    auto table = std::static_pointer_cast<Table>(detail::memo_table(context, id_, &make_table));
    std::tuple<Keys...> key(keys...);
    {
      std::lock_guard lock(table->mutex);
      if (auto it = table->values.find(key); it != table->values.end()) return it->second;
    }
    Value value = function_(context, keys...);
    std::lock_guard lock(table->mutex);
    return table->values.emplace(std::move(key), std::move(value)).first->second;
  }

  // The number of values kept for the context.
  std::size_t size(const Context& context) const {
    auto table = std::static_pointer_cast<Table>(detail::find_memo_table(context, id_));
    if (!table) return 0;
    std::lock_guard lock(table->mutex);
    return table->values.size();
  }
  // Drops the values kept for one context, or for every context.
  void clear(const Context& context) const { detail::drop_memo_tables(&context, id_); }
  void clear() const { detail::drop_memo_tables(nullptr, id_); }

 private:
  struct Table : detail::MemoTable {
    std::mutex mutex;
    std::map<std::tuple<Keys...>, Value> values;
  };
  static std::shared_ptr<detail::MemoTable> make_table() { return std::make_shared<Table>(); }

  Function function_;
  std::uint64_t id_;
};

}  // namespace skein
