# SPDX-License-Identifier: BSD-3-Clause
"""Record (struct) dtypes: NumPy structured dtypes registered with skein.register_dtype, arrays of
them to and from NumPy, in kernels, field views (extract_field), flatten_dtype, c_path,
c_constant, and the dtype helpers min_scalar_type, complex_for and real_for, against NumPy on the
host, on every backend (the `queue` fixture)."""

import numpy
import pytest

import skein

POINT = numpy.dtype([("x", numpy.float32), ("w", numpy.float64), ("n", numpy.int32, (3,))],
                    align=True)


def point():
    return skein.register_dtype(POINT, "py_point")


def host_points(n, seed=0):
    h = numpy.zeros(n, dtype=POINT)
    h["x"] = (numpy.arange(n) * 7 + seed) % 13 * 0.25 + 0.5
    h["w"] = 1.0 / (numpy.arange(n) + seed + 1.0)
    h["n"] = numpy.arange(3 * n, dtype=numpy.int32).reshape(n, 3) - seed
    return h


def test_register_dtype_names_and_errors():
    d = point()
    assert skein.register_dtype(POINT, "py_point") == d  # the same again: the same dtype
    assert d.itemsize == 32
    assert skein.ctype(d) == "py_point"
    assert skein.dtype(d) == POINT
    assert skein.dtype("py_point") == POINT
    assert "ALIGN(8)" in skein.ctype_struct(d)
    assert "ALIGN" not in skein.ctype_struct(d, ignore_alignment=True)
    with pytest.raises(skein.LogicError, match="taken by a different struct"):
        skein.register_dtype(numpy.dtype([("x", numpy.float32)]), "py_point")
    with pytest.raises(skein.LogicError):
        skein.register_dtype(POINT, "not a name")
    with pytest.raises(skein.LogicError, match="align=True"):  # packed: not the C layout
        skein.register_dtype(numpy.dtype([("a", numpy.int8), ("b", numpy.float64)]), "py_packed")
    with pytest.raises(skein.LogicError, match="not a registered record"):
        skein.dtype(numpy.dtype([("q", numpy.int16)], align=True))
    # Complex fields are aligned to their whole size in Skein: explicit offsets work.
    zc = numpy.dtype({"names": ["a", "z"], "formats": [numpy.int16, numpy.complex64],
                      "offsets": [0, 8], "itemsize": 16})
    dz = skein.register_dtype(zc, "py_zc")
    assert skein.record_numpy_dtype(dz) == zc


@pytest.mark.parametrize("n", [1, 2, 1000])
def test_record_arrays_to_and_from_numpy(queue, n):
    d = point()
    h = host_points(n, 3)
    a = skein.Array.from_host(queue, h)
    assert a.dtype == POINT
    got = a.get()
    assert got.dtype == POINT
    numpy.testing.assert_array_equal(got, h)
    b = skein.Array.empty(queue, n, d)
    b.set(h[::-1].copy())
    numpy.testing.assert_array_equal(b.get(), h[::-1])
    with pytest.raises(skein.LogicError, match="py_point"):
        skein.sum(queue, a)
    numpy.testing.assert_array_equal(a.get(), h)  # still usable


def test_record_kernels(queue):
    point()
    n = 1001
    h = host_points(n, 1)
    a = skein.Array.from_host(queue, h)
    k = skein.ElementwiseKernel("py_point p", "float64 y, py_point q",
                                "y = p.x * p.w + p.n[2]; q = p; q.n[0] = -p.n[0]", name="py_rec_ew")
    y, q = k(queue, a)
    numpy.testing.assert_allclose(y.get(), h["x"].astype(numpy.float64) * h["w"] + h["n"][:, 2],
                                  rtol=1e-12)
    want = h.copy()
    want["n"][:, 0] = -h["n"][:, 0]
    numpy.testing.assert_array_equal(q.get(), want)
    r = skein.ReductionKernel("py_point p", "float64 s", "p.x * p.w", "a + b", "0",
                              name="py_rec_dot")
    numpy.testing.assert_allclose(r(queue, a).get()[0],
                                  (h["x"].astype(numpy.float64) * h["w"]).sum(), rtol=1e-12)
    prog = skein.Program(queue.context, """
KERNEL void bump(GLOBAL_MEM py_point* p, int n)
{
    const int i = get_global_id(0);
    if (i < n) p[i].n[1] += 100;
}
""")
    prog.kernel.bump(queue, n, None, a, n)
    want = h.copy()
    want["n"][:, 1] += 100
    numpy.testing.assert_array_equal(a.get(), want)


