"""What a failure asks of the sizes: an even one (``divisible by 2``), a square number of
tokens (an einops pattern that folds them into a grid, the module's own check), and whether a
failure came from the module's own code rather than from an op of torch's."""

from __future__ import annotations

import re

from ..base.source import is_library_file, source_line

#: words of an error or a line that ask for an even size
EVEN_ASKED = re.compile(r"divisible by 2\b|\beven\b|% ?2\b", re.I)
#: a sequence length that folds into a square grid (4 x 4) and is no probe size
SQUARE_LENGTH = 16
_GRID = re.compile(r"pattern \"?'?[^\"'>]*\((\w+) (\w+)\)[^\"'>]*->")


def grid_pattern(raised: BaseException) -> bool:
    """Whether ``raised`` is an einops error on a pattern that folds an axis into a grid
    (``b (h w) c -> b c h w``)."""
    return "einops" in type(raised).__module__.lower() and bool(_GRID.search(str(raised)))


#: the module's own check asking for a square number (``int(n ** 0.5) ** 2 != n: raise ...``)
SQUARE_ASKED = re.compile(r"\bsquare\b", re.I)


def raised_by_check(raised_at: tuple[str, int] | None) -> bool:
    """Whether a forward's exception was raised at a ``raise`` or an ``assert`` of the module's
    own code (``raised_at``: the user's file and line it came from): its own check refusing
    the inputs, not an op of torch's that failed."""
    if not raised_at or is_library_file(raised_at[0], installed_is_library=True):
        return False
    return source_line(raised_at[0], raised_at[1]).lstrip().startswith(("raise", "assert"))


def is_square(n: int) -> bool:
    return int(n ** 0.5) ** 2 == n
