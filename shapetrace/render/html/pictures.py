"""Pictures as inline SVG: a head's attention weights as a heatmap, a dependency grid.

Colours come from the page's stylesheet (classes, not fills), so both pictures follow the light
or dark scheme and print. Every label is escaped (``esc``)."""

from __future__ import annotations

from .text import esc

CELL = 16
MARGIN = 34
SCALE = 1.5  # how much larger a grid of at most 12 x 12 cells shows


def _frame(n_rows: int, n_cols: int, label: str, rows: str, cols: str, body: list[str]) -> str:
    """The picture's frame: the column axis' name above, the row axis' name to the left
    (reading downwards, clear of the row numbers), every fifth number when there are many.
    A small grid shows larger than its cells (it is drawn at ``SCALE``)."""
    width, height = MARGIN + n_cols * CELL + 4, MARGIN + n_rows * CELL + 4
    scale = SCALE if max(n_rows, n_cols) <= 12 else 1
    head = [f'<svg class="pic" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'width="{width * scale:g}" height="{height * scale:g}" '
            f'viewBox="0 0 {width} {height}" aria-label="{esc(label)}">',
            f'<text class="axis" x="{MARGIN}" y="9">{esc(cols)} →</text>',
            f'<text class="axis" x="2" y="{MARGIN}" transform="rotate(90 2 {MARGIN})">'
            f'{esc(rows)} →</text>']
    for c in range(n_cols):
        if n_cols <= 12 or c % 5 == 0:
            head.append(f'<text class="tick" x="{MARGIN + c * CELL + CELL / 2}" y="{MARGIN - 4}" '
                        f'text-anchor="middle">{c}</text>')
    for r in range(n_rows):
        if n_rows <= 12 or r % 5 == 0:
            head.append(f'<text class="tick" x="{MARGIN - 4}" y="{MARGIN + r * CELL + CELL - 3}" '
                        f'text-anchor="end">{r}</text>')
    return "".join(head + body) + "</svg>"


def heatmap_svg(weights: list[list[float]], rows: str, cols: str) -> str:
    """One head's weights: darker is more weight (scaled to the largest), a hatched cell a
    weight of exactly 0 (masked out). Each cell's value shows on hover."""
    n_rows, n_cols = len(weights), max((len(r) for r in weights), default=0)
    top = max((v for row in weights for v in row if isinstance(v, (int, float))), default=0) or 1
    body = []
    for r, row in enumerate(weights):
        for c, value in enumerate(row):
            x, y = MARGIN + c * CELL, MARGIN + r * CELL
            if not isinstance(value, (int, float)):  # a non-finite weight, written as a string
                cls, style, shown = "nan", "", esc(str(value))
            elif value == 0:
                cls, style, shown = "masked", "", "0 (masked)"
                body.append(f'<path class="hatch" d="M{x} {y + CELL - 1}L{x + CELL - 1} {y}"/>')
            else:
                cls, style = "w", f' style="fill-opacity:{max(value / top, 0.04):.3f}"'
                shown = f"{value:.4g}"
            body.append(f'<rect class="{cls}" x="{x}" y="{y}" width="{CELL - 1}" '
                        f'height="{CELL - 1}"{style}><title>{esc(rows)} {r}, {esc(cols)} {c}: '
                        f'{shown}</title></rect>')
    label = f"attention weights of one head: rows {rows}, columns {cols}"
    return _frame(n_rows, n_cols, label, f"query {rows}", f"key {cols}", body)


_GRID_CLASSES = {0: "unused", 1: "used", 2: "leak"}
_GRID_WORDS = {0: "unused", 1: "used", 2: "used but forbidden (leak)"}


def grid_svg(grid: dict) -> str:
    """A dependency grid: rows are outputs, columns inputs; used cells filled, leaks red with
    a cross."""
    cells = grid.get("cells") or []
    n_rows, n_cols = len(cells), max((len(r) for r in cells), default=0)
    body = []
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            x, y = MARGIN + c * CELL, MARGIN + r * CELL
            body.append(f'<rect class="{_GRID_CLASSES.get(value, "unused")}" x="{x}" y="{y}" '
                        f'width="{CELL - 1}" height="{CELL - 1}"><title>output {r}, input {c}: '
                        f'{_GRID_WORDS.get(value, "")}</title></rect>')
            if value == 2:
                body.append(f'<path class="cross" d="M{x + 3} {y + 3}L{x + CELL - 4} '
                            f'{y + CELL - 4}M{x + CELL - 4} {y + 3}L{x + 3} {y + CELL - 4}"/>')
    rows, cols = grid.get("row_axis", "output"), grid.get("col_axis", "input")
    return _frame(n_rows, n_cols, f"dependency grid: rows {rows}, columns {cols}", rows, cols,
                  body)
