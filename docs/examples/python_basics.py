# SPDX-License-Identifier: BSD-3-Clause
"""Skein from Python: a context, a queue, arrays to and from NumPy, views, DLPack and an error.

    PYTHONPATH=<prefix>/lib/python3.11/site-packages python3 python_basics.py

Runs on the first API with a device (CUDA, else OpenCL: PoCL on a CPU); exits 0 when every check
passes."""

import numpy

import skein

api = skein.API.all_available()[0]  # grunnur: API.all_available()
context = skein.Context.from_criteria(api)  # grunnur: Context.from_criteria(api)
queue = skein.Queue(context)

host = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
a = skein.Array.from_host(queue, host)  # PyCUDA: gpuarray.to_gpu(host)
assert a.shape == (3, 4) and a.dtype == numpy.float32

# Views share the device memory, as NumPy's do.
row = a[1]
assert numpy.array_equal(row.get(), host[1])
assert numpy.array_equal(a.T.get(), host.T)
row.set(numpy.full(4, -1, numpy.float32))  # writes row 1 of `a`
host[1] = -1
assert numpy.array_equal(a.get(), host)

# DLPack: another view of the same memory (no copy), and a NumPy array in (copied to the device).
# skein.config says what this Skein was built with (DLPack needs dlpack.h at build time).
if skein.config["dlpack"]:
    b = skein.from_dlpack(a)
    assert numpy.array_equal(b.get(), host)
    c = skein.from_dlpack(numpy.ones(5, numpy.int64), queue)
    assert numpy.array_equal(c.get(), numpy.ones(5, numpy.int64))

# Errors are Python exceptions with Skein's messages; the data stays usable.
try:
    a.set(numpy.zeros((2, 2), numpy.float32))
except skein.LogicError as e:  # also a ValueError
    print("refused:", e)
assert numpy.array_equal(a.get(), host)
print(f"python_basics: OK on {api.shortcut}")
