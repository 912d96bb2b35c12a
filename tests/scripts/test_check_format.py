"""scripts/check-format: the tree is laid out as .clang-format says, a file that is not is
named, and --fix lays it out."""
import os
import re
import shutil
import subprocess
import sys

import pytest

SOURCE = os.environ.get("FAMPOOL_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
CHECK = os.path.join(SOURCE, "scripts", "check-format")


def clang_format_14():
    tool = shutil.which("clang-format")
    if not tool:
        return False
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    return re.search(r"version 14\.", version) is not None


pytestmark = pytest.mark.skipif(not clang_format_14(),
                                reason="needs clang-format 14 (scripts/setup installs it)")


def run(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True,
                          timeout=120)


def test_the_repository_is_laid_out():
    result = run(SOURCE)
    assert result.returncode == 0, result.stdout


def test_a_file_out_of_layout_is_named_and_fix_lays_it_out(tmp_path):
    shutil.copy(os.path.join(SOURCE, ".clang-format"), tmp_path / ".clang-format")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.cc").write_text("int  f( int x ){return x+1;}\n")
    (tmp_path / "src" / "b.cc").write_text("int g(int x) { return x; }\n")
    result = run(str(tmp_path))
    assert result.returncode == 1, result.stdout
    assert "src/a.cc: not clang-formatted" in result.stdout
    assert "b.cc" not in result.stdout
    assert run("--fix", str(tmp_path)).returncode == 0
    assert (tmp_path / "src" / "a.cc").read_text() == "int f(int x) { return x + 1; }\n"
    assert run(str(tmp_path)).returncode == 0
