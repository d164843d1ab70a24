# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures and rules of the distributed suite, run by every rank of `mpirun -n N python3 -m pytest
tests/python/mpi` (ctest python.mpi.npN):

- every test has a time limit (SKEIN_TEST_TIMEOUT seconds, default 60, setup and teardown
  included): a collective that hangs prints every thread's traceback and ends the rank with exit
  status 1, which makes mpirun end the others, so CI fails instead of hanging;
- a failure on any rank fails the test on every rank: after each test the ranks gather their
  outcomes, and a rank that passed reports the others' failures as an error of its teardown;
  rank 0 prints the report (the other ranks' output goes to /dev/null), with each failed rank's
  traceback.

Fixtures: `runtime` (skein.Runtime adopting mpi4py's COMM_WORLD), `comm` (skein.Communicator over
every rank's devices), `queue` (the runtime's queue), `rng_seed` (the same on every rank: NumPy
references are computed on every rank from the same seeds), `shared_tmp` (a directory every rank
sees at the same path).
"""
import faulthandler
import os
import sys
import tempfile

import pytest
from mpi4py import MPI

import skein

WORLD = MPI.COMM_WORLD
TIMEOUT = float(os.environ.get("SKEIN_TEST_TIMEOUT", "60"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # Before the terminal reporter is made (it writes to sys.stdout as it is then): one report.
    if WORLD.rank != 0:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the whole run)


def pytest_report_header(config):
    return [f"skein mpi: {WORLD.size} rank(s), {MPI.Get_library_version().splitlines()[0]}"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # The time limit covers setup, call, teardown and the ranks' exchange of outcomes.
    faulthandler.dump_traceback_later(TIMEOUT, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.skein_failures = getattr(item, "skein_failures", []) + [
            f"{report.when}: {report.longreprtext}"]
    if report.when != "teardown":
        return
    # Every rank reaches each test's teardown (pytest runs it whatever happened before).
    mine = getattr(item, "skein_failures", [])
    everyone = WORLD.allgather(mine)
    failed = [r for r, f in enumerate(everyone) if f]
    if failed and not mine and report.passed:
        text = "\n".join(f"---- rank {r} ----\n" + "\n".join(everyone[r]) for r in failed)
        report.outcome = "failed"
        report.longrepr = (f"the test failed on rank(s) {failed} (this is rank {WORLD.rank}):\n"
                           f"{text}")


@pytest.fixture(scope="session")
def runtime():
    return skein.Runtime(comm=WORLD)


@pytest.fixture(scope="session")
def comm(runtime):
    return skein.Communicator(runtime)


@pytest.fixture(scope="session")
def queue(runtime):
    return runtime.queue


@pytest.fixture
def rng_seed(request):
    """A seed of the test's own (its name), the same on every rank."""
    return sum(request.node.name.encode()) + 12345


@pytest.fixture
def shared_tmp():
    """A directory every rank sees at the same path (made by rank 0, its path broadcast)."""
    path = tempfile.mkdtemp(prefix="skein-pytest-mpi-") if WORLD.rank == 0 else None
    path = WORLD.bcast(path, root=0)
    yield path
    WORLD.barrier()
    if WORLD.rank == 0:
        for root, dirs, files in os.walk(path, topdown=False):
            for name in files:
                os.remove(os.path.join(root, name))
            for name in dirs:
                os.rmdir(os.path.join(root, name))
        os.rmdir(path)
