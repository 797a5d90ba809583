"""Inputs read from what a module's own code does with them: a video (B, C, T, H, W) that a
3-D convolution takes, unpacks in five sizes or that a per-channel scale of five axes would
broadcast a guess up to; a starred unpacking beside the module's own sizes; an axis only an
annotation names; an input named nothing known whose sizes forward unpacks. And a package that
asks for its own installed version, and a module argument too large to build, imported and
refused the way a user expects."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shapetrace.drive.attempt import _beside_shape
from tests.resolved import cli_json

DATA = Path(__file__).parent / "data" / "volumes"


@pytest.fixture(scope="module")
def blocks(tmp_path_factory) -> dict:
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "shapetrace", str(DATA / "blocks.py"), "--format",
                          "json", "--no-trace"], capture_output=True, text=True, timeout=900)
    return {t["target"].split("::")[-1]: t for t in json.loads(out.stdout)["targets"]}


@pytest.mark.parametrize("cls", ["FrameBlock", "VolumeAttention", "FramePatches"])
def test_a_module_on_videos_is_fed_a_video(blocks, cls):
    entry = blocks[cls]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(" read as a video (B, " in n and ", T, " in n for n in entry["notes"]), entry["notes"]


def test_a_guess_broadcast_up_by_a_per_channel_scale_is_not_judged(blocks):
    """VolumeAttention's norm scale (1, C, 1, 1, 1) would make a (B, T, C) guess five axes
    (1, C, B, T, C) and its reshape fail: the guess's doing, no op-failed or broadcast finding."""
    entry = blocks["VolumeAttention"]
    assert not [d for d in entry["diagnostics"] if d["rule"] in ("op-failed", "silent-broadcast")]
    assert any("the 143 channels its first 3-D layer takes" in n for n in entry["notes"]), entry["notes"]


def test_a_starred_unpacking_counts_the_input_s_sizes_only(blocks):
    entry = blocks["StarredPatches"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("x read as an image (B, 3, ") for n in entry["notes"]), entry["notes"]


@pytest.mark.parametrize("line, beside", [
    ("b, _, h, w, p = *x.shape, self.patch_size", 1),
    ("b, c, h, w = x.shape", 0),
    ("a, *rest = x.shape", 0),
    ("n, m, b, c = 3, 4, *x.shape", 2),
    ("not python (", 0),
])
def test_names_beside_a_starred_shape_are_not_the_input_s(line, beside):
    assert _beside_shape(line) == beside


def test_an_axis_only_the_annotation_names_gets_a_size_of_its_own(blocks):
    entry = blocks["CharacterEmbed"]
    assert entry["error"] is None and entry["ok"], entry
    size = entry["dims"]["nt"]
    assert size not in [v for k, v in entry["dims"].items() if k != "nt"]
    assert any(n.startswith(f"nt={size}: an axis forward's annotation names") for n in entry["notes"])


def test_an_axis_the_user_sizes_is_kept(capsys):
    code, report = cli_json(capsys, f"{DATA / 'blocks.py'}::CharacterEmbed", "--dims", "nt=31")
    (entry,) = report["targets"]
    assert code == 0 and entry["dims"]["nt"] == 31, entry


def test_a_package_that_asks_for_its_own_installed_version_is_imported(capsys):
    code, report = cli_json(capsys, str(DATA / "unlisted_pkg" / "unlisted" / "mixing.py"))
    (entry,) = report["targets"]
    assert code == 0 and entry["error"] is None and entry["ok"], entry
    assert any("asks for its own installed version ('shapetrace-unlisted-example')" in n
               for n in entry["notes"]), entry["notes"]


