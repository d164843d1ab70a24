# SPDX-License-Identifier: BSD-3-Clause
"""PyCUDA's driver rows in Python: skein.compile (compiler.compile) loaded by
Program.from_binary with a message handler and JIT options, context scheduling flags, push / pop,
Context.synchronize, blocking queues, event flags, and devices by PCI bus id; against NumPy on
every backend (the `queue` fixture), or the refusal where the backend has no such thing."""

import numpy
import pytest

import skein

SOURCE = """
KERNEL void axpb(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + 1.0f;
}
"""


def _cuda(context):
    return context.api.shortcut == "cuda"


def _run_axpb(queue, program, n):
    host = numpy.random.default_rng(3).random(n, dtype=numpy.float32)
    x = skein.Array.from_host(queue, host)
    y = skein.Array.empty(queue, n, numpy.float32)
    program.kernel.axpb(queue, (n + 63) // 64 * 64, 64, y, x, numpy.float32(2.0), numpy.int32(n))
    numpy.testing.assert_array_equal(y.get(), numpy.float32(2.0) * host + numpy.float32(1.0))


def test_compile_then_from_binary_runs_and_the_handler_hears_both(queue):
    context = queue.context
    calls = []
    binary = skein.compile(context, SOURCE, message_handler=lambda *a: calls.append(a))
    assert isinstance(binary, bytes) and len(binary) > 0
    assert len(calls) == 1 and calls[0][0] is True
    program = skein.Program.from_binary(context, binary, device_idxs=[0],
                                        message_handler=lambda *a: calls.append(a))
    assert len(calls) == 2 and calls[1][0] is True
    for n in (1, 63, 65, 4099):
        _run_axpb(queue, program, n)
    if _cuda(context):
        ptx = skein.compile(context, SOURCE, target="ptx")
        assert b".entry axpb" in ptx
        _run_axpb(queue, skein.Program.from_binary(context, ptx, jit_options={
            "max_registers": 32, "optimization_level": 3, "verbose": True}), 100)
    else:
        with pytest.raises(skein.LogicError, match="OpenCL has no PTX"):
            skein.compile(context, SOURCE, target="ptx")
        with pytest.raises(skein.LogicError, match="OpenCL has no JIT max_registers"):
            skein.Program.from_binary(context, binary, jit_options={"max_registers": 32})
    with pytest.raises(ValueError, match="unknown JIT option"):
        skein.Program.from_binary(context, binary, jit_options={"registers": 32})


def test_junk_binary_is_a_logic_error_naming_the_call_and_the_input(queue):
    failures = []
    with pytest.raises(skein.LogicError, match="Program::from_binary") as info:
        skein.Program.from_binary(queue.context, b"\x3c" * 256,
                                  message_handler=lambda ok, i, e: failures.append(ok))
    assert "cannot run on this device" in str(info.value)
    assert "bug in Skein" not in str(info.value)
    assert failures == [False]


def test_context_scheduling_push_pop_and_synchronize(backend):
    _, platform = backend
    device = platform.devices[0]
    context = skein.Context.from_devices(device, scheduling="automatic")
    assert context.scheduling(0) == "automatic"
    if context.api.shortcut == "cuda":
        blocking = skein.Context.from_devices([device], scheduling="blocking_sync")
        assert blocking.scheduling(0) == "blocking_sync"
        skein.Context.from_devices(device, scheduling="automatic")
    else:
        with pytest.raises(skein.LogicError, match="OpenCL has no scheduling setting"):
            skein.Context.from_devices(device, scheduling="spin")
    with pytest.raises(ValueError, match="scheduling must be"):
        skein.Context.from_devices(device, scheduling="fast")
    context.push()
    context.pop()
    queue = skein.Queue(context)
    x = skein.Array.from_host(queue, numpy.arange(1000, dtype=numpy.int32))
    event = queue.record_event(0, disable_timing=True)
    context.synchronize()
    assert event.query()
    numpy.testing.assert_array_equal(x.get(), numpy.arange(1000, dtype=numpy.int32))


def test_blocking_queues_and_event_flags(context):
    assert not skein.Queue(context).blocking(0)
    queue = skein.Queue(context, [0], blocking=True)
    assert queue.blocking(0)
    start = queue.record_event(0)
    host = numpy.arange(4099, dtype=numpy.float32)
    x = skein.Array.from_host(queue, host)
    end = queue.record_event(0, blocking_sync=True)
    untimed = queue.record_event(0, disable_timing=True)
    end.wait()
    untimed.wait()
    assert end.time_since(start) >= 0.0
    with pytest.raises(skein.LogicError, match="timing"):
        untimed.time_since(start)
    numpy.testing.assert_array_equal(x.get(), host)


def test_devices_by_pci_bus_id(backend):
    api, platform = backend
    for device in platform.devices:
        if device.params.pci_bus_id is None:
            with pytest.raises(skein.LogicError, match="tells no PCI bus id"):
                device.pci_bus_id()
            continue
        assert skein.Device.from_pci_bus_id(api, device.pci_bus_id()) == device
        assert skein.Device.from_pci_bus_id(api, device.pci_bus_id().upper()) == device
    with pytest.raises(skein.LogicError, match="is no PCI bus id"):
        skein.Device.from_pci_bus_id(api, "not an id")
