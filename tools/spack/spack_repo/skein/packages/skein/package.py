# SPDX-License-Identifier: BSD-3-Clause
"""Spack recipe of Skein (docs/guide.md, "Installing": the variants and how to use it).

Each dependency variant maps to one SKEIN_WITH_* option of cmake/SkeinOptions.cmake
(SKEIN_WITH_VARIANTS below), set ON or OFF, never AUTO: what Spack concretised is what gets built,
and a dependency that cannot be found fails the configure step instead of being left out. The ctest
check tools.spack.variants (tools/spack/check_variants.py) fails when an option and this mapping
drift apart.
"""

import os

try:  # Spack 1.x: the build systems live in the builtin package repository.
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:  # Spack 0.2x
    from spack.package import CMakePackage

from spack.package import *  # noqa: F401,F403 (Spack's directives: version, variant, depends_on...)

# Variant -> the CMake option it sets (ON when the variant is on, OFF otherwise).
SKEIN_WITH_VARIANTS = {
    "cuda": "SKEIN_WITH_CUDA",
    "nccl": "SKEIN_WITH_NCCL",
    "opencl": "SKEIN_WITH_OPENCL",
    "clblast": "SKEIN_WITH_CLBLAST",
    "mpi": "SKEIN_WITH_MPI",
    "hdf5": "SKEIN_WITH_HDF5",
    "dlpack": "SKEIN_WITH_DLPACK",
    "fortran": "SKEIN_WITH_FORTRAN",
    "python": "SKEIN_WITH_PYTHON",
}

# The clone this recipe sits in: tools/spack/spack_repo/skein/packages/skein/package.py.
_SOURCE_TREE = os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 6)))


class Skein(CMakePackage):
    """Multi-GPU, multi-rank runtime for HPC simulation codes: one API over CUDA and OpenCL devices
    (backends discovered at run time), MPI/NCCL collectives, distributed arrays, parallel HDF5 I/O
    and checkpoints."""

    # Skein has no published repository or release yet: `main` is the branch of the clone this
    # recipe is in (a local git fetch); `spack develop --path <clone> skein@main` in an
    # environment builds the clone's working tree instead.
    # A release adds version("X.Y.Z", tag="vX.Y.Z", commit="<hash>") once it is tagged.
    git = "file://" + _SOURCE_TREE

    license("BSD-3-Clause")

    version("main", branch="main")

    variant("cuda", default=False, description="CUDA backend (driver API, NVRTC, cuBLAS)")
    variant("nccl", default=False, description="NCCL collectives between CUDA devices")
    variant("opencl", default=True, description="OpenCL backend (any OpenCL driver, e.g. PoCL)")
    variant("clblast", default=False, description="BLAS on OpenCL devices through CLBlast")
    variant("mpi", default=True, description="MPI: ranks and the MPI collectives backend")
    variant("hdf5", default=True, description="Parallel HDF5 I/O and checkpoints")
    variant("dlpack", default=False, description="DLPack tensors (<skein/dlpack.hpp>)")
    variant("fortran", default=False, description="The Fortran module `use skein` (over the C API)")
    variant("python", default=False, description="The Python package `skein` (pybind11, NumPy)")
    variant("shared", default=True, description="Shared libraries")
    variant("apps", default=False, description="skein-info, skein-heat, skein-cg, skein-bench")

    conflicts("+nccl", when="~cuda", msg="NCCL runs between CUDA devices: +nccl needs +cuda")
    conflicts("+nccl", when="~mpi", msg="the NCCL backend is set up over MPI: +nccl needs +mpi")
    conflicts("+clblast", when="~opencl", msg="CLBlast is an OpenCL library: +clblast needs +opencl")
    conflicts("+hdf5", when="~mpi", msg="Skein's HDF5 I/O writes distributed arrays: +hdf5 needs +mpi")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")  # skein.pc names the .pc files of MPI, OpenCL, HDF5
    depends_on("fmt")
    depends_on("openssl")  # libcrypto: SHA-256 of the compile cache and the checkpoints
    depends_on("cuda", when="+cuda")
    depends_on("nccl", when="+nccl")
    depends_on("opencl", when="+opencl")
    depends_on("clblast", when="+clblast")
    depends_on("mpi", when="+mpi")
    depends_on("hdf5+mpi", when="+hdf5")
    depends_on("nlohmann-json", type="build", when="+hdf5")  # checkpoint markers (io)
    depends_on("dlpack", when="+dlpack")
    depends_on("fortran", type="build", when="+fortran")
    extends("python", when="+python")
    depends_on("py-pybind11", type="build", when="+python")
    depends_on("py-numpy", type=("build", "run"), when="+python")
    depends_on("py-mpi4py", type="run", when="+python+mpi")
    depends_on("cli11", type="build", when="+apps")
    depends_on("nlohmann-json", type="build", when="+apps")
    depends_on("libpng", when="+apps")  # skein-heat --png
    depends_on("googletest", type="test")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define(option, "ON" if spec.satisfies("+" + variant) else "OFF")
            for variant, option in SKEIN_WITH_VARIANTS.items()
        ]
        args += [
            self.define_from_variant("BUILD_SHARED_LIBS", "shared"),
            self.define_from_variant("SKEIN_BUILD_APPS", "apps"),
            # The test suite only under `spack install --test=root`; never the benchmarks or the
            # Doxygen reference, nor warnings as errors (a newer compiler's warning must not fail
            # an installation).
            self.define("SKEIN_BUILD_TESTS", self.run_tests),
            self.define("SKEIN_BUILD_BENCHMARKS", False),
            self.define("SKEIN_BUILD_DOCS", False),
            self.define("SKEIN_WARNINGS_AS_ERRORS", False),
        ]
        if spec.satisfies("+cuda"):
            args.append(self.define("CUDAToolkit_ROOT", spec["cuda"].prefix))
        if spec.satisfies("+nccl"):
            args.append(self.define("NCCL_ROOT", spec["nccl"].prefix))
        return args
