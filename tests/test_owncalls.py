"""The code's own calls first: a class built and called the way its file's main block, its
project's tests or a named script builds and calls it, replayed and checked; run in a scratch
folder with the network refused, stopped at the first call; guesses only when that fails."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from shapetrace.base.errors import UsageError
from shapetrace.frontends.cli import main

DATA = Path(__file__).resolve().parent / "data" / "owncalls"


def _report(capsys, *args: str) -> tuple[int, dict]:
    code = main([*args, "--format", "json", "--no-trace"])
    out = capsys.readouterr().out
    report = json.loads(out)  # nothing the user's code prints gets into the JSON
    return code, {t["target"].split("::")[-1]: t for t in report["targets"]}


def _own_call(target: dict) -> str:
    """The note naming the call its own code makes, replayed at its own sizes or re-made at the
    probe sizes (the wrapped layer's width of 18 read as the width the code fixes)."""
    found = [n for n in target["notes"] if n.startswith(("checked with the call",
                                                         "built and called as its own code"))]
    assert found, target["notes"]
    return found[0]


def _loud(target: dict) -> list:
    return [d["rule"] for d in target["diagnostics"] if d["severity"] == "error"]


def _note(target: dict, start: str) -> str:
    found = [n for n in target["notes"] if n.startswith(start)]
    assert found, target["notes"]
    return found[0]


def test_stage_tuples_and_a_module_argument_come_from_the_main_block(capsys):
    """A tuple and a list per stage and a norm module: only the main block can build it."""
    code, targets = _report(capsys, str(DATA / "staged.py"))
    assert code == 0
    pyramid, stage = targets["Pyramid"], targets["StageAttention"]
    assert pyramid["error"] is None and _loud(pyramid) == []
    assert "staged.py:45, in its __main__ block" in _note(pyramid, "checked with the call its "
                                                                   "own code makes")
    # the stage re-made at the probe sizes: its width follows the input, its head count kept
    assert stage["error"] is None and _loud(stage) == []
    assert "staged.py:36" in _note(stage, "built and called as its own code does")
    assert stage["dims"]["H"] == 2 and stage["dims"]["C"] == 2 * stage["dims"]["d"]


def test_without_own_calls_the_guess_stands(capsys):
    code = main([str(DATA / "staged.py::Pyramid"), "--format", "json", "--no-own-calls"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert code == 2 and "cannot infer constructor argument" in target["error"]
    assert not any("own code" in n for n in target.get("notes", []))


def test_config_own_calls_false_turns_them_off(capsys, tmp_path):
    config = tmp_path / "shapetrace.toml"
    config.write_text(f'own_calls = false\n[[targets]]\ntarget = "{DATA / "staged.py"}::Pyramid"\n')
    main(["--config", str(config), "--format", "json"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert "cannot infer constructor argument" in target["error"]


def test_a_settings_dataclass_and_globals_set_under_main(capsys):
    code, targets = _report(capsys, str(DATA / "settings_main.py"))
    assert code == 0
    for name in ("SettingsAttention", "GlobalMixer"):
        assert targets[name]["error"] is None and _loud(targets[name]) == [], targets[name]
        assert "settings_main.py:46" in _note(targets[name], "checked with the call")


def test_a_bug_is_found_through_its_own_call_at_its_line(capsys):
    code, targets = _report(capsys, str(DATA / "buggy_main.py"))
    target = targets["PairAttention"]
    assert code == 1 and _loud(target) == ["softmax-axis"]
    assert target["diagnostics"][0]["line"] == 19
    assert "buggy_main.py:25" in _note(target, "checked with the call")


def test_a_latent_width_no_input_has_still_explains_a_wrong_scale(capsys):
    """The encoder's call passes a latent width (96) that is no input's size and a head count
    (8): both are kept as given beside the probe sizes its inputs are remade at. The scores are
    divided by the root of the whole latent width; the number names it, and the probe length
    is moved off the head count (7 tokens and a start token would be 8 = H) and off the head
    size (11 and a start token would be 12 = 96 / 8)."""
    code, targets = _report(capsys, str(DATA / "latent_width.py"))
    target = targets["PatchEncoder"]
    assert code == 1 and _loud(target) == ["attention-scale"]
    found = target["diagnostics"][0]
    assert found["line"] == 19 and "1/sqrt(96) instead of 1/sqrt(12)" in found["message"]
    assert "latent_width.py:55" in _note(target, "built and called")
    dims = target["dims"]
    assert all(dims[n] + step not in (8, 12) for n in ("B", "T") for step in (0, 1))
    right = targets["HeadScaledAttention"]
    assert right["error"] is None and _loud(right) == []


def test_a_test_function_of_the_project_builds_and_calls_it(capsys):
    """A constructor that takes a tensor; the project's tests/ folder builds and calls it,
    importing it as its package does."""
    code, targets = _report(capsys, str(DATA / "project" / "gates" / "layers.py"))
    target = targets["TableGate"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    assert "test_layers.py:8" in _note(target, "checked with the call")


def test_a_unittest_case_of_the_project_builds_and_calls_it(capsys):
    """A list per head, built in a TestCase's setUp and called in its test method."""
    code, targets = _report(capsys, str(DATA / "project" / "gates" / "mixers.py"))
    target = targets["ScaledHeads"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    assert "test_mixers.py:13" in _note(target, "checked with the call")


def test_a_pytest_fixture_of_the_project_builds_it_and_a_test_calls_it(capsys):
    """A constructor that takes the image's shape as a tuple; a fixture builds it from other
    fixtures (one in the conftest.py beside the tests, one a ``yield`` fixture) and a test that
    never names the class calls it."""
    code, targets = _report(capsys, str(DATA / "project" / "gates" / "shaped.py"))
    target = targets["ShapedPatches"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    assert "test_shaped.py:25" in _note(target, "checked with the call")


def test_a_script_is_run_only_when_named(capsys, tmp_path):
    model = str(DATA / "scripted" / "model.py")
    code, targets = _report(capsys, model)
    assert code == 2 and "cannot infer constructor argument 'inner'" in targets["Wrapped"]["error"]
    code, targets = _report(capsys, model, "--calls-from",
                            str(DATA / "scripted" / "run_model.py"))
    assert code == 0 and targets["Wrapped"]["error"] is None
    assert "run_model.py:7" in _own_call(targets["Wrapped"])
    config = tmp_path / "shapetrace.toml"  # the config's key, relative to its folder
    script = (DATA / "scripted" / "run_model.py").read_text()
    (tmp_path / "run_model.py").write_text(script.replace("from model import",
                                                          "from scripted_model import"))
    (tmp_path / "scripted_model.py").write_text(Path(model).read_text())
    config.write_text('[[targets]]\ntarget = "scripted_model.py::Wrapped"\n'
                      'calls_from = ["run_model.py"]\n')
    main(["--config", str(config), "--format", "json"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"] is None and "run_model.py:7" in _own_call(target)


def test_a_training_main_block_is_sandboxed_and_stopped_at_the_first_call(capsys, tmp_path,
                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    mark = tmp_path / "mark"
    monkeypatch.setenv("OWNCALLS_MARK", str(mark))
    code, targets = _report(capsys, str(DATA / "busy_main.py"))
    assert code == 0 and targets["Scorer"]["error"] is None
    assert "busy_main.py:37" in _note(targets["Scorer"], "checked with the call")
    assert not mark.exists()  # the training loop never ran to its end
    assert "refused" in (tmp_path / "mark.network").read_text()  # no connection was made
    for folder in (tmp_path, DATA):  # what it wrote where it ran landed in a scratch folder
        assert not (folder / "written_before.txt").exists()
    assert Path.cwd() == tmp_path


def test_a_main_block_that_fails_first_leaves_a_note_and_the_guess(capsys):
    code, targets = _report(capsys, str(DATA / "failing_main.py"))
    target = targets["Residual"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    note = _note(target, "its own code (the __main__ block of")
    assert "raised FileNotFoundError" in note and "failing_main.py:18" in note
    assert "checked with inputs shapetrace chose" in note


def test_the_sandbox_refuses_the_network_and_restores_the_folder():
    from shapetrace.drive.owncalls import _sandbox

    before = os.getcwd()
    with _sandbox():
        assert os.getcwd() != before
        with pytest.raises(OSError, match="refused"):
            socket.create_connection(("127.0.0.1", 9))
        with pytest.raises(OSError, match="refused"):
            socket.getaddrinfo("example.com", 80)
        print("swallowed")
    assert os.getcwd() == before
    assert socket.create_connection.__name__ == "create_connection"


@pytest.mark.parametrize(("text", "key"), [
    ('own_calls = "yes"\n', "own_calls"),
    ('calls_from = "run.py"\n', "calls_from"),
    ('[[targets]]\ntarget = "m.py"\nown_calls = 1\n', "targets[0].own_calls"),
])
def test_bad_config_keys_are_one_usage_error(tmp_path, text, key):
    from shapetrace.drive.config import load_config

    config = tmp_path / "shapetrace.toml"
    config.write_text(text)
    with pytest.raises(UsageError, match=key.replace("[", r"\[").replace("]", r"\]")):
        load_config(config)


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "--calls-from PATH" in out and "--no-own-calls" in out


def test_sequence_first_code_fed_as_its_main_block_feeds_it_is_clean(capsys):
    """(T, B, C) into nn.MultiheadAttention without batch_first: a batch-first guess reports a
    batch leak; the code's own call does not, and no batch axis is guessed at its sizes."""
    code, targets = _report(capsys, str(DATA / "sequence_first.py"))
    target = targets["SequenceFirstBlock"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    skipped = {s["check"]: s["reason"] for s in target["checks"]["skipped"]}
    assert "nothing names the batch axis" in skipped["batch-leak"]
    code, targets = _report(capsys, str(DATA / "sequence_first.py"), "--no-own-calls")
    # the guess is read time-first too: nn.MultiheadAttention's default layout is evidence
    assert _loud(targets["SequenceFirstBlock"]) == []


def test_annotations_name_the_batch_at_the_codes_own_sizes(capsys):
    """A tuple constructor: checked at the main block's sizes, where the forward's annotations
    name B, T and C, so the behaviour checks run: clean when correct, a batch leak at its line
    when the code centres over the batch."""
    code, targets = _report(capsys, str(DATA / "annotated.py"))
    target = targets["AnnotatedPairAttention"]
    assert code == 0 and _loud(target) == [] and target["dims"]["B"] == 3
    assert "batch-leak" in target["checks"]["ran"]
    code, targets = _report(capsys, str(DATA / "annotated_leak.py"))
    target = targets["BatchCentred"]
    assert code == 1 and _loud(target) == ["batch-leak"]
    assert target["diagnostics"][0]["line"] == 15


def test_a_main_block_of_a_package_module_imports_its_siblings_relatively(capsys):
    code, targets = _report(capsys, str(DATA / "owncall_pkg" / "gate.py"))
    target = targets["Gate"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    assert "gate.py:18, in its __main__ block" in _note(target, "checked with the call")


def test_a_class_the_main_block_never_calls_is_caught_in_the_tests(capsys):
    """The main block calls Scale only; the test calls Scale again, then ScaleStack: the second
    source still runs to ScaleStack's call."""
    code, targets = _report(capsys, str(DATA / "project" / "gates" / "stack.py"))
    assert code == 0 and [t["error"] for t in targets.values()] == [None, None]
    assert "stack.py:28, in its __main__ block" in _note(targets["Scale"], "checked with the call")
    assert "test_stack.py:10" in _note(targets["ScaleStack"], "checked with the call")


@pytest.mark.parametrize("named, line", [("README.md", "README.md:"), ("demo.ipynb", "demo.ipynb:")])
def test_a_readme_or_a_notebook_named_builds_and_calls_it(capsys, named, line):
    """``--calls-from`` a README runs its Python blocks (a doctest session as the code it
    types; shell and output blocks left out), a notebook its code cells (without ``!`` and
    ``%`` lines)."""
    model = str(DATA / "scripted" / "model.py")
    code, targets = _report(capsys, model, "--calls-from", str(DATA / "scripted" / named))
    assert code == 0 and targets["Wrapped"]["error"] is None
    assert line in _own_call(targets["Wrapped"])


def test_the_python_of_a_readme_and_a_notebook():
    from shapetrace.drive.snippets import markdown_code, notebook_code

    readme = (DATA / "scripted" / "README.md").read_text()
    code = markdown_code(readme)
    assert "block = Wrapped(inner, 18)" in code and "y = block(torch.randn(2, 5, 18))" in code
    assert "pip install" not in code and "torch.Size([2, 5, 18])" not in code
    notebook = notebook_code((DATA / "scripted" / "demo.ipynb").read_text())
    assert notebook.splitlines()[:3] == ["pass", "pass", "import torch"]  # shell and magic lines: pass
    assert "!pip" not in notebook and "%matplotlib" not in notebook
    assert notebook_code("not json") == "" and markdown_code("no code at all") == ""


def test_a_module_handed_to_a_re_made_class_is_left_as_its_code_left_it(capsys):
    """The wrapper, re-made at the probe sizes with the layer its code built, sets the layer's
    keys up at the probe sizes; the layer's own call, replayed after, still finds its own."""
    code, targets = _report(capsys, str(DATA / "handed_state.py"))
    assert targets["KeyWrapper"]["error"] is None and not _loud(targets["KeyWrapper"])
    layer = targets["KeyedLayer"]
    assert layer["error"] is None and not _loud(layer), (layer["error"], layer["diagnostics"])


def test_cells_that_need_what_is_not_here_are_passed_over(capsys):
    """A plot from a package not installed, a download (the network is refused) and what depends
    on them are passed over, as they would have run on the user's machine: the model's own call
    is still reached."""
    code, targets = _report(capsys, str(DATA / "course_cells.py"))
    target = targets["PatchMixer"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    assert "course_cells.py:30, in its __main__ block" in _note(target, "built and called as its own code")


def test_a_statement_failing_otherwise_still_stops_the_main_block():
    from shapetrace.drive.owncalls import NetworkRefused, _passer

    passed_over = _passer()
    assert not passed_over(NameError("name 'data' is not defined", name="data"), ())
    assert passed_over(OSError("download failed"), ()) is False
    try:
        try:
            raise NetworkRefused("refused")
        except OSError as exc:
            raise RuntimeError("could not fetch") from exc
    except RuntimeError as wrapped:
        assert passed_over(wrapped, ("weights",))
    # a name only a statement passed over would have bound
    assert passed_over(NameError("name 'weights' is not defined", name="weights"), ())


def test_a_test_importing_a_package_not_installed_still_builds_and_calls_it(capsys):
    """The package refuses to import without a library (its own ImportError raised from the
    missing one) and the test file imports a helper package not installed: both stand in, and
    the test's call is the one checked."""
    code, targets = _report(capsys, str(DATA / "accel_project" / "shifts" / "mixing.py"))
    target = targets["ShiftMix"]
    assert code == 0 and target["error"] is None and _loud(target) == []
    assert "test_mixing.py:9" in _note(target, "built and called as its own code does")


def test_a_call_with_a_padding_mask_is_re_made_at_the_probe_sizes(capsys):
    """The main block's batch equals the head count (4): at its own sizes the batch axis has no
    name and the scale no head size to be judged by. Re-made at the probe sizes (the padding mask
    keeping every token, as it keeps most), the slip in the scale is found."""
    code, targets = _report(capsys, str(DATA / "padded_main.py"))
    target = targets["PaddedAttention"]
    assert target["error"] is None
    assert "padded_main.py:29, in its __main__ block" in _note(
        target, "built and called as its own code does")
    assert "attention-scale" in _loud(target)
