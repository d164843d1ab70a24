# SPDX-License-Identifier: BSD-3-Clause
"""CuPy and Skein on the same GPU memory: a CuPy array into Skein without a copy (the same device
pointer), Skein's work on it, and the result back into CuPy, again without a copy.

    python3 cupy_interop.py        (needs CuPy and a CUDA device; exits 0 when the checks pass)
"""

import numpy

import skein

try:
    import cupy
except ImportError:
    raise SystemExit("cupy_interop.py needs CuPy (pip install cupy-cuda12x) and a CUDA device")

x = cupy.arange(6 * 8, dtype=cupy.float32).reshape(6, 8)

# CuPy -> Skein: DLPack, no copy. Without queue=, Skein uses its default queue of the array's
# device; x's pending CuPy work is ordered before Skein's (the protocol's stream exchange).
s = skein.from_dlpack(x)
pointer = s.__cuda_array_interface__["data"][0]
assert pointer == x.data.ptr, "Skein's array is not over CuPy's memory"

# Skein's work on CuPy's memory: a transposing device copy into a new Skein array, and a write
# through a strided view into x itself.
t = skein.Array.empty(s.queue, (8, 6), numpy.float32)
t.set(s.T)
s[::2, 1].set(numpy.full(3, -1, numpy.float32))
# CuPy reads x next, on its own stream, which knows nothing of Skein's queue: wait for it.
s.queue.synchronize()

# Skein -> CuPy: DLPack again (or cupy.asarray(t), through __cuda_array_interface__), no copy.
# CuPy's stream waits for Skein's queue: no synchronisation by hand.
y = cupy.from_dlpack(t)
assert y.data.ptr == t.__cuda_array_interface__["data"][0]
expect = numpy.arange(48, dtype=numpy.float32).reshape(6, 8)
assert numpy.array_equal(cupy.asnumpy(y), expect.T)
expect[::2, 1] = -1
assert numpy.array_equal(cupy.asnumpy(x), expect)  # Skein wrote into CuPy's array
print(f"cupy_interop: OK (CuPy's pointer {pointer:#x} used by Skein without a copy)")
