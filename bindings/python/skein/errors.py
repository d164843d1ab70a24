# SPDX-License-Identifier: BSD-3-Clause
"""Skein's errors in Python, one class for each of the C++ library's exception types.

Every class derives from skein.Error and from the built-in exception a Python program would catch
for the same cause (a wrong argument is a ValueError, a timeout a TimeoutError, an allocation that
failed a MemoryError), so that code written for either keeps working. The message is the C++
exception's own (what was wrong, the call, the rank and device, what to do); the attributes carry
its parts: ``call``, ``code``, ``code_name``, ``device``, ``hint`` (empty strings or 0 when the
library did not set them).
"""

import builtins


class Error(Exception):
    """Any error raised by Skein (skein::Error)."""

    call = ""
    code = 0
    code_name = ""
    device = ""
    hint = ""


class LogicError(Error, builtins.ValueError):
    """A wrong call: a size, dtype, device, root, layout or value that does not fit (skein::LogicError)."""


class RuntimeError(Error, builtins.RuntimeError):  # pylint: disable=redefined-builtin
    """A failure of the machine, the driver or another rank (skein::RuntimeError)."""


class ApiUnavailableError(RuntimeError):
    """The API asked for (CUDA or OpenCL) is not usable here (skein::ApiUnavailableError)."""


class MemoryError(Error, builtins.MemoryError):  # pylint: disable=redefined-builtin
    """An allocation failed (skein::MemoryError); ``requested`` and ``available`` are in bytes."""

    requested = 0
    available = 0


class LaunchError(Error):
    """A kernel launch failed (skein::LaunchError)."""


class CompileError(Error):
    """A kernel source did not compile (skein::CompileError): ``log``, ``source``, ``options``."""

    log = ""
    source = ""
    options = ""


class RenderError(LogicError):
    """A kernel template did not render (skein::RenderError)."""


class TimeoutError(RuntimeError, builtins.TimeoutError):  # pylint: disable=redefined-builtin
    """A collective, I/O step or agreement check did not complete in time (skein::TimeoutError)."""


class CheckpointError(RuntimeError):
    """A checkpoint could not be written, found or verified (skein::CheckpointError)."""


__all__ = ["Error", "LogicError", "RuntimeError", "ApiUnavailableError", "MemoryError",
           "LaunchError", "CompileError", "RenderError", "TimeoutError", "CheckpointError"]
