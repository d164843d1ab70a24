#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages Skein needs to build and test, and only those that are missing:
# a second run finds everything installed and returns at once, without touching the network.
#
#   bash tools/install-deps.sh           what building, the demo and the tests need
#   bash tools/install-deps.sh --lint    and clang-format 16 and clang-tidy 16, for
#                                        tools/lint.sh (CI's lint phase; SKEIN_LINT=ON's tests)
#
# Runs as root, or through sudo when it is not root. The CUDA toolkit is not a Debian package here:
# install it separately (at /usr/local/cuda) if you want the CUDA backend compiled in.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ccache
  # libraries the framework, apps, tests and benchmarks use
  libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libdlpack-dev
  # SHA-256 (compile cache, checkpoints): OpenSSL's libcrypto
  libssl-dev
  # MPI (libopenmpi-dev has the `use mpi` module for gfortran too)
  openmpi-bin libopenmpi-dev
  # Fortran: the module `use skein` (bindings/fortran), its tests and example
  gfortran
  # OpenCL: ICD loader, headers, PoCL (CPU devices, so that everything runs without a GPU), clinfo
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  # BLAS for OpenCL
  libclblast-dev
  # parallel HDF5 and its command-line tools
  libhdf5-openmpi-dev hdf5-tools
  # Python: the package `skein` (bindings/python: pybind11 over the headers of python3-dev) and its
  # suite (pytest, mpi4py for the distributed layer); NumPy and h5py also check the apps' outputs
  python3 python3-dev python3-numpy python3-h5py pybind11-dev python3-pytest python3-mpi4py
  # PNG output of the apps
  libpng-dev
  # the API reference (target docs, test docs.doxygen); no graphviz: the reference draws no graphs
  doxygen
  # Slurm and munge for the batch scripts' test on a one-node cluster (tests/slurm); srun's pmix
  # plugin (in slurm-wlm-basic-plugins) loads the unversioned libpmix.so of libpmix-dev
  slurm-wlm munge libpmix-dev
)
if [[ "${1:-}" == --lint ]]; then
  # One version of each, so that every machine formats and checks alike (tools/lint.sh).
  PACKAGES+=(clang-format-16 clang-tidy-16)
elif (($# > 0)); then
  echo "install-deps: unknown argument '$1' (usage: $0 [--lint])" >&2
  exit 2
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: this script needs a Debian-based system (dpkg-query and apt-get)." >&2
  echo "install-deps: install these packages' equivalents by hand: ${PACKAGES[*]}" >&2
  exit 1
fi

is_installed() {
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" == "installed" ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages are installed; nothing to do."
  exit 0
fi

SUDO=()
if ((EUID != 0)); then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: not root and sudo is not available; run as root to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"

still_missing=()
for pkg in "${missing[@]}"; do
  is_installed "$pkg" || still_missing+=("$pkg")
done
if ((${#still_missing[@]} != 0)); then
  echo "install-deps: these packages are still not installed: ${still_missing[*]}" >&2
  exit 1
fi
echo "install-deps: installed ${missing[*]}"
