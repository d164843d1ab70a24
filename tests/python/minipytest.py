# SPDX-License-Identifier: BSD-3-Clause
"""A stand-in for pytest where it is not installed (the GPU machine's Python may lack it, and has
no network to install it): runs test files written for pytest with the part of pytest that the
suite uses, and says so in its first line.

    python3 tests/python/minipytest.py tests/python/test_core.py tests/python/test_interop.py

What it knows: conftest.py's fixtures and pytest_configure(config), fixtures with params (ids) and
yield, the built-in fixtures request, capsys, tmp_path and monkeypatch, stacked
pytest.mark.parametrize, pytest.skip / importorskip / raises(match=) / fail / approx / UsageError.
Exits 1 when a test fails or errs (with its traceback), 0 otherwise; the last line is pytest's
("N passed, M skipped in S s")."""

import contextlib
import importlib.util
import inspect
import io
import itertools
import os
import pathlib
import re
import sys
import tempfile
import time
import traceback
import types


class _Skipped(Exception):
    pass


class UsageError(Exception):
    pass


def skip(reason=""):
    raise _Skipped(reason)


def fail(reason=""):
    raise AssertionError(reason)


def importorskip(name, reason=None):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise _Skipped(reason or f"could not import {name!r}") from None


@contextlib.contextmanager
def raises(expected, match=None):
    info = types.SimpleNamespace(value=None, type=None)
    try:
        yield info
    except expected as e:
        info.value, info.type = e, type(e)
        if match is not None and not re.search(match, str(e)):
            raise AssertionError(f"{match!r} does not match {str(e)!r}") from e
        return
    raise AssertionError(f"DID NOT RAISE {expected}")


def approx(expected, rel=1e-6, abs=1e-12):  # noqa: A002 (pytest's names)
    import numpy

    class _Approx:
        def __eq__(self, other):
            return bool(numpy.allclose(other, expected, rtol=rel, atol=abs))

        def __repr__(self):
            return f"approx({expected!r})"
    return _Approx()


def fixture(func=None, *, params=None, ids=None, scope="function", autouse=False):
    def mark(f):
        f._fixture = types.SimpleNamespace(params=params, ids=ids)
        return f
    return mark(func) if func is not None else mark


class _Mark:
    def parametrize(self, names, values, ids=None):
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = [v if len(names) > 1 else (v,) for v in values]

        def mark(f):
            f._parametrize = getattr(f, "_parametrize", []) + [(names, rows)]
            return f
        return mark

    def __getattr__(self, name):  # any other mark (slow, skipif is not used) changes nothing
        return lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))


def _pytest_module():
    module = types.ModuleType("pytest")
    for name in ("skip", "fail", "importorskip", "raises", "approx", "fixture", "UsageError"):
        setattr(module, name, globals()[name])
    module.mark = _Mark()
    return module


class _Capsys:
    def __init__(self):
        self.out, self.err = io.StringIO(), io.StringIO()

    def readouterr(self):
        result = types.SimpleNamespace(out=self.out.getvalue(), err=self.err.getvalue())
        self.out.seek(0), self.out.truncate(), self.err.seek(0), self.err.truncate()
        return result


class _MonkeyPatch:
    def __init__(self):
        self.undo = []

    def setattr(self, target, name, value):
        self.undo.append((setattr, target, name, getattr(target, name)))
        setattr(target, name, value)

    def setenv(self, name, value):
        self.undo.append((None, name, os.environ.get(name)))
        os.environ[name] = str(value)

    def delenv(self, name, raising=True):
        self.undo.append((None, name, os.environ.get(name)))
        os.environ.pop(name, None)

    def close(self):
        for item in reversed(self.undo):
            if item[0] is setattr:
                setattr(*item[1:])
            elif item[2] is None:
                os.environ.pop(item[1], None)
            else:
                os.environ[item[1]] = item[2]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fixtures(module):
    return {n: f for n, f in vars(module).items() if hasattr(f, "_fixture")}


def _param_fixtures(func, fixtures, seen=None):
    """The fixtures with params that `func` needs, directly or through other fixtures."""
    seen = seen if seen is not None else []
    for arg in inspect.signature(func).parameters:
        f = fixtures.get(arg)
        if f is None or arg in seen:
            continue
        if f._fixture.params is not None:
            seen.append(arg)
        _param_fixtures(f, fixtures, seen)
    return seen


