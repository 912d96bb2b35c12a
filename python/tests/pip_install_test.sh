#!/usr/bin/env bash
# `pip install .` as a user runs it (CTest: python_pip_install): pip builds the wheel in an
# isolated environment with the build requirements of pyproject.toml (scikit-build-core,
# pybind11), installs it into a temporary directory, and the package imported from there, in a
# process that does not see the build tree's package, runs the Python suite (its cluster tests
# on the build tree's servers). Needs the package index, as scripts/setup does.
#   pip_install_test.sh SOURCE BUILD
# The wheel's CMake build is kept in BUILD-pip beside BUILD, so a rerun rebuilds only what
# changed, and on a first run its compiles are ccache's hits on BUILD's objects (paths the same
# relative to each build directory; see CMakeLists.txt).
set -euo pipefail
source=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/fampool-pip-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() {
    echo "pip_install_test: $*" >&2
    exit 1
}

# So that ccache serves the wheel's compiles from BUILD's objects, the wheel is built as BUILD
# is: through ccache (FAMPOOL_CCACHE, off in a user's wheel build), RelWithDebInfo (-O2 and
# line tables, stripped from the wheel; a user's wheel is Release, -O3), and with BUILD's
# compilers (pip's environment would pick g++ by that name, and ccache counts the name).
# --no-deps: numpy, the one runtime dependency, is installed by scripts/setup already.
same=(-C cmake.define.FAMPOOL_CCACHE=ON -C cmake.build-type=RelWithDebInfo)
for lang in C CXX; do
    compiler=$(sed -n "s/^CMAKE_${lang}_COMPILER:[A-Z]*=//p" "$build/CMakeCache.txt" || true)
    [ -z "$compiler" ] || same+=(-C "cmake.define.CMAKE_${lang}_COMPILER=$compiler")
done
python3 -m pip install --no-deps --target "$work/site" -C build-dir="$build-pip" \
    "${same[@]}" "$source" > "$work/pip.log" 2>&1 ||
    { tail -n 40 "$work/pip.log" >&2; fail "pip install failed"; }

cd "$work"
export PYTHONPATH=$work/site FAMPOOL_HOME=$work/home FAMPOOL_SHM_DIR=$work/shm
unset FAMPOOL_CONFIG
export FAMPOOL_BUILD_DIR=$build  # the fampool CLI and servers of the cluster tests
where=$(python3 -c "import fampool; print(fampool.__file__)")
[ "$where" = "$work/site/fampool/__init__.py" ] || fail "imported fampool from $where"
python3 - <<'PYTHON' || fail "the installed package does not work"
import numpy as np
import fampool
with fampool.Fam() as fam:
    region = fam.create_region("installed", 16 << 20)
    a = fampool.array(fam, region, "a", np.arange(100.0).reshape(10, 10))
    assert np.array_equal(a[2:4, 5], [25.0, 35.0])
    fam.destroy_region(region)
PYTHON
python3 -m pytest -q -p no:cacheprovider "$source/python/tests" ||
    fail "the Python suite fails on the installed package"
