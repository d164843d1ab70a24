# SPDX-License-Identifier: BSD-3-Clause
"""Default contexts and context caches (PyCUDA's make_default_context, context_dependent_memoize,
clear_context_caches; pygpu's get/set_default_context, largest_memblock, bin_id), grunnur's
Platform.from_backend_platform and render_args."""

import gc
import re
import threading

import numpy
import pytest

import skein

SCALE = """
KERNEL void scale(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i];
}
"""


def _only(platform):
    return {"platform_include_masks": ["^" + re.escape(platform.name) + "$"]}


def test_make_default_context_takes_the_first_device(backend):
    api, platform = backend
    ctx = skein.make_default_context(api.id, **_only(platform))
    assert ctx.devices == [platform.devices[0]]
    q = skein.Queue(ctx)
    assert skein.Array.from_host(q, numpy.arange(5, dtype=numpy.int32)).get().tolist() == list(range(5))
    # By shortcut and by API object too.
    assert skein.make_default_context(api.shortcut, **_only(platform)).devices == [platform.devices[0]]
    assert skein.make_default_context(api, **_only(platform)).devices == [platform.devices[0]]


def test_make_default_context_errors(backend):
    api, _ = backend
    with pytest.raises(skein.LogicError, match="no device is called this"):
        skein.make_default_context(api.id, device_include_masks=["^no device is called this$"])
    with pytest.raises(skein.LogicError, match="unknown device filter"):
        skein.make_default_context(api.id, colour="red")
    assert skein.make_default_context(api.id).api == api  # without the bad filter


def test_default_context_slot():
    skein.set_default_context(None)
    assert skein.get_default_context() is None
    ctx = skein.make_default_context()
    skein.set_default_context(ctx)
    assert skein.get_default_context() == ctx
    others = [skein.make_default_context() for _ in range(3)]
    bad = []

    def worker(k):
        for i in range(200):
            skein.set_default_context(others[(k + i) % 3])
            if skein.get_default_context() not in others:
                bad.append(i)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    skein.set_default_context(None)
    assert skein.get_default_context() is None


def test_context_dependent_memoize(context):
    calls = []

    @skein.context_dependent_memoize
    def program_for(ctx, factor):
        calls.append(factor)
        return skein.Program(ctx, SCALE, name=f"scale{factor}")

    p1 = program_for(context, 2)
    assert program_for(context, 2) is p1
    assert calls == [2]
    program_for(context, 3)
    assert calls == [2, 3]
    other = skein.Context.from_devices(context.devices[0])
    assert program_for(other, 2) is not p1
    assert calls == [2, 3, 2]
    program_for.clear(other)
    program_for(other, 2)
    assert calls == [2, 3, 2, 2]
    program_for.clear()
    program_for(context, 2)
    assert calls == [2, 3, 2, 2, 2]
    skein.clear_context_caches()
    program_for(context, 2)
    assert calls == [2, 3, 2, 2, 2, 2]
    # The memoised value runs.
    q = skein.Queue(context)
    x = numpy.arange(65, dtype=numpy.float32)
    dx = skein.Array.from_host(q, x)
    dy = skein.Array.empty(q, x.shape, numpy.float32)
    program_for(context, 2).kernel.scale(q, 65, None, dy, dx, numpy.float32(2), numpy.int32(65))
    assert numpy.array_equal(dy.get(), 2 * x)


def test_memoized_values_go_with_their_context(backend):
    _, platform = backend

    class Token:
        alive = 0

        def __init__(self):
            Token.alive += 1

        def __del__(self):
            Token.alive -= 1

    @skein.context_dependent_memoize
    def token(ctx, k):
        return Token()

    ctx = skein.Context.from_devices(platform.devices[0])
    token(ctx, 1)
    token(ctx, 2)
    assert Token.alive == 2
    del ctx
    gc.collect()
    assert Token.alive == 0


def test_clear_context_caches_loads_programs_again(context):
    q = skein.Queue(context)
    source = SCALE + f"// {id(q)} {numpy.random.randint(1 << 30)}\n"
    p1 = skein.Program(context, source)
    assert not p1.from_cache(0)
    n_loaded = skein.loaded_programs(context)
    assert n_loaded >= 1
    skein.clear_context_caches()
    assert skein.loaded_programs(context) == 0
    p2 = skein.Program(context, source)
    assert skein.loaded_programs(context) == 1
    assert p2.from_cache(0)  # the run's disk cache (conftest.py) has it; no compiler ran
    x = numpy.linspace(-1, 1, 63, dtype=numpy.float32)
    for p in (p1, p2):
        dx = skein.Array.from_host(q, x)
        dy = skein.Array.empty(q, x.shape, numpy.float32)
        p.kernel.scale(q, 63, None, dy, dx, numpy.float32(4), numpy.int32(63))
        assert numpy.array_equal(dy.get(), 4 * x)


def test_largest_allocation_and_binary_id(context, backend):
    api, _ = backend
    device = context.devices[0]
    largest = skein.largest_allocation(context, 0)
    assert 0 < largest <= device.params.max_alloc_size
    if api.shortcut == "cuda":
        major, minor = device.params.compute_capability
        assert device.binary_id == f"sm_{major}{minor}"
    else:
        platform = device.platform
        assert device.binary_id == (f"{platform.name} {platform.version} / {device.params.name} / "
                                    f"{device.params.driver_version}")
    assert skein.binary_id(device) == device.binary_id
    with pytest.raises(skein.LogicError, match="device index 5"):
        skein.largest_allocation(context, 5)


def test_platform_from_backend_platform(backend):
    api, platform = backend
    if api.shortcut != "opencl":
        with pytest.raises(skein.LogicError):
            platform.native
        return
    handle = platform.native
    assert skein.Platform.from_backend_platform(handle) == platform

    class Wrapped:  # what pyopencl's Platform offers
        int_ptr = handle

    assert skein.Platform.from_backend_platform(Wrapped()) == platform
    with pytest.raises(skein.LogicError, match="not one of the OpenCL loader's platforms"):
        skein.Platform.from_backend_platform(handle + 8)  # compared, never dereferenced
    with pytest.raises(skein.LogicError, match="expected a cl_platform_id"):
        skein.Platform.from_backend_platform("opencl")


def test_program_render_args(queue):
    template = skein.Snippet(["ctype", "factor"], """
KERNEL void mul(GLOBAL_MEM ${ctype}* y, GLOBAL_MEM const ${ctype}* x, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = x[i] * ${factor};
}
""")
    p = skein.Program.from_template(queue.context, template, render_args=("int", 7))
    x = numpy.arange(-5, 60, dtype=numpy.int32)
    dx = skein.Array.from_host(queue, x)
    dy = skein.Array.empty(queue, x.shape, numpy.int32)
    p.kernel.mul(queue, x.size, None, dy, dx, numpy.int32(x.size))
    assert numpy.array_equal(dy.get(), x * 7)