def _cases(func, fixtures):
    """(id, {fixture: param}, {argument: value}) for every case of a test."""
    pfix = _param_fixtures(func, fixtures)
    fix_choices = [[(i, p) for i, p in enumerate(fixtures[n]._fixture.params)] for n in pfix]
    par = getattr(func, "_parametrize", [])
    for fchoice in itertools.product(*fix_choices):
        for pchoice in itertools.product(*[rows for _, rows in par]):
            params = {n: p for n, (_, p) in zip(pfix, fchoice)}
            args = {}
            for (names, _), row in zip(par, pchoice):
                args.update(zip(names, row))
            ids = [str(fixtures[n]._fixture.ids[i]) if fixtures[n]._fixture.ids else str(i)
                   for n, (i, _) in zip(pfix, fchoice)] + [str(v)[:20] for v in args.values()]
            yield "-".join(ids), params, args


def _call(func, fixtures, params, args, values, teardown):
    kwargs = {}
    for name in inspect.signature(func).parameters:
        if name in args:
            kwargs[name] = args[name]
        elif name in values:
            kwargs[name] = values[name]
        elif name == "request":
            kwargs[name] = types.SimpleNamespace(param=params.get(func.__name__))
        elif name == "capsys":
            capsys = values.setdefault("capsys", _Capsys())
            kwargs[name] = capsys
        elif name == "tmp_path":
            kwargs[name] = values.setdefault("tmp_path", pathlib.Path(tempfile.mkdtemp()))
        elif name == "monkeypatch":
            mp = values.setdefault("monkeypatch", _MonkeyPatch())
            teardown.append(mp.close)
            kwargs[name] = mp
        elif name in fixtures:
            f = fixtures[name]
            result = _call(f, fixtures, params, {}, values, teardown)
            if inspect.isgenerator(result):
                generator, result = result, next(result)
                teardown.append(lambda g=generator: next(g, None))
            values[name] = result
            kwargs[name] = result
        else:
            raise UsageError(f"fixture {name!r} not found")
    return func(**kwargs)


def _run_one(func, fixtures, params, args):
    values, teardown = {}, []
    capsys = values.setdefault("capsys", _Capsys())
    try:
        with contextlib.redirect_stdout(capsys.out), contextlib.redirect_stderr(capsys.err):
            _call(func, fixtures, params, args, values, teardown)
        return "passed", ""
    except _Skipped as e:
        return "skipped", str(e)
    except Exception:  # a failing test: its traceback, then the next test
        return "failed", traceback.format_exc()
    finally:
        for f in reversed(teardown):
            f()


def main(paths):
    print("minipytest: pytest is not installed; running the files with tests/python/minipytest.py")
    sys.modules["pytest"] = _pytest_module()
    start = time.monotonic()
    counts = {"passed": 0, "skipped": 0, "failed": 0}
    conftests = {}
    for path in paths:
        folder = os.path.dirname(os.path.abspath(path))
        sys.path.insert(0, folder)
        if folder not in conftests:
            conftest = os.path.join(folder, "conftest.py")
            conftests[folder] = _load(conftest, "conftest") if os.path.exists(conftest) else None
            if conftests[folder] is not None and hasattr(conftests[folder], "pytest_configure"):
                conftests[folder].pytest_configure(None)
        module = _load(path, os.path.splitext(os.path.basename(path))[0])
        fixtures = dict(_fixtures(conftests[folder]) if conftests[folder] else {})
        fixtures.update(_fixtures(module))
        for name, func in vars(module).items():
            if not name.startswith("test_") or not callable(func):
                continue
            for case_id, params, args in _cases(func, fixtures):
                outcome, text = _run_one(func, fixtures, params, args)
                counts[outcome] += 1
                label = f"{os.path.basename(path)}::{name}[{case_id}]"
                if outcome == "failed":
                    print(f"FAILED {label}\n{text}")
                elif outcome == "skipped":
                    print(f"SKIPPED {label}: {text}")
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    print(f"{summary} in {time.monotonic() - start:.2f}s")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
