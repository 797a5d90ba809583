"""Stage 6, rendering: findings and traces as terminal text, plain text, JSON, HTML or SVG. Only
this stage imports rich. It reads plain data (records, diagnostics, and results by their
attributes) and imports nothing of the report, so the report can render itself through it.

* ``shapes``: a colour per dimension name, so a jumbled axis stands out in a column of shapes;
* ``trace``: the trace, one line per op (fast: a training loop records 100k ops);
* ``fold``: repeated blocks, loops, optimizer steps and layer initialisation folded to one line;
* ``findings``: diagnostics, targets, reports and the rule table as rich renderables;
* ``console``: consoles and the thin ``print_*`` layer (library code returns renderables);
* ``text``: plain text at a fixed width for logs (pytest failure messages and sections);
* ``safe``: control characters in user text shown escaped, for every console (one place);
* ``exporters``: ``EXPORTERS``, the one table of report formats that the command line and the
  pytest plugin read;
* ``html``: the HTML report, built from data (summary, findings, trace tree, heatmaps);
* ``notebook``: the HTML a notebook shows; ``github``: findings as GitHub Actions commands.
"""

from .console import FILE_WIDTH, default_width, make_console, print_report, print_trace
from .exporters import (
    EXPORTERS,
    Exporter,
    UnknownFormat,
    exporter_for_path,
    exporter_named,
    format_choices,
)
from .findings import (
    diagnostic_renderable,
    report_renderable,
    rules_renderable,
    summary_text,
    target_renderable,
)
from .safe import SafeConsole, safe_text
from .shapes import DIM_STYLES, SEVERITY_STYLES, dim_style, shape_text
from .text import failed_traces_text, failure_text, plain_text, results_text
from .trace import trace_renderable

__all__ = [
    "DIM_STYLES", "EXPORTERS", "FILE_WIDTH", "default_width", "SEVERITY_STYLES", "Exporter", "UnknownFormat", "diagnostic_renderable",
    "dim_style", "exporter_for_path", "exporter_named", "failed_traces_text", "failure_text",
    "format_choices", "make_console", "plain_text", "print_report", "print_trace",
    "SafeConsole", "report_renderable", "results_text", "rules_renderable", "safe_text",
    "shape_text", "summary_text",
    "target_renderable", "trace_renderable",
]
