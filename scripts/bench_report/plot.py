"""The conventions every page of scripts/bench-report shares: figures, axes, PNG files and
Markdown tables.

Figures are drawn with matplotlib's Agg backend (no display needed) and saved as PNG at DPI
dots per inch unless a page keeps another resolution. Axes of transfer sizes are log 2 with
their ticks named in B, KiB and MiB; axes of ratios to a baseline draw the 1.0 line (equal to
the baseline), so that the side of the line says which is faster.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

DPI = 110
SIZE_UNITS = (("MiB", 1 << 20), ("KiB", 1 << 10))


def size_text(n):
    """ "64 KiB" for 65536, "1 MiB" for 1048576, "100 B" for 100 (whole units only)."""
    n = int(n)
    for unit, scale in SIZE_UNITS:
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def figure(size, rows=1, cols=1, **options):
    """A figure of rows x cols panels, `size` (width, height) in inches; returns the figure and
    its panels as a grid: panels[row][col], even for one panel. `options` go to
    plt.subplots (sharey=True, ...)."""
    fig, panels = plt.subplots(rows, cols, figsize=size, squeeze=False, **options)
    return fig, panels


def log2_axis(ax):
    """A log-2 x axis (threads, clients, keys: counts that double)."""
    ax.set_xscale("log", base=2)


def _size_tick(value, _position):
    whole = int(round(value))
    if whole < 1 or abs(value - whole) > 1e-6 * value:
        return ""
    return size_text(whole)


def size_axis(ax, rotation=0):
    """A log-2 x axis of sizes in bytes, its ticks named 256 B, 2 KiB, 1 MiB... (turned by
    `rotation` degrees where narrow panels would make them overlap)."""
    log2_axis(ax)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_tick))
    if rotation:
        ax.tick_params(axis="x", labelrotation=rotation)


def ratio_line(ax, vertical=False, color="black", label=None):
    """The 1.0 line of an axis of ratios to a baseline (above or right of it: faster than the
    baseline), and the axis's label if given."""
    if vertical:
        ax.axvline(1.0, color=color, linewidth=0.8)
        if label:
            ax.set_xlabel(label)
    else:
        ax.axhline(1.0, color=color, linewidth=0.8)
        if label:
            ax.set_ylabel(label)


def panel(ax, title, xlabel, ylabel, legend=True):
    """A panel's title, axis labels, light grid and (when `legend`) a small legend."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if legend:
        ax.legend(fontsize=8)


def save(fig, path, dpi=DPI):
    """Writes the figure as a PNG file and frees it."""
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def table_lines(header, rows):
    """A Markdown table as a list of lines: the header, its rule, one line per row."""
    lines = ["| " + " | ".join(str(cell) for cell in header) + " |",
             "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def table(header, rows):
    """A Markdown table as text, ending with a newline."""
    return "\n".join(table_lines(header, rows)) + "\n"
