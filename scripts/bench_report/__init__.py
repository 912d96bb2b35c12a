"""The pages of scripts/bench-report, one module per page (embedded, results, small_ops,
redundancy, intent, striped, security, python, apps), and what they share: plot.py (figures,
axes, PNG files, Markdown tables) and the readers and writer below.

Every page module has SUITES (the directories under the results directory it reads),
has_results(results) and write(results, docs, smoke), which writes its page and plots and
returns one line saying what it wrote.
"""
import csv
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO_DOCS = os.path.join(REPO, "docs", "bench")


def read_csv(path):
    """The rows of a CSV file as dicts; [] when the file does not exist."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_lines(path):
    """The non-empty lines of a text file, stripped; [] when the file does not exist."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def hand_written(docs, name):
    """A page's hand-written part: `name` in the docs directory being written, or else the
    repository's docs/bench (so that a page written elsewhere, as --smoke does, keeps it)."""
    for folder in (docs, REPO_DOCS):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def write_section(docs, name, begin_prefix, end, body):
    """Writes page `name` in the docs directory: its hand-written text (hand_written) with the
    part from the line starting `begin_prefix` to `end` replaced by `body`, or with `body`
    added at the end when it has no such part; returns the page's path."""
    template = hand_written(docs, name)
    doc = ""
    if template:
        with open(template) as f:
            doc = f.read()
    if begin_prefix in doc and end in doc:
        doc = doc[:doc.index(begin_prefix)] + body + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + body + "\n"
    page = os.path.join(docs, name)
    with open(page, "w") as f:
        f.write(doc)
    return page


def run_notes(skipped):
    """The Markdown paragraph a page gives a run's skipped steps (the lines of its suites'
    skipped.txt); [] when there were none."""
    if not skipped:
        return []
    return ["Steps skipped in this run:\n\n" + "".join(f"- {line}\n" for line in skipped)]
