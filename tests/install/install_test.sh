#!/usr/bin/env bash
# The installed package, as another project finds it (CTest: install_package). Installs the
# build tree BUILD into a temporary prefix; checks the headers, library, binaries and CMake
# package files are there and the binaries run from it; builds tests/install's unchanged
# OpenFAM program out of tree against it both ways, with CMake (find_package(fampool 0.1
# REQUIRED), target fampool::fampool) and with pkg-config (whose paths must name the prefix
# installed into), a program that names OpenFAM's types qualified (openfam::...) and reaches
# struct stat through fam/fam.h, a C program with fam/fam_c.h, and a program built against
# OpenFAM 3.2's declarations (tests/install/openfam32) linked as an OpenFAM binary and run with
# only the library path pointing at fampool; runs them on the embedded model; and checks that
# find_package refuses a version the package is not.
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

# docs/first-program.md: its program is examples/first_program.cc, word for word.
python3 - "$source" << 'CHECK' || fail "docs/first-program.md's program is not examples/first_program.cc"
import sys
source = sys.argv[1]
program = open(f"{source}/examples/first_program.cc").read()
doc = open(f"{source}/docs/first-program.md").read()
block = doc.split("```c++\n", 1)[1].split("```", 1)[0]
sys.exit(0 if program[program.index("#include <fam/fam.h>"):] == block else 1)
CHECK
first=$source/examples/first_program.cc
# The build tree, the three ways docs/first-program.md gives.
(cd "$source" && g++ -std=c++17 "$first" -o "$work/first-flags" -I include -L "$build/src" \
    -lfampool -Wl,-rpath,"$build/src") || fail "the first program with the documented flags"
# shellcheck disable=SC2046
g++ -std=c++17 "$first" -o "$work/first-tree-pc" \
    $(PKG_CONFIG_PATH=$build/src pkg-config --cflags --libs fampool) ||
    fail "the first program with pkg-config on the build tree"
cmake -S "$source/tests/install" -B "$work/tree-cmake" -DCMAKE_PREFIX_PATH="$build/src" \
    -DFAMPOOL_FIRST_PROGRAM="$first" > "$work/tree-cmake.log" 2>&1 ||
    { cat "$work/tree-cmake.log" >&2; fail "find_package on the build tree failed"; }
cmake --build "$work/tree-cmake" > "$work/tree-build.log" 2>&1 ||
    { cat "$work/tree-build.log" >&2; fail "building with find_package on the build tree failed"; }

# CMake: find_package(fampool 0.1 REQUIRED).
cmake -S "$source/tests/install" -B "$work/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DFAMPOOL_FIRST_PROGRAM="$first" \
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
# shellcheck disable=SC2086
g++ -std=c++17 "$first" -o "$work/first-installed-pc" $flags ||
    fail "the first program with pkg-config on the install"
# OpenFAM 3.2's qualified names and its header's <sys/stat.h>, with the same flags.
# shellcheck disable=SC2086
g++ -std=c++17 -Wall -Werror "$source/tests/install/openfam_qualified.cpp" \
    -o "$work/qualified" $flags || fail "building the program of qualified OpenFAM names failed"
# An OpenFAM 3.2 binary. openfam_abi_program.cpp is built against tests/install/openfam32
# (OpenFAM 3.2's declarations and class layouts), so it references exactly what a program
# built with OpenFAM does; every such symbol must be in fampool's libopenfam.so.
for name in libopenfam.so libopenfam.so.3; do
    [ -e "$libdir/$name" ] || fail "$libdir/$name is not installed"
done
g++ -std=c++17 -Wall -c "$source/tests/install/openfam_abi_program.cpp" \
    -I "$source/tests/install/openfam32" -o "$work/abi.o" || fail "building the ABI program failed"
nm -u "$work/abi.o" | awk '{print $2}' | grep -E '^_Z(NK?7openfam|T[ISV]N7openfam)' | sort -u \
    > "$work/abi.needed"
[ "$(wc -l < "$work/abi.needed")" -gt 200 ] || fail "the ABI program references too few symbols"
nm -D --defined-only "$libdir/libopenfam.so" | awk '{print $3}' | sort -u > "$work/abi.defined"
missing=$(comm -23 "$work/abi.needed" "$work/abi.defined" | c++filt)
[ -z "$missing" ] || fail "libopenfam.so lacks what OpenFAM 3.2 programs call: $missing"
# Linked as OpenFAM would link it: against a stand-in libopenfam.so with OpenFAM's soname and
# those symbols (empty), so that the binary needs libopenfam.so by name; then run on fampool's.
mkdir -p "$work/openfam-stub"
awk '/^_ZT[ISV]/ {print "char " $1 "[64];"; next} {print "void " $1 "(void) {}"}' \
    "$work/abi.needed" > "$work/openfam-stub/stub.c"
gcc -shared -fPIC -o "$work/openfam-stub/libopenfam.so" -Wl,-soname,libopenfam.so \
    "$work/openfam-stub/stub.c" || fail "building the stand-in libopenfam.so failed"
g++ "$work/abi.o" -o "$work/abi_program" -L "$work/openfam-stub" -lopenfam ||
    fail "linking the ABI program failed"
readelf -d "$work/abi_program" | grep -q 'NEEDED.*\[libopenfam.so\]' ||
    fail "the ABI program does not need libopenfam.so"
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
for first in "$work/first-flags" "$work/first-tree-pc" "$work/tree-cmake/first_program" \
    "$work/with-cmake/first_program" "$work/first-installed-pc"; do
    "$first" > /dev/null || fail "$first failed"
done
"$work/qualified" || fail "the program of qualified OpenFAM names failed"
# The OpenFAM binary on fampool by its library path alone; every symbol bound at load.
LD_BIND_NOW=1 "$work/abi_program" || fail "the OpenFAM 3.2 binary failed on fampool"
echo "install_test: installed into $prefix, built and ran with CMake, pkg-config (two" \
    "programs), C, and an OpenFAM 3.2 binary"
