# SPDX-License-Identifier: BSD-3-Clause
"""Array functions, reductions, ufuncs, operators and BLAS against NumPy on the host, on every
backend (the `queue` fixture)."""

import numpy
import pytest

import skein


def values(shape, dtype, seed=0):
    """Small exact values (no overflow, exact sums) that differ element by element."""
    rng = numpy.random.default_rng(seed)
    v = rng.integers(1, 50, size=shape)
    if numpy.issubdtype(dtype, numpy.complexfloating):
        v = v + 1j * rng.integers(1, 50, size=shape)
    return numpy.asarray(v, dtype=dtype)


def dev(queue, host):
    return skein.Array.from_host(queue, host)


@pytest.mark.parametrize("src, dst", [(numpy.float32, numpy.float64), (numpy.int32, numpy.float16),
                                      (numpy.float64, numpy.int16),
                                      (numpy.float32, numpy.complex64)])
@pytest.mark.parametrize("n", [0, 1, 37])
def test_astype_and_copy(queue, src, dst, n):
    host = values(n, src)
    a = dev(queue, host)
    b = a.astype(dst)
    assert b.dtype == numpy.dtype(dst)
    numpy.testing.assert_array_equal(b.get(), host.astype(dst))
    numpy.testing.assert_array_equal(skein.astype(queue, a, dst).get(), host.astype(dst))
    c = a.copy()
    assert not skein.may_share_memory(a, c) or n == 0
    numpy.testing.assert_array_equal(c.get(), host)


def test_astype_complex_to_real_is_refused_then_data_reads(queue):
    host = values(5, numpy.complex64)
    a = dev(queue, host)
    with pytest.raises(skein.LogicError):
        a.astype(numpy.float32)
    numpy.testing.assert_array_equal(a.get(), host)


def test_copy_orders_and_contiguity(queue):
    host = values((3, 5), numpy.float32)
    a = dev(queue, host)
    t = a.T
    f = skein.copy(queue, a, order="F")
    assert f.is_f_contiguous
    numpy.testing.assert_array_equal(f.get(), host)
    c = skein.ascontiguousarray(queue, t)
    assert c.is_c_contiguous
    numpy.testing.assert_array_equal(c.get(), host.T)
    assert skein.may_share_memory(skein.ascontiguousarray(queue, a), a)
    numpy.testing.assert_array_equal(skein.asfortranarray(queue, a).get(), host)


def test_joins_and_splits(queue):
    h1, h2 = values((2, 3), numpy.int32, 1), values((2, 3), numpy.int32, 2)
    a, b = dev(queue, h1), dev(queue, h2)
    for axis in (0, 1, -1):
        numpy.testing.assert_array_equal(skein.concatenate(queue, [a, b], axis=axis).get(),
                                         numpy.concatenate([h1, h2], axis=axis))
    for axis in (0, 1, 2):
        numpy.testing.assert_array_equal(skein.stack(queue, [a, b], axis=axis).get(),
                                         numpy.stack([h1, h2], axis=axis))
    for name in ("vstack", "hstack", "dstack"):
        numpy.testing.assert_array_equal(getattr(skein, name)(queue, (a, b)).get(),
                                          getattr(numpy, name)((h1, h2)))
    host = values(7, numpy.float64)
    x = dev(queue, host)
    for got, want in zip(skein.array_split(x, 3), numpy.array_split(host, 3)):
        numpy.testing.assert_array_equal(got.get(), want)
    for got, want in zip(skein.split(x, [2, 5, 9]), numpy.split(host, [2, 5, 9])):
        numpy.testing.assert_array_equal(got.get(), want)
    with pytest.raises(skein.LogicError):
        skein.split(x, 3)
    with pytest.raises(skein.LogicError):
        skein.concatenate(queue, [a, dev(queue, values((2, 4), numpy.int32))], axis=0)
    with pytest.raises(skein.LogicError):
        skein.concatenate(queue, [a, h2])
    numpy.testing.assert_array_equal(a.get(), h1)


def test_take_modes(queue):
    host = values((4, 5), numpy.float32)
    a = dev(queue, host)
    idx_host = numpy.array([3, -1, 0, 3], dtype=numpy.int64)
    idx = dev(queue, idx_host)
    numpy.testing.assert_array_equal(skein.take(queue, a, idx, axis=1).get(),
                                     numpy.take(host, idx_host, axis=1))
    bad = dev(queue, numpy.array([0, 9], dtype=numpy.int32))
    for mode in ("wrap", "clip"):
        numpy.testing.assert_array_equal(
            skein.take(queue, a, bad, axis=0, mode=mode).get(),
            numpy.take(host, [0, 9], axis=0, mode=mode))
    with pytest.raises(skein.LogicError):
        skein.take(queue, a, bad, axis=0)
    numpy.testing.assert_array_equal(a.get(), host)


def test_transfer_within_and_across(queue, multi_context):
    host = values(11, numpy.int16)
    a = dev(queue, host)
    numpy.testing.assert_array_equal(skein.transfer(a, queue).get(), host)
    q2 = skein.Queue(multi_context)
    b = skein.transfer(a, q2, device_idx=1)
    assert b.device_idx == 1
    numpy.testing.assert_array_equal(b.get(), host)


@pytest.mark.parametrize("dtype", [numpy.int8, numpy.uint16, numpy.float16, numpy.float32,
                                   numpy.float64, numpy.complex64, numpy.complex128])
