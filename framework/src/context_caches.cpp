// SPDX-License-Identifier: BSD-3-Clause
// Per-context caches: the registry of live contexts, ContextMemo's tables and
// clear_context_caches() (skein/context.hpp, skein/context_memo.hpp).
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "codegen/programs.hpp"
#include "skein/context.hpp"
#include "skein/context_memo.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

namespace detail {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<Context::Impl>> contexts;
};

Registry& registry() {
  // Never destroyed: contexts held in static storage go after a function-local static would.
  static auto* r = new Registry;
  return *r;
}

std::atomic<std::uint64_t> next_memo{1};

}  // namespace

void register_context(const std::shared_ptr<Context::Impl>& impl) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.contexts, [](const auto& w) { return w.expired(); });
  r.contexts.emplace_back(impl);
}

std::vector<std::shared_ptr<Context::Impl>> live_contexts() {
  auto& r = registry();
  std::vector<std::shared_ptr<Context::Impl>> result;
  std::lock_guard lock(r.mutex);
  for (const auto& w : r.contexts) {
    if (auto c = w.lock()) result.push_back(std::move(c));
  }
  return result;
}

std::uint64_t new_memo_id() { return next_memo.fetch_add(1); }

std::shared_ptr<MemoTable> memo_table(const Context& context, std::uint64_t memo,
                                      std::shared_ptr<MemoTable> (*make)()) {
  auto& impl = *impl_of(context);
  std::lock_guard lock(impl.memos_mutex);
  auto& table = impl.memos[memo];
  if (!table) table = make();
  return table;
}

std::shared_ptr<MemoTable> find_memo_table(const Context& context, std::uint64_t memo) {
  auto& impl = *impl_of(context);
  std::lock_guard lock(impl.memos_mutex);
  auto it = impl.memos.find(memo);
  return it == impl.memos.end() ? nullptr : it->second;
}

void drop_memo_tables(const Context* context, std::uint64_t memo) noexcept {
  // The values are released after the locks: they may hold contexts, whose last release runs
  // their destructors (and drops their own tables).
  std::vector<std::shared_ptr<MemoTable>> dropped;
  auto drop_from = [&](Context::Impl& impl) {
    std::lock_guard lock(impl.memos_mutex);
    if (auto it = impl.memos.find(memo); it != impl.memos.end()) {
      dropped.push_back(std::move(it->second));
      impl.memos.erase(it);
    }
  };
  try {
    if (context) {
      drop_from(*impl_of(*context));
    } else {
      for (const auto& c : live_contexts()) drop_from(*c);
    }
  } catch (...) {
    // Only allocation can fail here; the tables then stay until their contexts go.
  }
}

}  // namespace detail

void clear_context_caches() {
  // Declared first, released last: the dropped values may hold the only other references.
  const auto contexts = detail::live_contexts();
  std::vector<
      std::map<std::pair<std::size_t, std::string>, std::shared_ptr<detail::ProgramAdapter>>>
      programs;
  std::vector<std::map<std::uint64_t, std::shared_ptr<detail::MemoTable>>> memos;
  for (const auto& c : contexts) {
    {
      std::lock_guard lock(c->programs_mutex);
      programs.push_back(std::exchange(c->programs, {}));
    }
    std::lock_guard lock(c->memos_mutex);
    memos.push_back(std::exchange(c->memos, {}));
  }
  detail::codegen::drop_all_cached_programs();
}

std::size_t loaded_programs(const Context& context) {
  auto& impl = *detail::impl_of(context);
  std::lock_guard lock(impl.programs_mutex);
  return impl.programs.size();
}

}  // namespace skein
