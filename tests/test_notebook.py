"""Jupyter: a real notebook run in a real kernel (``nbclient`` + ``ipykernel``).

``tests/data/notebooks/attention_cells.ipynb`` loads the extension, runs a buggy cell and a
correct one under ``%%shapetrace --dims ...``, and shows a ``shapetrace.trace()`` as the cell's
value (``Trace._repr_html_``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import nbformat  # noqa: E402 - a test extra
import nbclient  # noqa: E402 - a test extra
import ipykernel  # noqa: E402,F401 - the kernel (a test extra)

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "tests" / "data" / "notebooks" / "attention_cells.ipynb"


@pytest.fixture(scope="module")
def executed():
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(REPO)}}).execute()
    return nb


def _outputs(nb, marker: str) -> list:
    cells = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    assert len(cells) == 1, marker
    return cells[0].outputs


def _data(outputs, mime: str) -> str:
    return "\n".join(o.get("data", {}).get(mime, "") for o in outputs)


def test_buggy_cell_shows_the_finding_at_its_line(executed):
    outputs = _outputs(executed, "# BUG: reshape-jumble")
    text, html = _data(outputs, "text/plain"), _data(outputs, "text/html")
    assert "error reshape-jumble [ST001]" in text
    assert ".py:10" in text  # the cell's line 10 (the magic's line counts as line 1 of the cell)
    assert "✗ 1 error" in text
    assert "reshape-jumble" in html and "<pre" in html
    assert "\x1b[" not in text


def test_correct_cell_is_clean_with_named_shapes(executed):
    outputs = _outputs(executed, "head_size = 16")
    text, html = _data(outputs, "text/plain"), _data(outputs, "text/html")
    assert "✓ no problems found" in text
    assert "torch.randn          → (B, T, C)" in text
    assert "F.softmax           (B, T, T) → (B, T, T)" in text
    assert "nn.init" in text  # nn.Linear's initialisation: one line each
    assert "kaiming" not in text
    assert "no problems found" in html


def test_a_trace_as_a_cell_value_displays_as_html(executed):
    outputs = _outputs(executed, "with st.trace() as t:")
    results = [o for o in outputs if o.output_type == "execute_result"]
    assert results and "text/html" in results[0].data
    html = results[0].data["text/html"]
    assert "torch.ones" in html and "<!DOCTYPE" not in html


def test_importing_shapetrace_imports_neither_ipython_nor_torch():
    code = ("import sys, shapetrace; shapetrace.load_ipython_extension; "
            "print(sorted(m for m in ('IPython', 'torch', 'ipykernel') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=True).stdout
    assert out.strip() == "[]"
