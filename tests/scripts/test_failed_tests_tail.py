"""scripts/failed-tests-tail: after a failed CTest run, each failed test's name and the end of
its output, and nothing for the tests that passed."""
import os
import subprocess
import sys

SOURCE = os.environ.get("FAMPOOL_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
TAIL = os.path.join(SOURCE, "scripts", "failed-tests-tail")


def record(index, name, output, result):
    return (f"{index}/9 Testing: {name}\n{index}/9 Test: {name}\nCommand: \"x\"\n"
            f"Output:\n{'-' * 58}\n{output}<end of output>\nTest time =   1.00 sec\n"
            f"{'-' * 58}\n{result}\n\"{name}\" end time: Dec 06 12:29 UTC\n\n")


def run(build_dir, *args):
    return subprocess.run([sys.executable, TAIL, str(build_dir), *args], capture_output=True,
                          text=True, timeout=60)


def write_log(tmp_path, text):
    log_dir = tmp_path / "Testing" / "Temporary"
    log_dir.mkdir(parents=True)
    (log_dir / "LastTest.log").write_text("Start testing: Dec 06 12:23 UTC\n" + "-" * 58 + "\n"
                                          + text)


def test_prints_the_end_of_each_failed_test_only(tmp_path):
    many = "".join(f"line {i}\n" for i in range(100))
    write_log(tmp_path, record(1, "quiet_one", "all fine\n", "Test Passed.")
              + record(2, "soak_short", many + "soak: worker 2 hung\n", "Test Failed.")
              + record(3, "other_one", "boom\n", "Test Failed."))
    result = run(tmp_path, "--lines", "5")
    assert result.returncode == 0, result.stderr
    assert "quiet_one" not in result.stdout and "all fine" not in result.stdout
    assert "=== soak_short failed; the last 5 lines" in result.stdout
    assert "soak: worker 2 hung" in result.stdout and "line 96" in result.stdout
    assert "line 95" not in result.stdout
    assert "=== other_one failed; the last 1 lines" in result.stdout and "boom" in result.stdout


def test_prints_nothing_when_every_test_passed(tmp_path):
    write_log(tmp_path, record(1, "a", "ok\n", "Test Passed."))
    result = run(tmp_path)
    assert result.returncode == 0 and result.stdout == ""


def test_a_missing_log_is_an_error_that_names_it(tmp_path):
    result = run(tmp_path)
    assert result.returncode == 1
    assert "LastTest.log" in result.stderr
