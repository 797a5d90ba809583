"""Script mode and folding: the lecture notes' scripts run under ``python -m shapetrace``.

A file without ``nn.Module`` subclasses (or any file with ``--script``) runs as ``__main__`` under
the tracer at its own sizes. Loops print once with a count, optimizer steps and a layer's
initialisation as one line each (for a script and for a ``trace()`` printed by hand).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import shapetrace
from shapetrace.frontends.cli import main
from shapetrace.render import make_console, trace_renderable
from test_cli import assert_one_line_error

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = "tests/data/scripts"


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rendered(trace, width: int = 100, **options) -> str:
    console = make_console(color=False, width=width, file=io.StringIO())
    console.print(trace_renderable(trace, width=width, **options))
    return console.file.getvalue()


# --- the command line ------------------------------------------------------------------------

CLEAN = [
    pytest.param("bag_of_words.py", ["┌ x 4 iterations, lines 11-12", "┌ x 8 iterations",
                                     "torch.mean", "torch.tril"], id="bag-of-words"),
    pytest.param("qkv_walkthrough.py", ["F.softmax", "nn.init", "q @ k.transpose(-2, -1)"],
                 id="qkv-walkthrough"),
    pytest.param("training_loop.py", ["AdamW.step", "x 7 steps, 2 to 8", "opt.zero_grad"],
                 id="training-loop"),
    pytest.param("uses_sibling.py", ["Tensor.mean"], id="sibling-import-argv-main"),
]


@pytest.mark.parametrize("name, fragments", CLEAN)
def test_correct_scripts_run_clean(capsys, name, fragments):
    code, out, err = run(capsys, f"{SCRIPTS}/{name}")
    assert code == 0, out + err
    assert "no nn.Module subclasses" not in out + err
    assert "✓ no problems found" in out
    for fragment in fragments:
        assert fragment in out


def test_bag_of_words_folds_two_loops_into_a_few_lines(capsys):
    code, out, _ = run(capsys, f"{SCRIPTS}/bag_of_words.py")
    assert out.count("torch.mean(xprev, 0)") == 1  # 32 iterations, shown once
    assert len(out.splitlines()) < 35


def test_training_loop_shows_optimizer_steps_as_one_line(capsys):
    code, out, _ = run(capsys, f"{SCRIPTS}/training_loop.py")
    assert "Tensor.mul_" not in out and "Tensor.addcdiv_" not in out and "kaiming" not in out
    assert out.count("AdamW.step") == 2  # the first step (it makes the state), then the loop's
    assert len(out.splitlines()) < 40


def test_broadcasting_pitfall_of_the_notes_is_flagged(capsys):
    code, out, _ = run(capsys, f"{SCRIPTS}/broadcasting.py")
    assert code == 0  # a warning
    assert "warning silent-broadcast [ST003]  tests/data/scripts/broadcasting.py:8" in out
    assert out.count("silent-broadcast") == 1  # the matmul and the .T of a 2-D tensor are fine


def test_broadcasting_pitfall_names_its_axis_from_dims(capsys):
    code, out, _ = run(capsys, f"{SCRIPTS}/broadcasting.py", "--dims", "B=6")
    assert "(B, 1)" in out and "(B, B)" in out


def test_dims_name_the_scripts_sizes(capsys):
    code, out, _ = run(capsys, f"{SCRIPTS}/bag_of_words.py", "--dims", "B=4,T=8,C=2")
    assert code == 0
    assert "torch.randn          → (B, T, C)" in out
    assert "B=4 T=8 C=2" in out  # the sizes the user gave, not the probe defaults


def test_a_script_that_raises_is_a_finding_at_its_line(capsys):
    code, out, err = run(capsys, f"{SCRIPTS}/raises.py")
    assert code == 1
    assert "error op-failed [ST013]  tests/data/scripts/raises.py:6" in out
    assert "raised RuntimeError" in out


def test_json_report_of_a_script(capsys):
    code, out, _ = run(capsys, f"{SCRIPTS}/raises.py", "--format", "json")
    data = json.loads(out)
    (target,) = data["targets"]
    assert target["target"] == f"{SCRIPTS}/raises.py" and target["ok"] is False
    assert [(d["rule"], d["line"]) for d in target["diagnostics"]] == [("op-failed", 6)]
    assert [r["op"] for r in target["trace"]][-1] == "Tensor.matmul"


@pytest.mark.parametrize("name, fragments", [
    pytest.param("imports_missing.py", ["could not import", "no_such_module_for_shapetrace"],
                 id="missing-import"),
    pytest.param("not_python.py", ["syntax error", "not_python.py"], id="syntax-error"),
    pytest.param("no_such_script.py", ["no such file"], id="missing-file"),
])
def test_a_script_that_cannot_run_exits_2_with_one_line(capsys, name, fragments):
    code, _, err = run(capsys, f"{SCRIPTS}/{name}", "--script")
    assert code == 2
    assert_one_line_error(err, *fragments)


def test_script_flag_runs_a_file_with_modules_as_a_script(capsys):
    code, out, _ = run(capsys, "tests/data/cli/models.py", "--script")
    assert code == 2  # it only defines them: run as a script, nothing is checked, and it says so
    assert "nothing to check: the script ran no torch tensor op" in out
    assert "tests/data/cli/models.py ─" in out  # one result: the file, not its classes
    assert "models.py::" not in out


def test_script_flag_refuses_module_options(capsys):
    code, _, err = run(capsys, f"{SCRIPTS}/raises.py", "--script", "--init", "n_embd=C")
    assert code == 2
    assert_one_line_error(err, "--script")


def test_a_file_without_modules_is_a_script_that_says_nothing_was_checked(capsys):
    """Run as a script (no "no nn.Module subclasses" error), it only defines a function: nothing
    was checked, exit 2, never "no problems found"."""
    code, out, err = run(capsys, "tests/data/targets/no_modules.py")
    assert code == 2, err
    assert "nothing to check: the script ran no torch tensor op" in out
    assert "no problems found" not in out


def test_help_names_the_script_flag(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "--script" in capsys.readouterr().out


# --- folding, on a trace printed by hand ------------------------------------------------------

def _two_loops():
    x = torch.randn(4, 6, 3)
    out = torch.zeros(4, 6, 3)
    for b in range(4):
        for t in range(6):
            out[b, t] = x[b, :t + 1].mean(0)
    return out


def test_nested_loops_fold_with_their_counts():
    with shapetrace.trace() as t:
        _two_loops()
    text = rendered(t)
    assert "┌ x 4 iterations" in text and "│  ┌ x 6 iterations" in text
    assert "shapes vary" in text  # x[b, :t + 1] grows with t
    assert text.count(".mean(0)") == 1


def test_folding_can_be_turned_off():
    with shapetrace.trace() as t:
        _two_loops()
    assert rendered(t, fold=False).count(".mean(0)") == 24


def test_an_iteration_with_a_finding_is_shown_on_its_own():
    with shapetrace.trace() as t:
        for i in range(6):
            a = torch.randn(5, 1)
            b = torch.randn(5) if i == 3 else torch.randn(5, 1)
            (a - b).sum()
    text = rendered(t)
    assert "silent-broadcast" in {d.rule for d in t.diagnostics}
    assert "!" in text  # the flagged op is on a line of its own
    assert "x 3 iterations" in text and "x 2 iterations" in text


def test_optimizer_steps_and_init_are_one_line_each():
    torch.manual_seed(0)
    with shapetrace.trace() as t:
        model = nn.Sequential(nn.Linear(6, 9), nn.LayerNorm(9), nn.Linear(9, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = torch.randn(10, 6), torch.randint(0, 3, (10,))
        for _ in range(5):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    text = rendered(t)
    assert t.step_count == 5 and [run.count for run in t.steps] == [1, 4]
    assert len(t.spans) == 2  # one per kept step: the repeats are counted, not kept
    assert "SGD.step" in text and "Tensor.add_" not in text
    assert text.count("nn.init") == 2  # the two Linear layers
    assert "nn.LayerNorm        4 ops on (9,)" in text  # LayerNorm fills its own: one line too
    assert "kaiming" not in text and "torch.empty" not in text
    assert len(text.splitlines()) < 30 < len(t.records)


def test_a_step_that_raises_keeps_its_ops():
    class Broken(torch.optim.SGD):
        def step(self, closure=None):
            super().step(closure)
            raise RuntimeError("boom")

    p = nn.Parameter(torch.ones(3))
    opt = Broken([p], lr=0.1)
    p.grad = torch.ones(3)
    with pytest.raises(RuntimeError), shapetrace.trace() as t:
        opt.step()
    assert t.spans == []


def test_a_file_with_no_module_and_no_tensor_op_is_not_called_clean(tmp_path, capsys):
    """Nothing was checked: exit 2 saying so, never "no problems found"."""
    plain = tmp_path / "plain.py"
    plain.write_text("import math\nhalf = math.pi / 2\n")
    code = main([str(plain), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    assert "nothing to check" in report["targets"][0]["error"]
