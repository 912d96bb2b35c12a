#!/usr/bin/env bash
# The installed package, as another project finds it (CTest: install_package). Installs the
# build tree BUILD into a temporary prefix; checks the headers, library, binaries and CMake
# package files are there and the binaries run from it; builds tests/install's unchanged
# OpenFAM program out of tree against it both ways, with CMake (find_package(fampool 0.1
# REQUIRED), target fampool::fampool) and with pkg-config (whose paths must name the prefix
# installed into), a program that names OpenFAM's types qualified (openfam::...) and reaches
# struct stat through fam/fam.h, and a C program with fam/fam_c.h; runs them on the embedded
# model; and checks that find_package refuses a version the package is not.
#   install_test.sh BUILD SOURCE
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/fampool-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() {
    echo "install_test: $*" >&2
    exit 1
}

cmake --install "$build" --prefix "$prefix" > "$work/install.log" || fail "cmake --install failed"
for file in include/fam/fam.h include/fam/fam_c.h include/fam/fam_exception.h bin/fampool \
    bin/fampool-server; do
    [ -e "$prefix/$file" ] || fail "$file is not installed under $prefix"
done
library=$(find "$prefix" -name 'libfampool.so' | head -n 1)
[ -n "$library" ] || fail "libfampool.so is not installed"
libdir=$(dirname "$library")
for file in fampoolConfig.cmake fampoolConfigVersion.cmake fampoolTargets.cmake; do
    [ -e "$libdir/cmake/fampool/$file" ] || fail "$libdir/cmake/fampool/$file is missing"
done
[ -e "$libdir/pkgconfig/fampool.pc" ] || fail "$libdir/pkgconfig/fampool.pc is missing"

# The installed programs find the installed library by themselves.
env -u LD_LIBRARY_PATH "$prefix/bin/fampool" --help > /dev/null ||
    fail "the installed fampool does not run"
env -u LD_LIBRARY_PATH "$prefix/bin/fampool-server" --help > /dev/null ||
    fail "the installed fampool-server does not run"

# CMake: find_package(fampool 0.1 REQUIRED).
cmake -S "$source/tests/install" -B "$work/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; fail "configuring with find_package failed"; }
cmake --build "$work/with-cmake" > "$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; fail "building with fampool::fampool failed"; }
# A version the package is not.
if cmake -S "$source/tests/install" -B "$work/too-new" -DCMAKE_PREFIX_PATH="$prefix" \
    -DFAMPOOL_WANTED=9.0 > "$work/too-new.log" 2>&1; then
    fail "find_package(fampool 9.0) accepted version 0.1"
fi
grep -q "version" "$work/too-new.log" || fail "find_package(fampool 9.0) failed without naming the version"

# pkg-config: its paths name the prefix installed into.
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs fampool)
case "$flags" in
*"-I$prefix/include"*"-L$libdir"* | *"-L$libdir"*"-I$prefix/include"*) ;;
*) fail "pkg-config says \"$flags\", not the prefix $prefix" ;;
esac
# shellcheck disable=SC2086
g++ -std=c++17 "$source/tests/install/openfam_program.cpp" -o "$work/with-pkg-config" $flags ||
    fail "building with pkg-config's flags failed"
# OpenFAM 3.2's qualified names and its header's <sys/stat.h>, with the same flags.
# shellcheck disable=SC2086
g++ -std=c++17 -Wall -Werror "$source/tests/install/openfam_qualified.cpp" \
    -o "$work/qualified" $flags || fail "building the program of qualified OpenFAM names failed"
cat > "$work/c_program.c" << 'PROGRAM'
#include <fam/fam_c.h>
#include <stdio.h>
int main(void) {
    c_fam *fam = c_fam_create();
    if (c_fam_initialize(fam, "default", NULL) != 0) {
        fprintf(stderr, "%s\n", c_fam_error_msg());
        return 1;
    }
    c_fam_region_desc *region = c_fam_create_region(fam, "install_c", 1 << 20, 0777, NULL);
    int ok = region != NULL && c_fam_destroy_region(fam, region) == 0;
    c_fam_finalize(fam, "default");
    c_fam_delete(fam);
    return ok ? 0 : 1;
}
PROGRAM
# shellcheck disable=SC2086
gcc -std=c11 "$work/c_program.c" -o "$work/c_program" $flags || fail "building the C program failed"

# All three run on the embedded model, the library found through the run path.
export FAMPOOL_HOME=$work/home FAMPOOL_SHM_DIR=$work/shm LD_LIBRARY_PATH=$libdir
"$work/with-cmake/openfam_program" || fail "the program built with CMake failed"
"$work/with-pkg-config" || fail "the program built with pkg-config failed"
"$work/c_program" || fail "the C program failed"
"$work/qualified" || fail "the program of qualified OpenFAM names failed"
echo "install_test: installed into $prefix, built and ran with CMake, pkg-config (two" \
    "programs) and C"
