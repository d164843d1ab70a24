// SPDX-License-Identifier: BSD-3-Clause
// SKEIN_EXPORT: the one macro that puts a symbol of Skein's libraries in their public interface.
//
// Skein's libraries (libskein_framework, libskein_comm, libskein_dist, libskein_io) are compiled
// with hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden): a class or function
// is visible outside its library only when it is marked SKEIN_EXPORT. Marked are every class and
// free function of the public headers that a library defines (templates and inline functions
// defined in the headers need no mark), and the functions of the internal interfaces that another
// Skein library or the tests call (framework/internal/, collectives/comm/internal/). Exception
// classes and classes with virtual functions must be marked when they cross a library: their
// typeinfo is what `catch` and dynamic_cast compare. A static variable of an inline function in
// a header that several libraries include is one per library, not one per process: process-wide
// state lives in one library behind an exported function.
//
// ELF only (Linux, GCC and Clang): this is `__attribute__((visibility("default")))`. Skein does
// not build DLLs; on a compiler without the attribute the macro is empty.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define SKEIN_EXPORT __attribute__((visibility("default")))
#else
#define SKEIN_EXPORT
#endif
