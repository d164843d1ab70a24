# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of the Python suite: every test that takes `queue` (or `context`) runs once per backend
present, as the C++ suites do (tests/support/backends.cpp): each platform with a device of each
available API (CUDA, NVIDIA's OpenCL, PoCL, ...).

    SKEIN_TEST_EXPECT_APIS=opencl,cuda   these APIs must be available with a device, or the run
                                         fails before any test (a run can never pass by finding
                                         nothing to test)
"""

import os
import tempfile

import pytest

import skein


def _backends():
    found = []
    for api in skein.API.all_available():
        for platform in api.platforms:
            if platform.devices:
                found.append((api, platform))
    return found


BACKENDS = _backends()


def _backend_id(backend):
    api, platform = backend
    return f"{api.shortcut}-{platform.index}"


def pytest_configure(config):
    # Compiled kernels go to a cache of this run's own, never the user's.
    if "SKEIN_CACHE_DIR" not in os.environ:
        os.environ["SKEIN_CACHE_DIR"] = tempfile.mkdtemp(prefix="skein-pytest-cache-")
    expected = [s for s in os.environ.get("SKEIN_TEST_EXPECT_APIS", "").split(",") if s]
    present = {api.shortcut for api, _ in BACKENDS}
    missing = [s for s in expected if s not in present]
    if missing:
        raise pytest.UsageError(
            f"SKEIN_TEST_EXPECT_APIS asks for {','.join(missing)}, which has no device here "
            f"(available: {', '.join(sorted(present)) or 'none'}; skein.API.status(): "
            f"{skein.API.status()})")


def pytest_report_header(config):
    lines = []
    for api, platform in BACKENDS:
        lines.append(f"skein backend {_backend_id((api, platform))}: {platform.name}, "
                     f"{len(platform.devices)} device(s)")
    return lines or ["skein: no backend with a device"]


@pytest.fixture(params=BACKENDS, ids=[_backend_id(b) for b in BACKENDS])
def backend(request):
    return request.param


@pytest.fixture
def context(backend):
    """A context on the first device of the backend's platform."""
    _, platform = backend
    return skein.Context.from_devices(platform.devices[0])


@pytest.fixture
def queue(context):
    return skein.Queue(context)


@pytest.fixture
def multi_context(backend):
    """A context on up to two devices of the backend's platform (skips where it has one)."""
    _, platform = backend
    if len(platform.devices) < 2:
        pytest.skip("the platform has one device")
    return skein.Context.from_devices(platform.devices[:2])
