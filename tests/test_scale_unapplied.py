"""attention-scale: unscaled scores are an error when the module made the 1/sqrt(head size)
itself and never applied it (the line that made it named); unscaled on purpose stays a warning,
a scale made and applied is clean."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

FILE = Path(__file__).parent / "data" / "scales" / "unapplied.py"


def _line(text: str) -> int:
    return next(i for i, line in enumerate(FILE.read_text().splitlines(), 1) if text in line)


def _scales(cls: str):
    result = resolved.result(FILE, cls)
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.rule == "attention-scale"]


def test_a_scale_made_and_never_applied_is_an_error_at_the_scores():
    (found,) = _scales("ForgottenScale")
    assert found.severity == "error"
    assert found.line == _line("scores = q @ k.transpose(-2, -1)")
    assert f"`self.scale` = 0.2774 at {FILE}:{_line('self.scale = dim_head ** -0.5')}" in found.message \
        or f"unapplied.py:{_line('self.scale = dim_head ** -0.5')}, and never applies it" in found.message
    assert "`self.scale`" in found.hint


def test_unscaled_on_purpose_stays_a_warning():
    (found,) = _scales("FoldedScale")
    assert found.severity == "warning" and "never applies" not in found.message


@pytest.mark.parametrize("cls", ["ScaleByName"])
def test_a_scale_made_and_applied_is_clean(cls):
    assert _scales(cls) == []


def test_an_attribute_read_anywhere_else_is_not_said_to_be_unread():
    from shapetrace.rules.scale_unapplied import _made_unread

    class Shown:
        def __init__(self):
            self.scale = 0.25

        def extra_repr(self):
            return f"scale={self.scale}"

    class Unread:
        def __init__(self):
            self.scale = 0.25

    assert _made_unread(Shown, "scale") is None
    file, line = _made_unread(Unread, "scale")
    assert file == __file__ and line == _line_here("self.scale = 0.25", 2)


def _line_here(text: str, nth: int) -> int:
    lines = [i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if text in line]
    return lines[nth - 1]
