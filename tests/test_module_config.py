"""Module-level configuration (nanoGPT's gpt.py) is set to the probe sizes as the file loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shapetrace.base.dims import Dims
from shapetrace.drive.modconfig import config_at
from shapetrace.drive.targets import resolve_targets

DATA = Path(__file__).parent / "data" / "names"
GPT = DATA / "gpt_module_config.py"


def _cli(*args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "shapetrace", *args, "--format", "json"],
                          capture_output=True, text=True, cwd=DATA, timeout=600)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


def _shapes(target: dict) -> set[str]:
    return {s for item in target["trace"] for s in (*item["inputs"], *item["outputs"])}


@pytest.fixture(scope="module")
def gpt_report():
    return _cli("gpt_module_config.py")


def test_lecture_gpt_checks_clean(gpt_report):
    code, report = gpt_report
    assert code == 0, report
    for target in report["targets"]:
        assert target["error"] is None, target
        assert [d["rule"] for d in target["diagnostics"] if d["severity"] == "error"] == []


def test_lecture_gpt_axes_are_named(gpt_report):
    _, report = gpt_report
    by_name = {t["target"].split("::")[1]: t for t in report["targets"]}
    assert {"(B, T, C)", "(B, T, d)", "(B, T, 4*C)", "(B, T, V)"} <= _shapes(by_name["GPTLanguageModel"])
    head = _shapes(by_name["Head"])
    assert {"(B, T, C)", "(B, T, d)", "(B, T, T)"} <= head
    assert "(B, T, C)" in _shapes(by_name["MultiHeadAttention"])  # the heads concatenated: H*d


def test_width_set_by_dims_does_not_name_a_stray_head_size():
    """--dims C=384 with H=11 cannot give n_embd // n_head a name: the file runs at its own
    sizes, named from its own configuration, and 34 (384 // 11) never reads as 2*S."""
    code, report = _cli("gpt_module_config.py::Head", "--dims", "C=384")
    assert code == 0, report
    shapes = _shapes(report["targets"][0])
    assert "(B, T, C)" in shapes and "(B, T, d)" in shapes
    assert not [s for s in shapes if "S" in s or "34" in s]


def test_config_that_does_not_fit_runs_at_its_own_sizes():
    code, report = _cli("mismatched_config.py")
    assert code == 0, report
    target = report["targets"][0]
    assert target["error"] is None and target["diagnostics"] == [] or \
        not [d for d in target["diagnostics"] if d["severity"] == "error"]
    shapes = _shapes(target)
    assert "(B, T, C)" in shapes
    assert not [s for s in shapes if "S" in s or "V" in s]


def test_training_loop_is_not_run_and_globals_are_the_probe_sizes():
    dims = Dims()
    [target, *_] = resolve_targets(str(GPT) + "::Head", dims=dims)
    module = sys.modules[target.cls.__module__]
    assert module.trained == []  # the loop body would have appended (and raised)
    assert (module.n_embd, module.n_head, module.block_size, module.dropout) == \
        (dims["C"], dims["H"], dims["L"], 0.0)
    assert module.vocab_size == dims["V"]  # len(chars): set after the file ran
    assert target.own_dims is None


@pytest.mark.parametrize("source, rewritten", [
    pytest.param("n_embd = 64\nn_head = 4\nhead_size = n_embd // n_head\n", True, id="derived"),
    pytest.param("n_embd = 64\nn_head = 4\nhead_size = 16\n", True, id="consistent-literal"),
    pytest.param("n_embd = 64\nn_head = 4\nhead_size = 32\n", False, id="inconsistent"),
    pytest.param("n_embd = 66\nn_head = 4\n", False, id="width-not-divisible"),
])
def test_config_mapping(source, rewritten):
    config = config_at(source, Dims())
    namespace: dict = {}
    exec(compile(config.tree, "<config>", "exec"), namespace)  # noqa: S102
    assert (namespace["n_embd"] == Dims()["C"]) is rewritten
    assert (config.own_dims is None) is rewritten


def test_file_without_module_config_is_left_alone():
    assert config_at("import torch\nx = 3\n", Dims()) is None


def test_config_kept_with_no_size_read_is_made_from_what_is_read(tmp_path, capsys):
    """``self.args = args`` with only ``args.dropout`` read, and a block that keeps ``args``
    without reading it: the config is made from the fields read (dropout 0.0), an empty one
    where none is, and both classes run."""
    import textwrap

    from shapetrace.frontends.cli import main

    path = tmp_path / "pointy.py"
    path.write_text(textwrap.dedent('''
        import torch.nn as nn

        class Mixer(nn.Module):
            def __init__(self, args, channels=32):
                super().__init__()
                self.args = args
                self.proj = nn.Linear(channels, channels)

            def forward(self, x):
                return x + self.proj(x)

        class Head(nn.Module):
            def __init__(self, args, channels=32):
                super().__init__()
                self.args = args
                self.mixer = Mixer(args, channels)
                self.drop = nn.Dropout(p=args.dropout)

            def forward(self, x):
                return self.drop(self.mixer(x))
    '''))
    main([str(path), "--format", "json", "--no-trace"])
    report = json.loads(capsys.readouterr().out)
    assert {t["target"].rsplit("::", 1)[1]: t["error"] for t in report["targets"]} == \
        {"Mixer": None, "Head": None}