def test_extract_field_reads_and_writes(queue):
    point()
    n = 517
    h = host_points(n, 6)
    a = skein.Array.from_host(queue, h)
    x = skein.extract_field(a, "x")
    assert x.dtype == numpy.float32
    assert x.strides == (32,)
    numpy.testing.assert_array_equal(x.get(), h["x"])
    nn = skein.extract_field(a, ["n"])
    assert nn.shape == (n, 3)
    numpy.testing.assert_array_equal(nn.get(), h["n"])
    numpy.testing.assert_array_equal(skein.extract_field(a, ["n", 1]).get(), h["n"][:, 1])
    w = -numpy.arange(n, dtype=numpy.float64)
    skein.extract_field(a, "w").set(w)
    h["w"] = w
    numpy.testing.assert_array_equal(a.get(), h)
    with pytest.raises(skein.LogicError, match="no field 'nope'"):
        skein.extract_field(a, "nope")
    with pytest.raises(skein.LogicError):
        skein.extract_field(a, ["n", 3])
    numpy.testing.assert_array_equal(a.get(), h)


def test_nested_flatten_c_path_c_constant():
    inner = numpy.dtype([("a", numpy.int8), ("b", numpy.float32, (2,))], align=True)
    outer = numpy.dtype([("h", numpy.int16), ("s", inner, (2,)), ("d", numpy.float64)], align=True)
    d = skein.register_dtype(outer, "py_outer")
    flat = skein.flatten_dtype(d)
    paths = [skein.c_path(p) for p, _, _ in flat]
    assert paths == ["h", "s[0].a", "s[0].b[0]", "s[0].b[1]", "s[1].a", "s[1].b[0]", "s[1].b[1]",
                     "d"]
    # Offsets as NumPy lays the aligned dtype out.
    assert [off for _, _, off in flat] == [0, 4, 8, 12, 16, 20, 24, 32]
    assert flat[2][1] == numpy.float32
    v = numpy.zeros((), dtype=outer)
    v["h"] = 3
    v["s"][1]["b"][0] = 1.5
    v["d"] = 0.25
    assert skein.c_constant(v) == "{3, {{0, {0.0f, 0.0f}}, {0, {1.5f, 0.0f}}}, 0.25}"
    assert skein.c_constant(7, numpy.uint32) == "7u"
    assert skein.c_constant(1.5, numpy.float32) == "1.5f"
    assert skein.c_constant(1 - 2j, numpy.complex64) == "skein_make_complex64(1.0f, (-2.0f))"
    with pytest.raises(skein.LogicError):
        skein.c_constant(300, numpy.int8)


def test_min_scalar_type_complex_for_real_for():
    for v in (0, 255, 256, 65536, 2**32, -1, -129, -40000, -2**40, 0.1, 70000.0, -1e39, 1 + 2j):
        assert skein.min_scalar_type(v) == numpy.min_scalar_type(v), v
    assert skein.min_scalar_type(200, force_signed=True) == numpy.int16
    assert skein.complex_for(numpy.float32) == numpy.complex64
    assert skein.complex_for("float64") == numpy.complex128
    assert skein.real_for(numpy.complex64) == numpy.float32
    assert skein.real_for(numpy.complex128) == numpy.float64
    with pytest.raises(skein.LogicError):
        skein.complex_for(numpy.int32)
    with pytest.raises(skein.LogicError):
        skein.real_for(numpy.float32)


def test_struct_type_registers_and_nests(queue):
    point()
    t = skein.StructType([("k", numpy.int8), ("p", "py_point", 2)])
    t.add("z", numpy.complex64)
    assert t.names == ["k", "p", "z"]
    assert t.offsets == [0, 8, 72]
    assert t.itemsize == 80 and t.alignment == 8
    assert t.aligned(32).itemsize == 96
    assert t == skein.StructType([("k", "int8"), ("p", skein.StructType(
        [("x", numpy.float32), ("w", numpy.float64), ("n", numpy.int32, 3)]), 2),
        ("z", numpy.complex64)])
    d = skein.register_dtype(t, "py_holder")
    assert skein.record_numpy_dtype(d) == t.numpy_dtype()
    assert "typedef struct ALIGN(8)" in skein.ctype_struct(t, "holder")
    h = numpy.zeros(3, dtype=t.numpy_dtype())
    h["p"]["w"] = numpy.arange(6, dtype=numpy.float64).reshape(3, 2)
    h["z"] = [1j, 2, 3 - 1j]
    a = skein.Array.from_host(queue, h)
    numpy.testing.assert_array_equal(a.get(), h)
    numpy.testing.assert_array_equal(skein.extract_field(a, ["p", 1, "w"]).get(), h["p"][:, 1]["w"])
    numpy.testing.assert_array_equal(skein.extract_field(a, "z").get(), h["z"])
    with pytest.raises(skein.LogicError):
        skein.StructType([("a",)])
