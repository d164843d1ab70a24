// SPDX-License-Identifier: BSD-3-Clause
// LeakSanitizer and MPI's own start and end. Open MPI keeps much of what MPI_Init and
// MPI_Finalize allocate until the process exits (component tables, strings, topology), by design.
// Under LeakSanitizer those blocks are reported as leaks, and suppressing them by library
// (tests/lsan.supp) needs full stacks through Open MPI's frames, which have no frame pointers: the
// slow unwinder on every malloc doubled the sanitizer run of the MPI suite (collectives.np1: 73 s
// with fast unwinding, 156 s with full stacks). Instead, what the calling thread allocates inside
// those two calls is left out of the leak check: a LeakCheckPause around them. Everything else,
// Skein's own allocations included, is still checked. Without LeakSanitizer this is nothing.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_LEAK__)
#define SKEIN_DETAIL_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define SKEIN_DETAIL_LSAN 1
#endif
#endif

#if defined(SKEIN_DETAIL_LSAN)
#include <sanitizer/lsan_interface.h>
#endif

namespace skein::detail {

class LeakCheckPause {
 public:
#if defined(SKEIN_DETAIL_LSAN)
  LeakCheckPause() { __lsan_disable(); }
  ~LeakCheckPause() { __lsan_enable(); }
#else
  // User-provided, so that a LeakCheckPause is never an "unused variable".
  LeakCheckPause() {}
  ~LeakCheckPause() {}
#endif
  LeakCheckPause(const LeakCheckPause&) = delete;
  LeakCheckPause& operator=(const LeakCheckPause&) = delete;
};

}  // namespace skein::detail
