"""position-frequencies: a sinusoidal table whose frequency ladder an exponent's precedence
broke is found at the line that made the frequencies, wherever the table lives (attributes made
at construction, a buffer of frequencies turned into angles in forward, a complex table, an
absolute position buffer, a time step embedding); the same tables built right, a table with pairs
left unturned on purpose and a sine of a signal stay quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

import resolved

FILE = Path(__file__).parent / "data" / "tables" / "ladders.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TABLE = {"init": {"dim": "C", "max_len": 16}, "inputs": ["x=B,T,C"], "dims": {"C": 32}}
HEADS = {"init": {"dim": "C", "heads": "H"}, "inputs": ["x=B,T,C"], "dims": {"H": 2, "d": 16}}
STEPS = {"init": {"dim": "C"}, "inputs": ["t=B:long:1000"], "dims": {"C": 32}}


def _line(text: str) -> int:
    return next(i for i, line in enumerate(FILE.read_text().splitlines(), 1) if text in line)


def _found(cls: str, options: dict):
    result = resolved.result(FILE, cls, **options)
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.rule == "position-frequencies"]


@pytest.mark.parametrize("cls, options, made, used", [
    pytest.param("RotaryAttributesPrecedence", TABLE,
                 "inv_freq = 1.0 / (base ** torch.arange(0, dim, 2).float() / dim)",
                 "return x * self.cos[:T] + _halves(x) * self.sin[:T]", id="attributes"),
    pytest.param("RotaryForwardPrecedence", HEADS,
                 'self.register_buffer("inv_freq", 1.0 / 10000 ** torch.arange(0, d, 2)',
                 "q = q * emb.cos() + _halves(q) * emb.sin()", id="forward"),
    pytest.param("RotaryComplexPrecedence", TABLE,
                 "freqs = 1.0 / (theta ** torch.arange(0, dim, 2)[: dim // 2].float() / dim)",
                 "return torch.view_as_real(xc * self.freqs_cis[:T])", id="complex"),
    pytest.param("SinusoidFloorDivision", TABLE,
                 "div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim // 2))",
                 "return x + self.pe[:, : x.size(1)]", id="absolute"),
    pytest.param("TimestepPrecedence", STEPS,
                 "freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32)) / half",
                 "return self.mlp(torch.cat([torch.cos(args), torch.sin(args)], dim=-1))",
                 id="time-steps"),
])
def test_a_broken_ladder_is_found_at_the_line_that_made_the_frequencies(cls, options, made, used):
    found = _found(cls, options)
    assert len(found) == 1, [(d.line, d.message) for d in found]  # cos and sin, q and k: once
    (finding,) = found
    assert finding.severity == "error"
    assert finding.line == _line(made), finding.message
    assert finding.used_at[1] == _line(used)
    assert "turn at least 10⁹ times slower than the fastest" in finding.message
    assert "parentheses" in finding.hint


@pytest.mark.parametrize("cls, options", [
    pytest.param("RotaryAttributes", TABLE, id="attributes"),
    pytest.param("RotaryForward", HEADS, id="forward"),
    pytest.param("RotaryComplex", TABLE, id="complex-base-500000"),
    pytest.param("Sinusoid", TABLE, id="absolute"),
    pytest.param("Timestep", STEPS, id="time-steps"),
    pytest.param("RotaryHalfZeroPadded", {**TABLE, "dims": {"C": 16}}, id="pairs-unturned-on-purpose"),
    pytest.param("SnakeActivation", {}, id="sine-of-a-signal"),
    pytest.param("FourierGrid", {"init": {"dim": "C"}, "inputs": ["x=B,T,C"]}, id="grid-through-zero"),
])
def test_tables_built_right_stay_quiet(cls, options):
    result = resolved.result(FILE, cls, **options)
    assert result.error is None, result.error
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []


def test_a_ladder_that_multiplies_the_positions_wraps_and_is_found():
    """Rates of 10000 ** (2i/d) multiplying the positions: the pairs turn by up to thousands of
    radians per position, read back modulo a turn as steps that go up and down; found at the
    line that made the rates, used where the table is read. Dividing by them stays quiet."""
    found = _found("SinusoidRatesMultiplied", TABLE)
    assert len(found) == 1, [(d.line, d.message) for d in found]
    (finding,) = found
    rates = "rates = 10000.0 ** (torch.arange(0, dim, 2).float() / dim)"
    assert finding.line == next(i for i, line in enumerate(FILE.read_text().splitlines(), 1)
                                if rates in line)
    assert finding.used_at[1] == _line("return x + self.pe[:, : x.size(1)]")
    assert "above π per position" in finding.message
    assert _found("SinusoidRatesDivided", TABLE) == []


def test_a_complex_buffer_keeps_its_imaginary_part_in_the_float64_copy():
    """``Module.to(float64)`` would cast a complex rotary table to its real part."""
    import torch

    from shapetrace.behaviour.runs import to_float64

    table = torch.polar(torch.ones(3, 2), torch.tensor([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]))
    module = torch.nn.Module()
    module.register_buffer("freqs_cis", table)
    module.plain = table.clone()
    copied = to_float64(module)
    assert copied.freqs_cis.dtype == torch.complex128 and copied.plain.dtype == torch.complex128
    assert torch.allclose(copied.freqs_cis, table.to(torch.complex128))
