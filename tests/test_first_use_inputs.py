"""A forward input whose name says nothing is read from its first use: a new trailing axis
(``x.unsqueeze(1)``, ``x[:, None]``, ``x.view(x.size(0), 1)``) makes it one value per sample,
(B,), made as a diffusion timestep is; the module is then checked with nothing declared."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import resolved
from shapetrace.drive.input_reads import spec_by_first_use

FILE = Path(__file__).parent / "data" / "first_use" / "values.py"

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("cls, name", [("NoiseLevelEmbedding", "noise_level"),
                                       ("StepIndexed", "step"), ("StepViewed", "step")])
def test_a_value_per_sample_is_read_from_its_first_use(cls, name):
    result = resolved.result(FILE, cls)
    assert result.error is None, result.error
    first = result.to_json()["trace"][0]
    assert first["source"].startswith(name) and first["inputs"] == ["(B,)"], first
    assert [d.rule for d in result.diagnostics if d.severity == "error"] == []


def _read(source: str, name: str, folder: Path):
    import importlib.util

    path = folder / "reading.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("reading", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return spec_by_first_use(name, module.forward)


@pytest.mark.parametrize("source", [
    "def forward(self, x):\n    return self.conv(x.unsqueeze(1))\n",
    "def forward(self, x):\n    return x[:, None, :] * 2\n",
    "def forward(self, x):\n    return x.view(x.size(0), 3, -1)\n",
    "def forward(self, x):\n    h = self.norm(x)\n    return h.unsqueeze(1)\n",
])
def test_other_first_uses_say_nothing_of_one_value_per_sample(source, tmp_path):
    spec = _read(source, "x", tmp_path)
    if "conv(x.unsqueeze(1))" in source:
        assert spec is not None  # a new axis all the same: read, and the forward decides
    else:
        assert spec is None
