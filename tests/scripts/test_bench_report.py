"""scripts/bench-report: the committed pages are what it writes from the committed results
(bench/results/SUITE/), a smoke run with results missing writes what it can and says what it
skipped, and the embedded page and small-ops' large transfers are what small fixtures give."""
import csv
import os
import shutil
import subprocess
import sys

SOURCE = os.environ.get("FAMPOOL_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
REPORT = os.path.join(SOURCE, "scripts", "bench-report")
# Pages written from results alone, as committed: (page under docs/, written under DOCS/..).
PAGES = ["bench/RESULTS.md", "bench/embedded.md", "bench/redundancy.md", "bench/intent.md",
         "bench/striped.md", "apps.md"]
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
    for plot in ["embedded_transfers.png", "results_transfer.png", "results_threads.png",
                 "results_placement.png", "results_metadata.png", "small_ops_rate.png",
                 "small_ops_threads.png",
                 "redundancy.png", "intent_workloads.png", "striped.png",
                 "security_same_node.png",
                 "apps_ratios.png", "apps_sorts.png"]:
        assert (docs / plot).stat().st_size > 10000, plot


def test_smoke_run_skips_suites_without_results(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    for suite in ["embedded", "transfer", "placement", "metadata", "apps"]:
        (results / suite).mkdir(parents=True)
        (results / suite / "skipped.txt").write_text(f"{suite}: not here\n"
                                                     if suite == "placement" else "")
    done = report("embedded", "transfer", "cluster", "apps", "--results", str(results),
                  "--docs", str(docs), "--smoke")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "apps: no results" in done.stdout and "embedded: no results" in done.stdout
    assert "cluster: no results" in done.stdout
    page = read(docs / "RESULTS.md")
    assert "A smoke run" in page and "- placement: not here" in page
    assert "## Notes" not in page
    assert not (docs / "apps.md").exists()


def test_unknown_suite_is_refused(tmp_path):
    done = report("nonesuch", "--results", str(tmp_path), "--docs", str(tmp_path))
    assert done.returncode == 2 and "no suite 'nonesuch'" in done.stderr


def write_csv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        out.writerows(rows)


TRANSFERS = ["label", "model", "provider", "op", "size_bytes", "threads", "fampool_gbps",
             "baseline", "baseline_gbps", "ratio"]
MICROBENCH = ["metric", "size_bytes", "value", "unit", "baseline_value", "ratio"]
MIB = 1 << 20


def transfer_row(label, op, size, ours, theirs, baseline="memcpy"):
    return [label, "embedded" if label == "embedded" else "cluster",
            "-" if label == "embedded" else label.split("-")[1], op, size, 1, ours, baseline,
            theirs, ours / theirs]


def page_row(page, metric):
    """The cells of the row of `metric` in the page's targets table."""
    line = next(line for line in page.splitlines() if line.startswith(f"| {metric} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_embedded_page_checks_the_targets_from_both_files(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    write_csv(results / "embedded" / "microbench.csv", MICROBENCH, [
        ["memcpy_latency_p50", 256, 25, "ns", "", ""],
        ["get_blocking_latency_p50", 256, 34, "ns", 25, 1.36],
        ["put_blocking_latency_p50", 256, 250, "ns", 25, 10],     # over 200 ns: MISS
        ["local_atomic_fetch_add_uint64", 8, 6.1, "ns/op", "", ""],
        ["fetch_add_uint64", 8, 19.9, "ns/op", 6.1, 3.26],
        ["lookup_region_p50", 0, 1.5, "us", "", ""],
        ["allocate_deallocate_named_p50", 4096, 25.0, "us", 3.0, 8.3],  # over 20 us: MISS
        ["allocate_deallocate_anonymous_p50", 4096, 4.1, "us", 3.0, 1.37],
        ["create_destroy_region_p50", 64 * MIB, 0.0086, "ms", "", ""]])
    sizes = [256, 4096, 1 * MIB, 4 * MIB, 64 * MIB]
    rows = []
    for op in ["get", "put", "get_nb", "put_nb"]:
        for size in sizes:
            # put of 1 MiB at 0.80 of memcpy: MISS; the rest at 0.90 or more.
            ours = 6.0 if (op, size) == ("put", MIB) else 6.75 + size / (64 * MIB)
            rows.append(transfer_row("embedded", op, size, ours, 7.5))
    write_csv(results / "embedded" / "transfers.csv", TRANSFERS, rows)
    done = report("embedded", "--results", str(results), "--docs", str(docs))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 of 9 targets pass" in done.stdout
    page = read(docs / "embedded.md")
    assert page_row(page, "blocking get, 1 MiB")[1:3] == ["6.77 GB/s", "memcpy 7.50 GB/s (0.90×)"]
    assert page_row(page, "blocking get, 1 MiB")[-1] == "PASS"
    assert page_row(page, "blocking put, 1 MiB")[-1] == "**MISS**"
    assert page_row(page, "blocking get / put, 4–64 MiB")[1:] == [
        "6.81–7.75 GB/s", "memcpy 7.50 GB/s (0.91–1.03×)", "", "≥ 0.85× memcpy", "PASS"]
    assert page_row(page, "256 B blocking get, median latency")[-1] == "PASS"
    assert page_row(page, "256 B blocking put, median latency")[-1] == "**MISS**"
    assert page_row(page, "uint64 `fam_fetch_add`")[-1] == "PASS"
    assert page_row(page, "allocate + deallocate (4 KiB, named)")[1:] == [
        "25.0 µs", "two `fam_lookup_region` calls 3.00 µs", "82 µs", "≤ 20 µs", "**MISS**"]
    assert page_row(page, "allocate + deallocate (4 KiB, unnamed)")[-1] == "PASS"
    assert page_row(page, "create + destroy region (64 MiB, volatile)")[1:] == [
        "0.0086 ms", "", "197 ms", "≤ 2 ms", "PASS"]
    assert "6 of 9 targets pass." in page
    assert "## All transfer sizes" in page and "`transfer_bench api --label embedded" in page
    assert "| 1 MiB | 6.77 / 7.50 (0.90) | 6.00 / 7.50 (0.80) | 6.77 / 7.50 (0.90) |" in page
    assert "fam_microbench's transfer rows" not in page and "A smoke run" not in page
    assert "![" in page and "(embedded_transfers.png)" in page
    assert (docs / "embedded_transfers.png").stat().st_size > 10000


def test_embedded_page_falls_back_to_fam_microbench_transfer_rows(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    rows = [["get_blocking_latency_p50", 256, 34, "ns", 25, 1.36]]
    for size in [256, MIB, 4 * MIB]:
        rows.append(["memcpy", size, 7.0, "GB/s", "", ""])
        for metric in ["get_blocking", "put_blocking", "get_nonblocking", "put_nonblocking"]:
            rows.append([metric, size, 3.5, "GB/s", 7.0, 0.5])
    write_csv(results / "embedded" / "microbench.csv", MICROBENCH, rows)
    done = report("embedded", "--results", str(results), "--docs", str(docs), "--smoke")
    assert done.returncode == 0, done.stdout + done.stderr
    page = read(docs / "embedded.md")
    assert "A smoke run" in page and "fam_microbench's transfer rows" in page
    assert page_row(page, "blocking get, 1 MiB")[-1] == "**MISS**"
    assert page_row(page, "blocking get / put, 4–64 MiB")[-1] == "**MISS**"
    assert page_row(page, "uint64 `fam_fetch_add`")[1:] == ["–", "", "", "≤ 100 ns/op",
                                                            "no figure"]
    assert "| 4 MiB | 3.50 / 7.00 (0.50) |" in page
    assert (docs / "embedded_transfers.png").exists()


def test_small_ops_large_transfers_come_from_transfer_bench(tmp_path):
    results, docs = tmp_path / "results", tmp_path / "docs"
    folder = results / "small-ops"
    write_csv(folder / "tcp.csv", ["model", "kind", "op", "size_bytes", "threads", "context",
                                   "fampool", "blocking", "raw", "raw_batch", "nb_vs_blocking",
                                   "vs_raw"],
              [["cluster-tcp", "rate", "get", 256, 1, "default", 0.1, 0.05, 0.2, 0.2, 2, 0.5]])
    rows = []
    for op, scale in [("get", 1), ("put", 2), ("get_nb", 3), ("put_nb", 4)]:
        for size in [65536, MIB, 4 * MIB]:
            rows.append(transfer_row("cluster-tcp", op, size, scale, 2.0, "raw-libfabric"))
    rows.append(transfer_row("cluster-shm", "get", MIB, 9.0, 4.5, "raw-libfabric"))
    write_csv(folder / "transfers.csv", TRANSFERS, rows)
    done = report("small-ops", "--results", str(results), "--docs", str(docs))
    assert done.returncode == 0, done.stdout + done.stderr
    summary = read(folder / "summary.md").split("\n")
    heading = next(i for i, line in enumerate(summary)
                   if line.startswith("### Cluster over tcp: large transfers"))
    assert "`transfer_bench api`" in summary[heading]
    assert "raw libfabric with as many in flight" in summary[heading]
    assert summary[heading + 2:heading + 8] == [
        "| op | 64 KiB | 1 MiB | 4 MiB |", "|---|---|---|---|",
        "| get | 1.00 / 2.00 = 0.50 | 1.00 / 2.00 = 0.50 | 1.00 / 2.00 = 0.50 |",
        "| put | 2.00 / 2.00 = 1.00 | 2.00 / 2.00 = 1.00 | 2.00 / 2.00 = 1.00 |",
        "| get_nb | 3.00 / 2.00 = 1.50 | 3.00 / 2.00 = 1.50 | 3.00 / 2.00 = 1.50 |",
        "| put_nb | 4.00 / 2.00 = 2.00 | 4.00 / 2.00 = 2.00 | 4.00 / 2.00 = 2.00 |"]
    assert "| get | 9.00 / 4.50 = 2.00 |" in "\n".join(summary)  # shm: only its one row
    assert not any("kind" in line or "16 in flight)" in line for line in summary)
