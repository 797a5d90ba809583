"""Constructor arguments the project's own scripts give, read where the scripts cannot run here:
a training script that imports a package not installed still says, in its imports, that it
builds the class of the file checked, and its call's literal keyword (``head_type="pretrain"``)
is used; a script that builds the model from its parsed options (``pooling=args.pooling``) gives
the option's declared default (``add_argument("--pooling", default="first")``).
The projects below are ours, written for the test."""

from __future__ import annotations

import textwrap

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODEL = '''
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, dim, heads, forward_mul):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(dim, dim * forward_mul), nn.GELU(),
                                nn.Linear(dim * forward_mul, dim))
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class Classifier(nn.Module):
    def __init__(self, dim, heads, forward_mul, head_type, pooling):
        super().__init__()
        if head_type not in ("pretrain", "finetune"):
            raise ValueError("head_type must be 'pretrain' or 'finetune'")
        self.pooling = {"mean": lambda h: h.mean(1), "first": lambda h: h[:, 0]}[pooling]
        self.encoder = Encoder(dim, heads, forward_mul)
        self.head = nn.Linear(dim, 10) if head_type == "finetune" else nn.Sequential(
            nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, 10))

    def forward(self, x):
        return self.head(self.pooling(self.encoder(x)))
'''

TRAIN = '''
import argparse

import a_logger_not_installed  # the script cannot be imported here

from {module} import Classifier


def build(args):
    return Classifier(args.dim, args.heads, forward_mul=args.forward_mul, head_type="pretrain",
                      pooling=args.pooling)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--forward-mul", type=int, default=3)
    parser.add_argument("--pooling", choices=["mean", "first"], default="first")
    build(parser.parse_args())
'''


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def flat(tmp_path):
    root = tmp_path / "flat"
    _write(root / "model.py", MODEL)
    _write(root / "train.py", TRAIN.format(module="model"))
    return root


@pytest.fixture
def packaged(tmp_path):
    root = tmp_path / "proj" / "src" / "vitpkg"
    _write(root / "__init__.py", "")
    _write(root / "model" / "__init__.py", "")
    _write(root / "model" / "vit.py", MODEL)
    _write(root / "training" / "__init__.py", "")
    _write(root / "training" / "train.py", TRAIN.format(module="vitpkg.model.vit"))
    return root


def _targets(report):
    return {t["target"].split("::")[-1]: t for t in report["targets"]}


@pytest.mark.parametrize("layout", ["flat", "packaged"])
def test_a_script_that_cannot_be_imported_still_gives_its_calls_values(capsys, request, layout):
    root = request.getfixturevalue(layout)
    model = root / "model.py" if layout == "flat" else root / "model" / "vit.py"
    code, report = cli_json(capsys, str(model))
    targets = _targets(report)
    assert set(targets) == {"Encoder", "Classifier"}
    for name, target in targets.items():
        assert target.get("error") is None, (name, target.get("error"))
    notes = " ".join(targets["Classifier"].get("notes", []))
    assert "head_type='pretrain' as train.py" in notes, notes
    assert "pooling='first' as train.py" in notes, notes
    assert code == 0


def test_a_script_importing_another_class_by_that_name_gives_nothing(capsys, tmp_path):
    root = tmp_path / "other"
    _write(root / "model.py", MODEL)
    _write(root / "train.py", TRAIN.format(module="elsewhere"))  # another Classifier
    _write(root / "elsewhere.py", "import a_logger_not_installed\n")
    code, report = cli_json(capsys, str(root / "model.py"))
    classifier = _targets(report)["Classifier"]
    assert "head_type" in (classifier.get("error") or ""), classifier


def test_an_option_declared_twice_with_two_defaults_gives_nothing(tmp_path):
    import ast

    from shapetrace.drive.cli_defaults import default_for

    root = tmp_path / "twice"
    _write(root / "a.py", "import argparse\np = argparse.ArgumentParser()\n"
                          "p.add_argument('--width', default=8)\np.add_argument('--deep', "
                          "action='store_true')\np.add_argument('--name', dest='label', default='x')\n")
    _write(root / "b.py", "import argparse\np = argparse.ArgumentParser()\n"
                          "p.add_argument('--width', default=16)\n")
    assert default_for(root / "a.py", "width") is None
    assert ast.literal_eval(default_for(root / "a.py", "deep")) is False
    assert ast.literal_eval(default_for(root / "a.py", "label")) == "x"
    assert default_for(root / "a.py", "name") is None
