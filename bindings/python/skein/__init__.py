# SPDX-License-Identifier: BSD-3-Clause
"""Skein from Python: multi-device GPU arrays, kernels and collectives over CUDA and OpenCL.

The names follow grunnur's (and pygpu's and PyCUDA's where they carry over):

    import numpy, skein
    api = skein.API.all_available()[0]
    context = skein.Context.from_criteria(api)
    queue = skein.Queue(context)
    a = skein.Array.from_host(queue, numpy.arange(10, dtype=numpy.float32))
    print(a.get())

Other libraries' device arrays pass in and out without a copy: skein.from_dlpack(x) takes CuPy's,
PyTorch's, JAX's (DLPack) and, on CUDA, objects with __cuda_array_interface__; a skein.Array has
__dlpack__, __dlpack_device__ and, on CUDA, __cuda_array_interface__ (cupy.from_dlpack(a),
torch.from_dlpack(a)). NumPy arrays are copied (Array.from_host, Array.get, or from_dlpack with a
queue).

Everything is a thin layer over Skein's C++ library (the extension module skein._skein); errors
are the classes of skein.errors, with the C++ library's messages. The guide's "From Python"
(docs/guide.md) has the rest.
"""

from . import errors
from .errors import *  # noqa: F401,F403 (the error classes are part of the package's API)
from ._skein import *  # noqa: F401,F403
from ._skein import __version__  # noqa: F401
from ._skein import _ContextMemo


def _group(self):
    """``with comm.group(): ...``: group_start() before the block and group_end() after it, also
    when the block raises (an open group would make every later collective of the communicator
    refuse to run)."""
    return _Group(self)


class _Group:
    def __init__(self, comm):
        self._comm = comm

    def __enter__(self):
        self._comm.group_start()
        return self._comm

    def __exit__(self, *exc):
        self._comm.group_end()
        return False


Communicator.group = _group  # noqa: F405 (from ._skein)


def context_dependent_memoize(func):
    """PyCUDA's ``context_dependent_memoize``: a decorator for ``func(context, *args)`` that keeps
    its results per context and per ``args`` (which must be hashable), typically kernels built
    for a context. Skein has no current context, so the context is the first argument.

    The values live in the context's shared state: they go when the context goes, with
    ``wrapper.clear(context=None)`` (one context, or all), and with ``skein.clear_context_caches()``.
    A value that holds its context (a Program, an Array) keeps the context alive until then, as
    PyCUDA's memo holds its contexts.
    """
    import functools

    memo = _ContextMemo()

    @functools.wraps(func)
    def wrapper(context, *args):
        table = memo.table(context)
        try:
            return table[args]
        except KeyError:
            pass
        value = func(context, *args)
        return table.setdefault(args, value)

    wrapper.clear = memo.clear
    wrapper._memo = memo
    return wrapper


def _program_from_template(context, template, render_args=(), **kwargs):
    """grunnur's ``Program(context, template, render_args=...)``: ``template`` is a Snippet whose
    parameters take ``render_args`` (each turned into its text: ``str(x)``; a Snippet's parameters
    are strings, as a def's are), rendered, then compiled with Program's other keywords."""
    source = render_snippet(template, [str(a) for a in render_args])  # noqa: F405 (from ._skein)
    return Program(context, source, **kwargs)  # noqa: F405


Program.from_template = staticmethod(_program_from_template)  # noqa: F405
