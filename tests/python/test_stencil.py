# SPDX-License-Identifier: BSD-3-Clause
"""skein.StencilKernel on one block (the distributed form is tested under mpirun, tests/python/mpi),
against NumPy's slicing of the same padded array."""

import numpy
import pytest

import skein

LAPLACE = skein.StencilKernel(
    "T u, T a", "T out",
    "out = u(0, 0) + a * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) - 4 * u(0, 0))",
    name="laplace", reduction=skein.StencilReduction(map="out * out", dtype="float64"))


def padded(shape, seed=1):
    rng = numpy.random.default_rng(seed)
    return rng.standard_normal((shape[0] + 2, shape[1] + 2))


def reference(u, a):
    c = u[1:-1, 1:-1]
    return c + a * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * c)


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (33, 17)])
def test_a_five_point_stencil_on_a_block_with_a_halo(queue, shape):
    host = padded(shape)
    u = skein.Array.from_host(queue, host)
    out = skein.Array.zeros(queue, shape, numpy.float64)
    LAPLACE(queue, u[1:-1, 1:-1], 0.1, out, domain=shape, halo=(1, 1))
    expected = reference(host, 0.1)
    numpy.testing.assert_allclose(out.get(), expected, rtol=1e-13, atol=1e-13)
    # interior and edges together are all: the edges of a zeroed output, then its interior.
    out.fill_zero()
    LAPLACE(queue, u[1:-1, 1:-1], 0.1, out, domain=shape, halo=(1, 1), region="edges")
    LAPLACE(queue, u[1:-1, 1:-1], 0.1, out, domain=shape, halo=(1, 1), region="interior")
    numpy.testing.assert_allclose(out.get(), expected, rtol=1e-13, atol=1e-13)


def test_the_stencils_reduction_in_the_same_pass(queue):
    shape = (9, 6)
    host = padded(shape, seed=2)
    u = skein.Array.from_host(queue, host)
    out = skein.Array.zeros(queue, shape, numpy.float64)
    sums = skein.Array.zeros(queue, 2, numpy.float64)
    LAPLACE.reduce(queue, u[1:-1, 1:-1], 0.25, out, out=sums, index=1, domain=shape, halo=(1, 1))
    expected = reference(host, 0.25)
    got = sums.get()
    assert got[0] == 0.0
    numpy.testing.assert_allclose(got[1], numpy.sum(expected * expected), rtol=1e-12)
    assert LAPLACE.reduction_dtype == numpy.float64


def test_wrong_calls_raise_and_leave_the_output_alone(queue):
    shape = (4, 4)
    u = skein.Array.from_host(queue, padded(shape))
    out = skein.Array.zeros(queue, shape, numpy.float64)
    with pytest.raises(skein.LogicError, match="region 'middle'"):
        LAPLACE(queue, u[1:-1, 1:-1], 0.1, out, domain=shape, region="middle")
    with pytest.raises(skein.LogicError):
        LAPLACE(queue, u[1:-1, 1:-1], out, domain=shape)  # an argument missing
    with pytest.raises(skein.LogicError):
        LAPLACE(queue, u[1:-1, 1:-1], 0.1, out, domain=(2, 2))  # the block is beyond the domain
    numpy.testing.assert_array_equal(out.get(), numpy.zeros(shape))
