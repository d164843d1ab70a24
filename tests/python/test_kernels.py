# SPDX-License-Identifier: BSD-3-Clause
"""Program, Kernel, StaticKernel, ElementwiseKernel, ReductionKernel and template rendering,
against NumPy on the host, on every backend (the `queue` fixture)."""

import numpy
import pytest

import skein

SOURCE = """
KERNEL void shift(GLOBAL_MEM ${ctype}* out, GLOBAL_MEM const ${ctype}* in, ${ctype} a, int n)
{
    const int i = get_global_id(0);
    if (i < n) out[i] = in[i] + a;
}
"""


def test_program_from_template_kernel_hub_and_typed_scalars(queue):
    program = skein.Program(queue.context, SOURCE, render_globals={"ctype": "double"})
    assert program.kernel.shift is program.kernel("shift")
    assert [p[1] for p in program.kernel.shift.parameters] == [
        "pointer", "pointer", numpy.dtype(numpy.float64), numpy.dtype(numpy.int32)]
    for n in (1, 5, 33):
        host = numpy.arange(n, dtype=numpy.float64)
        x = skein.Array.from_host(queue, host)
        out = skein.Array.empty(queue, n, numpy.float64)
        # A Python int for a double, a NumPy int for an int: converted by the signature.
        program.kernel.shift(queue, 64, None, out, x, 2, numpy.int64(n))
        numpy.testing.assert_array_equal(out.get(), host + 2)
        prepared = program.kernel.shift.prepare(queue, 64)
        prepared(out, x, numpy.float32(0.5), n)
        numpy.testing.assert_array_equal(out.get(), host + 0.5)


def test_kernel_argument_errors_launch_nothing(queue):
    program = skein.Program(queue.context, SOURCE, render_globals={"ctype": "float"})
    host = numpy.arange(4, dtype=numpy.float32)
    x = skein.Array.from_host(queue, host)
    out = skein.Array.from_host(queue, host)
    k = program.kernel.shift
    bad_calls = [
        (out, x, 1.0),                     # too few
        (out, x, 1.0, 4, 5),               # too many
        (out, 1.0, 1.0, 4),                # a scalar for a pointer
        (out, x, x, 4),                    # an array for a scalar
        (out, x, 1.0, 2.5),                # a fraction for an int
        (out, x, 1.0, 2 ** 40),            # out of int32's range
        (out, x, 1.0, "4"),                # not a number
    ]
    for args in bad_calls:
        with pytest.raises(skein.LogicError):
            k(queue, 64, None, *args)
    numpy.testing.assert_array_equal(out.get(), host)  # nothing ran
    with pytest.raises(skein.LogicError):
        program.kernel.no_such_kernel


def test_compile_error_has_the_log_then_work_goes_on(queue):
    with pytest.raises(skein.CompileError) as info:
        skein.Program(queue.context, "KERNEL void broken(GLOBAL_MEM float* x) { x[0] = ; }")
    assert info.value.log
    x = skein.Array.from_host(queue, numpy.ones(3, numpy.float32))
    numpy.testing.assert_array_equal(x.get(), numpy.ones(3))


def test_kernel_on_two_devices_with_per_device_arrays(multi_context):
    queue = skein.Queue(multi_context)
    program = skein.Program(multi_context, SOURCE, render_globals={"ctype": "int"})
    hosts = [numpy.arange(6, dtype=numpy.int32) * (d + 1) for d in range(2)]
    xs = [skein.Array.from_host(queue, h, device_idx=d) for d, h in enumerate(hosts)]
    outs = [skein.Array.empty(queue, 6, numpy.int32, device_idx=d) for d in range(2)]
    program.kernel.shift(queue, 8, None, outs, xs, [10, 20], 6)
    for d in range(2):
        numpy.testing.assert_array_equal(outs[d].get(), hosts[d] + 10 * (d + 1))
    with pytest.raises(skein.LogicError):  # one device's array given to both
        program.kernel.shift(queue, 8, None, outs[0], xs, 1, 6)


