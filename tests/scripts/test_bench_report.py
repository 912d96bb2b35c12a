"""scripts/bench-report: the committed pages are what it writes from the committed results
(bench/results/SUITE/), and a smoke run with results missing writes what it can and says what
it skipped."""
import os
import shutil
import subprocess
import sys

SOURCE = os.environ.get("FAMPOOL_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
REPORT = os.path.join(SOURCE, "scripts", "bench-report")
# Pages written from results alone, as committed: (page under docs/, written under DOCS/..).
PAGES = ["bench/RESULTS.md", "bench/redundancy.md", "bench/intent.md", "apps.md"]
SUMMARIES = ["small-ops/summary.md", "security/summary.md"]


def report(*args):
    return subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True,
                          timeout=300)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_committed_pages_are_what_the_committed_results_give(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(os.path.join(SOURCE, "bench", "results"), results)
    docs = tmp_path / "docs" / "bench"
    done = report("--results", str(results), "--docs", str(docs))
    assert done.returncode == 0, done.stdout + done.stderr
    for page in PAGES:
        assert read(tmp_path / "docs" / page) == read(os.path.join(SOURCE, "docs", page)), \
            f"docs/{page} differs from what scripts/bench-report writes: run it and commit"
    for summary in SUMMARIES:
        assert read(results / summary) == \
            read(os.path.join(SOURCE, "bench", "results", summary)), summary
    for plot in ["results_transfer.png", "results_threads.png", "results_placement.png",
                 "results_metadata.png", "small_ops_rate.png", "small_ops_threads.png",
                 "redundancy.png", "intent_workloads.png", "security_same_node.png",
                 "apps_ratios.png", "apps_sorts.png"]:
        assert (docs / plot).stat().st_size > 10000, plot


def test_smoke_run_skips_suites_without_results(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    for suite in ["embedded", "transfer", "placement", "metadata", "apps"]:
        (results / suite).mkdir(parents=True)
        (results / suite / "skipped.txt").write_text(f"{suite}: not here\n"
                                                     if suite == "placement" else "")
    done = report("embedded", "transfer", "apps", "--results", str(results), "--docs", str(docs),
                  "--smoke")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "apps: no results" in done.stdout and "embedded: nothing to write" in done.stdout
    page = read(docs / "RESULTS.md")
    assert "A smoke run" in page and "- placement: not here" in page
    assert "## Notes" not in page
    assert not (docs / "apps.md").exists()


def test_unknown_suite_is_refused(tmp_path):
    done = report("nonesuch", "--results", str(tmp_path), "--docs", str(tmp_path))
    assert done.returncode == 2 and "no suite 'nonesuch'" in done.stderr
