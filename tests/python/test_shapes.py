# SPDX-License-Identifier: BSD-3-Clause
"""pygpu's shape calls: reshape of views in C and F order (a view when the strides allow one, else a
copy), the flags (aligned, writeable, owndata, ...), atleast_1d/2d/3d, hsplit/vsplit/dsplit, and
skein.version(), against NumPy's own answers on the same host data and layouts."""

import itertools

import numpy
import pytest

import skein


def numbered(shape, dtype=numpy.int32):
    return (numpy.arange(int(numpy.prod(shape)), dtype=numpy.int64) * 7 + 3).astype(dtype) \
        .reshape(shape)


# Views made the same way of a NumPy array and of a skein.Array.
VIEWS = [("whole", lambda x: x[...]), ("T", lambda x: x.T),
         ("rotated", lambda x: x.transpose(*range(1, x.ndim), 0)), ("rows 1:", lambda x: x[1:]),
         ("last ::2", lambda x: x[..., ::2]), ("first ::2", lambda x: x[::2]),
         ("T[::2]", lambda x: x.T[::2]), ("last 1:-1", lambda x: x[..., 1:-1])]


def targets(shape):
    n = int(numpy.prod(shape))
    out = {(n,), tuple(reversed(shape)), (1, n), (n, 1, 1), (-1,)}
    for k in range(len(shape) - 1):
        out.add(shape[:k] + (shape[k] * shape[k + 1],) + shape[k + 2:])
    for f in (2, 3):
        if shape and shape[0] % f == 0 and shape[0] > f:
            out.add((shape[0] // f, f) + shape[1:])
    out.add(shape[:len(shape) // 2] + (1,) + shape[len(shape) // 2:])
    return sorted(out)


@pytest.mark.parametrize("shape", [(12,), (4, 6), (3, 4, 5), (2, 3, 4, 3)])
def test_reshape_of_views_matches_numpy_in_both_orders(queue, shape):
    host = numbered(shape)
    base = skein.Array.from_host(queue, host)
    for (name, make), order in itertools.product(VIEWS, "CF"):
        hv, v = make(host), make(base)
        assert v.shape == hv.shape and v.strides == hv.strides, name
        for target in targets(hv.shape):
            where = f"{name} {hv.shape} -> {target} order {order}"
            expected = hv.reshape(target, order=order)
            r = v.reshape(target, order=order)
            assert r.shape == expected.shape, where
            numpy.testing.assert_array_equal(r.get(), expected, err_msg=where)
            numpy_view = numpy.shares_memory(expected, host)
            assert skein.may_share_memory(r, base) == numpy_view, where
            assert r.flags.owndata == (not numpy_view), where
            if not numpy_view:
                assert (r.flags.f_contiguous if order == "F" else r.flags.c_contiguous), where
            # The module function gives the same.
            r2 = skein.reshape(queue, v, target, order=order)
            numpy.testing.assert_array_equal(r2.get(), expected, err_msg=where)
            assert skein.may_share_memory(r2, base) == numpy_view, where


def test_reshape_errors_and_unknown_extent(queue):
    host = numbered((4, 6))
    a = skein.Array.from_host(queue, host)
    numpy.testing.assert_array_equal(a.reshape(-1, 4).get(), host.reshape(-1, 4))
    numpy.testing.assert_array_equal(a.T.reshape((3, -1), order="F").get(),
                                     host.T.reshape((3, -1), order="F"))
    with pytest.raises(skein.LogicError, match="Keep the number of elements"):
        a.reshape(5, 5)
    with pytest.raises(skein.LogicError, match="one unknown dimension"):
        a.reshape(-1, -1)
    with pytest.raises(skein.LogicError, match="cannot reshape an array of 24 elements"):
        a.reshape(-1, 5)
    with pytest.raises(skein.LogicError, match="order 'K' is not 'C' or 'F'"):
        a.reshape(24, order="K")
    # After the errors the array is as it was.
    numpy.testing.assert_array_equal(a.get(), host)


def test_flags_match_numpys(queue):
    host = numbered((4, 6))
    a = skein.Array.from_host(queue, host)
    f = a.flags
    assert (f.c_contiguous, f.f_contiguous, f.aligned, f.writeable, f.owndata) == \
        (True, False, True, True, True)
    assert f.behaved and f.carray and not f.farray and not f.fnc and f.forc
    assert f.contiguous and not f.fortran and not f.updateifcopy
    assert f["C_CONTIGUOUS"] and f["C"] and not f["F"] and f["OWNDATA"] and f["CA"]
    with pytest.raises(KeyError, match="unknown flag 'Q'"):
        f["Q"]
    assert "OWNDATA : True" in repr(f)
    # Layouts as NumPy's: the contiguity and alignment flags and their bits agree.
    pairs = [(a, host), (a.T, host.T), (a[1:3], host[1:3]), (a[:, ::2], host[:, ::2]),
             (a[:, 1:2], host[:, 1:2]), (a[0], host[0]),
             (skein.Array.empty(queue, (3, 5), numpy.float64, order="F"),
              numpy.empty((3, 5), order="F")),
             (skein.Array.empty(queue, (0, 5), numpy.float32), numpy.empty((0, 5), numpy.float32))]
    mask = 0x1 | 0x2 | 0x100 | 0x400
    for s, h in pairs:
        for name in ["c_contiguous", "f_contiguous", "aligned", "writeable", "behaved", "carray",
                     "fnc", "forc"]:
            assert getattr(s.flags, name) == getattr(h.flags, name), (name, h.shape, h.strides)
        # NumPy documents FARRAY as "F_CONTIGUOUS and BEHAVED and not C_CONTIGUOUS", but its
        # flags.farray tests whether any of the three bits is set (True for a[:, ::2]): Skein
        # follows the documentation.
        hf = h.flags
        assert s.flags.farray == (hf.f_contiguous and hf.behaved and not hf.c_contiguous)
        assert s.flags.num & mask == h.flags.num & mask
    # owndata: allocated for the array, not a view (NumPy's too, for these).
    assert skein.Array.zeros(queue, 3, numpy.int8).flags.owndata
    assert a.copy().flags.owndata and a.T.copy(order="F").flags.owndata
    assert not a[1:].flags.owndata and not a.T.flags.owndata and not a.reshape(24).flags.owndata
    assert a.T.reshape(24).flags.owndata  # a copy
    assert a.flags == a.flags and a.flags != a.T.flags


def test_atleast_nd_matches_numpy(queue):
    cases = [numpy.array(5, dtype=numpy.int32), numbered((4,)), numbered((2, 3)),
             numbered((2, 3, 4)), numpy.zeros((0,), numpy.int32)]
    for host in cases:
        a = skein.Array.from_host(queue, host)
        for fn in ["atleast_1d", "atleast_2d", "atleast_3d"]:
            r = getattr(skein, fn)(a)
            expected = getattr(numpy, fn)(host)
            assert r.shape == expected.shape, (fn, host.shape)
            numpy.testing.assert_array_equal(r.get(), expected)
            assert skein.may_share_memory(r, a) or a.size == 0
            assert r.offset == a.offset
    # Several arrays: a list, as NumPy.
    x, y = skein.Array.from_host(queue, numbered((3,))), skein.Array.from_host(queue, numbered(()))
    out = skein.atleast_2d(x, y)
    assert isinstance(out, list) and [o.shape for o in out] == [(1, 3), (1, 1)]
    with pytest.raises(skein.LogicError, match="not a skein.Array"):
        skein.atleast_1d(numpy.zeros(3))


def test_directional_splits_match_numpy(queue):
    host = numbered((4, 6, 2))
    a = skein.Array.from_host(queue, host)
    for fn, arg in [("hsplit", 3), ("hsplit", [1, 4]), ("vsplit", 2), ("vsplit", [3, 1, 9]),
                    ("dsplit", 2), ("dsplit", [0])]:
        parts = getattr(skein, fn)(a, arg)
        expected = getattr(numpy, fn)(host, arg)
        assert len(parts) == len(expected), (fn, arg)
        for p, e in zip(parts, expected):
            assert p.shape == e.shape, (fn, arg)
            numpy.testing.assert_array_equal(p.get(), e)
            assert not p.flags.owndata
    flat = skein.Array.from_host(queue, numbered((6,)))
    for p, e in zip(skein.hsplit(flat, 2), numpy.hsplit(numbered((6,)), 2)):
        numpy.testing.assert_array_equal(p.get(), e)
    with pytest.raises(skein.LogicError, match="array split does not result in an equal division"):
        skein.hsplit(a, 4)
    with pytest.raises(skein.LogicError, match="vsplit only works on arrays of 2 or more"):
        skein.vsplit(flat, 2)
    with pytest.raises(skein.LogicError, match="dsplit only works on arrays of 3 or more"):
        skein.dsplit(a[0], 2)
    with pytest.raises(skein.LogicError, match="number of sections must be positive"):
        skein.vsplit(a, 0)
    numpy.testing.assert_array_equal(a.get(), host)


def test_version_at_run_time():
    v = skein.version()
    assert isinstance(v, tuple) and len(v) == 3 and all(isinstance(x, int) for x in v)
    assert ".".join(map(str, v)) == skein.__version__
    assert skein.header_version() == v  # this build's module and library