def test_static_kernel(queue):
    source = """
KERNEL void idx(GLOBAL_MEM int* out, int base)
{
    ${static_begin};
    const VSIZE_T i = ${static_global_id}(0);
    out[i] = base + (int)i;
}
"""
    n = 37
    out = skein.Array.empty(queue, n, numpy.int32)
    k = skein.StaticKernel(queue, source, "idx", n, local_size=8)
    k(out, 100)
    numpy.testing.assert_array_equal(out.get(), 100 + numpy.arange(n))
    with pytest.raises(skein.LogicError):
        k(out)


@pytest.mark.parametrize("dtype", [numpy.float16, numpy.float32, numpy.float64, numpy.int64])
@pytest.mark.parametrize("n", [0, 1, 1023])
def test_elementwise_kernel(queue, dtype, n):
    k = skein.ElementwiseKernel("T a, T x, T y", "T z", "z = a * x + y", name="axpy")
    hx = numpy.arange(n).astype(dtype)
    hy = (numpy.arange(n) % 7).astype(dtype)
    x, y = skein.Array.from_host(queue, hx), skein.Array.from_host(queue, hy)
    z = k(queue, 2, x, y)
    assert z.dtype == numpy.dtype(dtype)
    want = (2 * hx.astype(numpy.float64) + hy).astype(dtype)
    numpy.testing.assert_allclose(z.get().astype(numpy.float64), want.astype(numpy.float64),
                                  rtol=1e-3)
    assert k(queue, 2, x, y, y) is None  # in place
    numpy.testing.assert_allclose(y.get().astype(numpy.float64), want.astype(numpy.float64),
                                  rtol=1e-3)


@pytest.mark.parametrize("spare", [1, 1000])
def test_elementwise_kernel_with_spare_compute_units(queue, spare):
    # Fewer work groups, each looping over more elements: the same results at every size.
    k = skein.ElementwiseKernel("double x, double y", "double z", "z = 2 * x + y",
                                name="axpy_spare", spare_compute_units=spare)
    for n in (1, 4097, 1000003):
        hx = numpy.random.default_rng(n).standard_normal(n)
        hy = numpy.arange(n, dtype=numpy.float64)
        z = k(queue, skein.Array.from_host(queue, hx), skein.Array.from_host(queue, hy))
        numpy.testing.assert_array_equal(z.get(), 2 * hx + hy)


def test_elementwise_kernel_launched_a_group_per_chunk(queue):
    # A group per chunk of the range: the same results at every size; with spare units refused
    # (skein.LogicError naming both), a bad name refused.
    k = skein.ElementwiseKernel("double x, double y", "double z", "z = 2 * x + y",
                                name="axpy_chunks", groups="per_chunk")
    for n in (1, 4097, 1000003):
        hx = numpy.random.default_rng(n).standard_normal(n)
        hy = numpy.arange(n, dtype=numpy.float64)
        z = k(queue, skein.Array.from_host(queue, hx), skein.Array.from_host(queue, hy))
        numpy.testing.assert_array_equal(z.get(), 2 * hx + hy)
    with pytest.raises(skein.LogicError, match="spare_compute_units = 2.*per_chunk"):
        skein.ElementwiseKernel("double x", "double z", "z = x", name="both", groups="per_chunk",
                                spare_compute_units=2)
    with pytest.raises(skein.LogicError, match="groups 'all' is not 'resident' or 'per_chunk'"):
        skein.ElementwiseKernel("double x", "double z", "z = x", groups="all")


def test_elementwise_complex_with_modules_and_errors(queue):
    mul = skein.functions.mul([numpy.complex64, numpy.complex64])
    k = skein.ElementwiseKernel("complex64 a, complex64 b", "complex64 c", "c = ${mul}(a, b)",
                                render_globals={"mul": mul})
    ha = numpy.arange(5).astype(numpy.complex64) * (1 + 2j)
    hb = numpy.ones(5, numpy.complex64) * (3 - 1j)
    a, b = skein.Array.from_host(queue, ha), skein.Array.from_host(queue, hb)
    numpy.testing.assert_allclose(k(queue, a, b).get(), ha * hb, rtol=1e-6)
    with pytest.raises(skein.LogicError):  # wrong dtype
        k(queue, a, skein.Array.from_host(queue, numpy.ones(5, numpy.float32)))
    with pytest.raises(skein.LogicError):  # wrong count
        k(queue, a)
    bad = skein.ElementwiseKernel("float x", "float y", "y = x +* 2")
    with pytest.raises(skein.CompileError):
        bad(queue, skein.Array.from_host(queue, numpy.ones(3, numpy.float32)))
    numpy.testing.assert_array_equal(a.get(), ha)


