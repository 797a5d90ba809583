"""nondeterministic-eval names the argument that made the op random: an SDPA call written over
several lines whose ``dropout_p`` ignores the module's mode is found at the ``dropout_p`` line,
the call as its use; the same call gated on ``self.training`` is clean."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import resolved

DATA = Path(__file__).parent / "data" / "random_args"


_check = partial(resolved.result, DATA / "sdpa_dropout.py")


def test_the_dropout_argument_is_named_not_only_the_call():
    result = _check("DropoutInEval")
    [found] = [d for d in result.diagnostics if d.severity == "error"]
    assert found.rule == "nondeterministic-eval"
    assert found.line == 19, (found.line, found.message)
    assert found.used_at is not None and found.used_at[1] == 17


def test_a_dropout_that_follows_the_mode_is_clean():
    result = _check("DropoutFollowsMode")
    assert result.error is None and not result.diagnostics