@pytest.mark.parametrize("n", [0, 1, 1001])
def test_sum_dot_nrm2(queue, dtype, n):
    host = values(n, dtype)
    x = dev(queue, host)
    s = skein.sum(queue, x)
    assert s.dtype == skein.sum_dtype(dtype)
    numpy.testing.assert_allclose(s.get()[0], host.sum(dtype=s.dtype), rtol=1e-3)
    d = skein.dot(queue, x, x)
    numpy.testing.assert_allclose(d.get()[0], numpy.dot(host.astype(d.dtype), host), rtol=1e-3)
    r = skein.nrm2(queue, x)
    numpy.testing.assert_allclose(r.get()[0], numpy.linalg.norm(host.astype(numpy.complex128)),
                                  rtol=1e-3)
    if n and not numpy.issubdtype(dtype, numpy.complexfloating):
        assert skein.min(queue, x).get()[0] == host.min()
        assert skein.max(queue, x).get()[0] == host.max()


def test_reductions_axes_out_and_errors(queue):
    host = values((3, 4, 5), numpy.float64)
    x = dev(queue, host)
    numpy.testing.assert_allclose(skein.sum(queue, x, axis=1).get(), host.sum(axis=1))
    numpy.testing.assert_allclose(skein.max(queue, x, axis=-1).get(), host.max(axis=-1))
    numpy.testing.assert_allclose(skein.sum(queue, x, axis=(0, 2)).get(), host.sum(axis=(0, 2)))
    out = skein.Array.empty(queue, 1, numpy.float64)
    assert skein.sum(queue, x, out=out, deterministic=True).get()[0] == host.sum()
    numpy.testing.assert_allclose(out.get()[0], host.sum())
    with pytest.raises(skein.LogicError):
        skein.sum(queue, x, out=skein.Array.empty(queue, 1, numpy.float32))
    with pytest.raises(skein.LogicError):
        skein.sum(queue, x, axis=3)
    with pytest.raises(skein.LogicError):
        skein.min(queue, dev(queue, values(3, numpy.complex64)))
    numpy.testing.assert_array_equal(x.get(), host)


def test_ufuncs_and_operators(queue):
    ha, hb = values(9, numpy.float32, 1), values(9, numpy.float32, 2)
    a, b = dev(queue, ha), dev(queue, hb)
    for name in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
        numpy.testing.assert_allclose(getattr(skein, name)(queue, a, b).get(),
                                      getattr(numpy, name)(ha, hb), rtol=1e-6)
    for name in ("less", "equal", "greater_equal"):
        numpy.testing.assert_array_equal(getattr(skein, name)(queue, a, b).get(),
                                         getattr(numpy, name)(ha, hb).astype(numpy.uint8))
    for name in ("negative", "sqrt", "exp", "floor"):
        numpy.testing.assert_allclose(getattr(skein, name)(queue, a).get(),
                                      getattr(numpy, name)(ha), rtol=1e-5)
    numpy.testing.assert_allclose((a + b * 2.0 - 1).get(), ha + hb * 2 - 1, rtol=1e-6)
    numpy.testing.assert_allclose((3 / a).get(), 3 / ha, rtol=1e-6)
    assert (a * 2.0).dtype == numpy.float32            # Python scalars are weak
    assert (a * numpy.float64(2)).dtype == numpy.float64  # NumPy scalars are not
    assert skein.result_type(a, numpy.int32) == numpy.float64
    numpy.testing.assert_allclose((-a).get(), -ha)
    numpy.testing.assert_allclose(abs(-a).get(), ha)
    out = skein.Array.empty(queue, 9, numpy.float32)
    skein.axpy(queue, 2.0, a, b, out=out)
    numpy.testing.assert_allclose(out.get(), 2 * ha + hb)
    skein.fill(queue, out, 7)
    numpy.testing.assert_array_equal(out.get(), numpy.full(9, 7, numpy.float32))
    skein.copyto(queue, out, dev(queue, values(9, numpy.int8)))
    numpy.testing.assert_array_equal(out.get(), values(9, numpy.int8).astype(numpy.float32))
    with pytest.raises(skein.LogicError):
        skein.add(queue, a, dev(queue, values(4, numpy.float32)))
    with pytest.raises(skein.LogicError):
        skein.add(queue, a, True)
    with pytest.raises(TypeError):
        a + "x"
    numpy.testing.assert_array_equal(a.get(), ha)


def test_blas(queue):
    api = queue.context.api
    available, reason = skein.blas.status(api)
    if not available:
        pytest.skip(f"BLAS unavailable: {reason}")
    ha, hb = values((3, 4), numpy.float32, 1), values((4, 2), numpy.float32, 2)
    a, b = dev(queue, ha), dev(queue, hb)
    numpy.testing.assert_allclose(skein.blas.gemm(queue, 1.0, a, b).get(), ha @ hb, rtol=1e-5)
    x = dev(queue, values(4, numpy.float32, 3))
    numpy.testing.assert_allclose(skein.blas.gemv(queue, 2.0, a, x).get(),
                                  2 * ha @ values(4, numpy.float32, 3), rtol=1e-5)
    hv = values(4, numpy.float32, 3)
    assert skein.blas.dot(queue, x, x) == pytest.approx(float(hv @ hv))
    with pytest.raises(skein.LogicError):
        skein.blas.gemm(queue, 1.0, a, a)