def test_the_version_of_an_installed_package_is_not_touched():
    """Only a distribution that is not installed, asked for by the user's own code, stands in."""
    import importlib.metadata

    from shapetrace.drive.absent import standing_in, unversioned

    with standing_in(["version of shapetrace-unlisted-example"]):
        assert importlib.metadata.version("torch") == importlib.metadata.version("torch")
        assert importlib.metadata.version("shapetrace-unlisted-example") == "99.0.0"
        with pytest.raises(importlib.metadata.PackageNotFoundError):
            importlib.metadata.version("shapetrace-another-unlisted")
    with pytest.raises(importlib.metadata.PackageNotFoundError) as raised:
        importlib.metadata.version("shapetrace-unlisted-example")  # taken out again after
    assert unversioned(raised.value) == "version of shapetrace-unlisted-example"
    assert unversioned(importlib.metadata.PackageNotFoundError("raised by nobody")) is None
    assert unversioned(ModuleNotFoundError("No module named 'absent'", name="absent")) is None


def test_a_module_argument_too_large_to_build_is_refused_before_it_is_built(capsys):
    code, report = cli_json(capsys, f"{DATA / 'whole_model.py'}::Head")
    (entry,) = report["targets"]
    assert code == 2 and "cannot build constructor argument 'backbone'" in entry["error"], entry
    assert "246M parameters" in entry["error"] and "--init backbone=" in entry["error"]


def test_the_test_data_is_the_project_s_own():
    for path in DATA.rglob("*.py"):
        ast.parse(path.read_text())


def test_a_guess_that_did_not_fit_says_where_a_reading_of_it_got_to(blocks):
    """Read as an image, SharedPositions gets past the unpacking that refused the vectors and
    fails at its own in-place write: the target error says both."""
    error = blocks["SharedPositions"]["error"]
    line = next(i for i, text in enumerate((DATA / "blocks.py").read_text().splitlines(), 1)
                if "tokens += self.positions" in text)
    assert "which unpacks 4 sizes from its shape" in error, error
    assert "with x read as an image (B, 3, 8, 8)" in error
    assert f"it got further and failed at {DATA / 'blocks.py'}:{line} (RuntimeError:" in error \
        or f"blocks.py:{line} (RuntimeError:" in error, error


def test_a_script_whose_top_level_fails_has_its_classes_checked(tmp_path, monkeypatch, capsys):
    """The data the script loads is missing: its classes are still checked, the note says which
    statements were passed over, and the log file and training loop of the script never ran."""
    monkeypatch.chdir(tmp_path)
    code, report = cli_json(capsys, str(DATA / "train_script.py"))
    entries = {t["target"].split("::")[-1]: t for t in report["targets"]}
    assert set(entries) == {"Head", "Classifier"}, entries
    line = next(i for i, text in enumerate((DATA / "train_script.py").read_text().splitlines(), 1)
                if text.startswith("shards = "))
    for entry in entries.values():
        assert entry["error"] is None and entry["ok"], entry
        assert any(n.startswith(f"its file's top level failed at line {line} (FileNotFoundError")
                   and f"line {line + 1}, passed over too" in n for n in entry["notes"]), entry["notes"]
    assert code == 0 and list(tmp_path.iterdir()) == []


def test_a_file_that_imports_is_run_as_it_is():
    from shapetrace.drive.toplevel import failed_at_top

    try:
        exec(compile("def f():\n    raise ValueError('inside')\nf()\n", "/tmp/top.py", "exec"), {})
    except ValueError as exc:
        assert failed_at_top(exc, "/tmp/top.py") == 3  # the call at the top level, not the body
    try:
        exec(compile("x = 1\n", "/tmp/top.py", "exec"), {})
        raise KeyError("elsewhere")
    except KeyError as exc:
        assert failed_at_top(exc, "/tmp/top.py") is None


def test_a_width_checked_even_through_a_helper_of_the_file_s_own(blocks):
    """``assert divisible_by(dim, 2)``: the helper takes ``num % den``, read as ``dim % 2``."""
    entry = blocks["FourierFeatures"]
    assert entry["error"] is None and entry["ok"], entry
    assert any("the constructor needs an even width" in n for n in entry["notes"]), entry["notes"]


