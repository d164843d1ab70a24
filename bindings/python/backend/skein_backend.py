# SPDX-License-Identifier: BSD-3-Clause
"""A PEP 517 build backend for the Python package skein: `pip wheel .` (offline, with nothing from
outside Debian's archive: scikit-build-core is not in Debian 12) drives Skein's CMake build.

It configures the source tree with SKEIN_WITH_PYTHON=ON for the interpreter that runs it, without
the tests, apps, benchmarks, docs and the Fortran module, installs into a staging prefix laid out
as the wheel's `skein/` folder (the module, the package's Python files and Skein's shared
libraries side by side, whose RPATHs are then $ORIGIN/../skein: each other), and zips that folder
with the .dist-info that PEP 427 asks for.

The wheel is for this interpreter and this machine (tag cpXY-cpXY-linux_<arch>): it bundles Skein's
own libraries, not the system's that they were built against (OpenCL's ICD loader, MPI, HDF5,
OpenSSL; CUDA's driver and NVRTC are loaded at run time), which the target machine must have.

Settings (environment, or pip's --config-settings / -C with the same names in lower case):
    SKEIN_WHEEL_BUILD_DIR   the CMake build folder (default: build-wheel in the source tree, so that
                            a second `pip wheel .` rebuilds only what changed)
    SKEIN_WHEEL_CMAKE_ARGS  more configure arguments (split on spaces)
    JOBS                    parallel build jobs (default: every core)
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# The wheel's package folder, as the staging prefix's CMAKE_INSTALL_LIBDIR: the libraries' RPATH
# ($ORIGIN/../<libdir>) then names the folder they and the module share.
PACKAGE = "skein"
# Installed files of the prefix that are not the package (headers, CMake and pkg-config files).
LEFT_OUT = ("cmake", "pkgconfig")


def _metadata():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        cmake_version = re.search(r"project\(Skein VERSION ([0-9.]+)", f.read()).group(1)
    if project["version"] != cmake_version:
        raise RuntimeError(f"skein_backend: pyproject.toml's version {project['version']} is not "
                           f"CMakeLists.txt's {cmake_version}: make them the same")
    return project


def _metadata_text(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}",
             f"Version: {project['version']}", f"Summary: {project['description']}",
             f"Requires-Python: {project['requires-python']}",
             f"License: {project['license']['text']}"]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _tag():
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{py}-{py}-{platform}"


def _dist_info(project):
    return f"{project['name']}-{project['version']}.dist-info"


def _setting(config_settings, name, default):
    config_settings = config_settings or {}
    return config_settings.get(name.lower(), os.environ.get(name, default))


def _run(command):
    print("skein_backend:", " ".join(command), flush=True)
    # As tools/build.sh: ccache's results independent of where the tree lies, and usable with the
    # precompiled headers.
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", ROOT)
    env.setdefault("CCACHE_SLOPPINESS", "pch_defines,time_macros")
    env.setdefault("CCACHE_DEPEND", "1")
    subprocess.run(command, check=True, stdout=sys.stderr, env=env)  # pip shows stderr with -v


def _build(config_settings, prefix):
    build_dir = os.path.abspath(_setting(config_settings, "SKEIN_WHEEL_BUILD_DIR",
                                         os.path.join(ROOT, "build-wheel")))
    jobs = str(_setting(config_settings, "JOBS", os.cpu_count() or 2))
    configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DSKEIN_WITH_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}",
                 "-DSKEIN_BUILD_TESTS=OFF", "-DSKEIN_BUILD_APPS=OFF",
                 "-DSKEIN_BUILD_BENCHMARKS=OFF", "-DSKEIN_BUILD_DOCS=OFF",
                 "-DSKEIN_WITH_FORTRAN=OFF",
                 f"-DCMAKE_INSTALL_LIBDIR={PACKAGE}", "-DSKEIN_PYTHON_INSTALL_DIR=."]
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    configure += _setting(config_settings, "SKEIN_WHEEL_CMAKE_ARGS", "").split()
    _run(configure)
    _run(["cmake", "--build", build_dir, "--parallel", jobs])
    _run(["cmake", "--install", build_dir, "--prefix", prefix])
    return os.path.join(prefix, PACKAGE)


def _soname(path):
    """The library's SONAME (what the module and the other libraries ask the loader for)."""
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True)
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out.stdout)
    return m.group(1) if m else os.path.basename(path)


def _package_files(package_dir):
    """(path on disk, path in the wheel) of the package's files: the module and the Python files,
    and each shared library once, under its SONAME (a wheel holds no symbolic links)."""
    files = {}
    for name in sorted(os.listdir(package_dir)):
        path = os.path.join(package_dir, name)
        if name in LEFT_OUT or os.path.isdir(path):
            continue
        if name.endswith(".py") or name.startswith("_skein."):
            files[f"{PACKAGE}/{name}"] = path
        elif name.startswith("lib") and ".so" in name and not os.path.islink(path):
            files[f"{PACKAGE}/{_soname(path)}"] = path
    if not any(n.startswith(f"{PACKAGE}/_skein.") for n in files):
        raise RuntimeError(f"skein_backend: the build installed no module skein._skein into "
                           f"{package_dir}: was SKEIN_WITH_PYTHON turned off?")
    return [(path, arcname) for arcname, path in files.items()]


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, project, files):
    name = f"{project['name']}-{project['version']}-{_tag()}.whl"
    dist_info = _dist_info(project)
    generated = {
        f"{dist_info}/METADATA": _metadata_text(project).encode(),
        f"{dist_info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: skein_backend\n"
                               f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode(),
        f"{dist_info}/top_level.txt": f"{PACKAGE}\n".encode(),
    }
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, arcname in files:
            with open(path, "rb") as f:
                data = f.read()
            info = zipfile.ZipInfo(arcname)
            info.external_attr = (os.stat(path).st_mode & 0o777 | 0o100000) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
            record.append(_record_line(arcname, data))
        for arcname, data in generated.items():
            whl.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        record.append(f"{dist_info}/RECORD,,")
        whl.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return name


# --- PEP 517 hooks ---------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []  # CMake, a compiler, pybind11 and NumPy come from the system, not from pip


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _metadata()
    dist_info = os.path.join(metadata_directory, _dist_info(project))
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata_text(project))
    return _dist_info(project)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _metadata()
    with tempfile.TemporaryDirectory(prefix="skein-wheel-") as prefix:
        files = _package_files(_build(config_settings, prefix))
        return _write_wheel(wheel_directory, project, files)
