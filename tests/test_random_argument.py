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


_noise = partial(resolved.result, DATA / "noise.py")


def _line(text: str) -> int:
    lines = (DATA / "noise.py").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_gaussian_noise_per_sample_is_a_warning_that_says_it_may_be_meant():
    result = _noise("NoiseInjection", inputs=["x=B,C,T"])
    [found] = result.diagnostics
    assert (found.rule, found.severity) == ("nondeterministic-eval", "warning")
    assert found.line == _line("noise = torch.randn")
    assert "Gaussian noise drawn for every sample" in found.message and "self.training" in found.hint


def test_noise_drawn_only_while_training_is_clean_and_written():
    """Its eval forward returns its input unchanged, reading no parameter: not a stub, since in
    training it computes."""
    result = _noise("NoiseWhenTraining", inputs=["x=B,C,T"])
    assert result.error is None and not result.diagnostics, result.diagnostics


def test_weights_drawn_in_forward_stay_an_error():
    result = _noise("WeightsDrawnInForward")
    errors = resolved.errors(result)
    assert errors == [("nondeterministic-eval", _line("mixing = torch.randn"))], result.diagnostics
    assert "Gaussian noise" not in result.diagnostics[0].message