def test_reduction_kernel(queue):
    l2 = skein.ReductionKernel("T x", "T y", "x * x", "a + b", "0", post_map="y = sqrt(a)")
    for n in (0, 1, 999):
        host = numpy.arange(n, dtype=numpy.float64) % 10
        r = l2(queue, skein.Array.from_host(queue, host))
        numpy.testing.assert_allclose(r.get()[0], numpy.sqrt((host * host).sum()))
    host = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    s = skein.ReductionKernel("T x", "T y", "x", "a + b", "0")
    numpy.testing.assert_allclose(s(queue, skein.Array.from_host(queue, host), axis=0).get(),
                                  host.sum(axis=0))


@pytest.mark.parametrize("n", [0, 1, 1001])
@pytest.mark.parametrize("deterministic", [False, True])
def test_fused_kernel_with_raw_inputs(queue, n, deterministic):
    # x += alpha p; r -= alpha w with alpha = rr[0] / pw[1] read on the device, and r . r.
    k = skein.FusedKernel("raw float64 rr, raw float64 pw, float64 p, float64 w",
                          "float64 x, float64 r",
                          "const double alpha = rr[0] / pw[1]; x += alpha * p; r -= alpha * w",
                          "float64 out", "r * r", "a + b", "0", name="py_cg_update")
    assert (k.input_count, k.update_count) == (4, 2)
    i = numpy.arange(n, dtype=numpy.float64)
    hp, hw, hx, hr = i % 5 - 2, i % 3, i % 7, i % 4 + 1
    rr = skein.Array.from_host(queue, numpy.array([3.0]))
    pw = skein.Array.from_host(queue, numpy.array([9.0, 4.0]))  # alpha = 0.75: exact
    x, r = skein.Array.from_host(queue, hx), skein.Array.from_host(queue, hr)
    p, w = skein.Array.from_host(queue, hp), skein.Array.from_host(queue, hw)
    out = k(queue, rr, pw, p, w, x, r, deterministic=deterministic)
    want_x, want_r = hx + 0.75 * hp, hr - 0.75 * hw
    numpy.testing.assert_array_equal(x.get(), want_x)
    numpy.testing.assert_array_equal(r.get(), want_r)
    assert out.get()[0] == numpy.sum(want_r * want_r)  # quarters: exact in any order
    with pytest.raises(skein.errors.LogicError):
        skein.FusedKernel("float64 s", "raw float64 x", "x[0] = s", "float64 y", "s", "a + b",
                          "0")
    with pytest.raises(skein.errors.LogicError):  # a scalar for a raw input
        k(queue, 3.0, pw, p, w, x, r)
    numpy.testing.assert_array_equal(x.get(), want_x)  # untouched by the refused call


def test_render_snippets_and_modules():
    sq = skein.Snippet(["x"], "((${x}) * (${x}))")
    mod = skein.Module("WITHIN_KERNEL float ${prefix}(float v) { return v; }", name="ident")
    text = skein.render("%for i in range(n):\n${sq(${i})} ${m}\n%endfor\n",
                        {"n": 2, "sq": sq, "m": mod})
    assert "((0) * (0))" in text and "((1) * (1))" in text and "WITHIN_KERNEL float" in text
    assert skein.literal(0.5) == "0.5"
    cb = skein.Snippet.from_callable(1, lambda a: f"[{a}]")
    assert skein.render("${cb(q)}", {"cb": cb}) == "[q]"
    with pytest.raises(skein.RenderError):
        skein.render("${nope}")
