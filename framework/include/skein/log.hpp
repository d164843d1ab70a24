// SPDX-License-Identifier: BSD-3-Clause
// Skein's one log: every line its libraries print goes through here, with a level and a scope.
//
// Levels, from the fewest lines to the most: off, error, warning, info, debug. A message is
// printed when its level is at or above the one in effect (warning by default: errors that could
// not be raised, such as a failure while releasing resources in a destructor, and notes about the
// configuration). The level in effect is SKEIN_LOG_LEVEL when the variable is set (off, error,
// warning, info or debug), else the one given in code (set_log_level(), RuntimeOptions::log_level),
// else warning: the variable overrides the code, so that a job script can silence or widen the
// log without a rebuild. The variable is read, and a bad value refused with LogicError naming it,
// when a Context or a Runtime is made; reading it never throws from a message.
//
// Every line starts "skein: ", then the rank's prefix once a Runtime knows it ("rank 3: ", as in
// Skein's error messages; also set by a Communicator made without a Runtime), then the message.
// Scopes say who prints: LogScope::rank, what only this rank has to say (an error one rank saw, a
// deleter that threw), is printed by the rank that has it; LogScope::collective, what every rank
// would say alike (a note on a configuration the ranks agreed on), by rank 0 alone (by every
// process while no rank is known). Reports asked for by a switch (SKEIN_PROFILE_COLLECTIVES,
// ProgramOptions::keep) are logged at warning, so that they show at the default level.
//
// The sink: by default each line goes to stderr in one write(), so that the lines of ranks that
// share a terminal or a pipe do not interleave mid-line. set_log_sink() replaces it, e.g. to hand
// the lines to an application's own logger.
//
// Threads: every function here may be called from any thread at once. The sink is called with a
// lock held, one line at a time; it must not call these functions itself, and what it throws is
// dropped (a message may come from a destructor).
#pragma once

#include <functional>
#include <string_view>

#include "skein/export.hpp"

namespace skein {

enum class LogLevel { off, error, warning, info, debug };
SKEIN_EXPORT std::string_view name(LogLevel level);

enum class LogScope {
  rank,        // printed by the rank that logs it
  collective,  // the same on every rank: printed by rank 0 alone
};

// Receives each line that is printed: its level, and the whole line without its newline
// ("skein: rank 3: ...").
using LogSink = std::function<void(LogLevel level, std::string_view line)>;

// The level given in code. SKEIN_LOG_LEVEL, when set, still overrides it.
SKEIN_EXPORT void set_log_level(LogLevel level);
// The level in effect (the variable's, else the code's, else warning).
SKEIN_EXPORT LogLevel log_level();
// Whether a message of `level` would be printed (on a rank that prints it).
SKEIN_EXPORT bool log_enabled(LogLevel level);
// Replaces the sink and returns the previous one; an empty sink puts back the default (stderr).
SKEIN_EXPORT LogSink set_log_sink(LogSink sink);
// Logs one message (one line: a newline inside it is kept). Never throws.
SKEIN_EXPORT void log_message(LogLevel level, std::string_view message,
                              LogScope scope = LogScope::rank) noexcept;

}  // namespace skein