def check(a, b):
    return a > b


def modulo(num, den):
    return num % den == 0


def test_a_helper_is_read_only_when_it_takes_a_modulo():
    from shapetrace.drive.widths import _inlined

    try:
        assert check(1, 2)
    except AssertionError as exc:
        assert _inlined("assert check(dim, 2)", exc) == "assert check(dim, 2)"
        assert _inlined("assert modulo(self.dim, 4)", exc) == "assert self.dim % 4"


def test_sizes_stored_by_the_base_class_are_read_where_the_subclass_uses_them():
    import sys

    sys.path.insert(0, str(DATA))
    try:
        import stored
    finally:
        sys.path.remove(str(DATA))
    from shapetrace.drive.usage import meaning_by_use

    assert meaning_by_use(stored.Mixer, "fw") == "C"
    assert meaning_by_use(stored.Mixer, "repeats") == "layers"


def test_a_module_the_meta_device_cannot_count_is_stopped_as_it_is_built(capsys):
    """Its parameters are tallied as its constructor registers them: past the limit it stops,
    a target error, before the rest of its layers are allocated."""
    code, report = cli_json(capsys, f"{DATA / 'whole_model.py'}::ReadsAValue")
    (entry,) = report["targets"]
    assert code == 2 and "ReadsAValue would have more than 100M parameters" in entry["error"], entry


def test_the_parameter_budget_is_given_back():
    from torch import nn

    from shapetrace.base.errors import TargetError
    from shapetrace.drive.devices import parameter_budget

    before = nn.Module.register_parameter
    with pytest.raises(TargetError, match="Wide would have more than 0M parameters"):
        with parameter_budget("Wide", limit=10):
            nn.Linear(4, 4)
    assert nn.Module.register_parameter is before
    with parameter_budget("Small", limit=100):
        nn.Linear(4, 4)


def test_a_file_its_package_already_imported_is_not_run_twice(capsys):
    """``regpkg/models/__init__.py`` imports ``tiny.py``, which registers itself; the target's
    own import of ``regpkg`` ran it: imported again under another name it would register twice."""
    code, report = cli_json(capsys, str(DATA / "registry_pkg" / "regpkg" / "models" / "tiny.py"))
    (entry,) = report["targets"]
    assert code == 0 and entry["error"] is None and entry["ok"], entry
    assert entry["target"].endswith("tiny.py::Tiny")


def test_a_failure_at_an_axis_size_shapetrace_chose_is_a_target_error(blocks):
    entry = blocks["TextToAudio"]
    assert entry["diagnostics"] == [], entry["diagnostics"]
    assert "a size shapetrace chose for an axis only forward's annotation names" in entry["error"]
    assert "--dims dt=SIZE" in entry["error"], entry["error"]


def test_a_subclass_of_a_torch_layer_is_built_with_the_layer_s_arguments(blocks):
    entry = blocks["StandardizedConv3d"]
    assert entry["error"] is None and entry["ok"], entry
    assert any(" read as a video (B, 143, T, " in n for n in entry["notes"]), entry["notes"]


def test_the_parameter_budget_counts_each_parameter_once():
    """A weight assigned again under its name replaces the last; a head tied to the embedding
    counts once: at most 40 + 8 + 40 at a time (the head's own weight before the tie), where
    counting every registration would pass 88 (40 + 8 + 4 + 40 + 40)."""
    import torch
    from torch import nn

    from shapetrace.drive.devices import parameter_budget

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)  # 40
            self.norm = nn.LayerNorm(4)  # 8
            self.norm.weight = nn.Parameter(torch.ones(4))  # replaces 4 of them
            self.head = nn.Linear(4, 10, bias=False)  # 40, then tied
            self.head.weight = self.emb.weight

    with parameter_budget("Tied", limit=88):
        Tied()
