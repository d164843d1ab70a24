#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed Python package: `import skein` from an install prefix, from another directory, with
# nothing but PYTHONPATH=<prefix>/lib/pythonX.Y/site-packages (no LD_LIBRARY_PATH): the module and
# every Skein library it loads must come from the prefix (its RPATH), never from the build tree.
#
#   tests/python/test_install.sh PREFIX PYTHON [SITE]
#
# SITE (default PREFIX/lib/pythonX.Y/site-packages) is the folder that holds the package (a wheel
# installed with pip --target: SITE is PREFIX). Called by tests/consumer/run.sh after its install
# (one install serves both checks) and by tests/python/test_wheel.sh.
set -euo pipefail

if (($# < 2 || $# > 3)); then
  echo "usage: $0 PREFIX PYTHON [SITE]" >&2
  exit 2
fi
PREFIX="$(cd "$1" && pwd -P)"
PYTHON="$2"
version="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
site="${3:-$PREFIX/lib/python$version/site-packages}"
[[ -f "$site/skein/__init__.py" ]] || {
  echo "python install: FAIL: no $site/skein/__init__.py (installed: $(find "$PREFIX" -name '_skein*.so' | head -n 1))" >&2
  exit 1
}
elsewhere="$(mktemp -d "${TMPDIR:-/tmp}/skein-python-install.XXXXXX")"
trap 'rm -rf "$elsewhere"' EXIT
cd "$elsewhere"
echo "python install: PYTHONPATH=$site $PYTHON -c 'import skein' (in $elsewhere)"
env -u LD_LIBRARY_PATH PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 PREFIX="$PREFIX" "$PYTHON" -c '
import os
import skein
prefix = os.environ["PREFIX"]
assert os.path.realpath(skein.__file__).startswith(prefix + "/"), skein.__file__
with open("/proc/self/maps") as maps:
    loaded = {line.split()[-1] for line in maps if "libskein" in line or "_skein" in line}
outside = [p for p in loaded if not os.path.realpath(p).startswith(prefix + "/")]
assert loaded and not outside, f"loaded from outside {prefix}: {outside}"
print(f"python install: skein {skein.__version__} from {os.path.dirname(skein.__file__)}, "
      f"{len(loaded)} Skein libraries from the prefix; APIs: {skein.API.status()}")
'
echo "python install: passed"
