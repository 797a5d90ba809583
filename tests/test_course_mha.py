"""A multi-head attention course graded in one plugin run, serially and under ``-n 2``
(tests/data/course_mha: a reference solution taking queries and keys/values apart, a mask whose
1 means "may attend", and submissions correct in several styles, wrong, and not written yet).

Every student gets the right verdict and a Gradescope output a student can read: findings at
their own lines, never a traceback through shapetrace's code."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from test_pytest_plugin import RUNS, outcomes, run

pytest_plugins = ["pytester"]

COURSE = Path(__file__).resolve().parent / "data" / "course_mha"


def item(student: str) -> str:
    return f"shapetrace::students/{student}.py::MultiHeadAttention"


# student -> (verdict, the rules of its error-level findings: the bug named)
VERDICTS = {
    "c_split": ("passed", set()),
    "c_einsum": ("passed", set()),
    "c_sdpa": ("passed", set()),
    "c_fused_kv": ("passed", set()),
    "c_placeholder": ("passed", set()),
    "u_empty": ("failed", {"not-implemented"}),
    "u_input": ("failed", {"not-implemented"}),
    "u_not_implemented": ("failed", {"not-implemented"}),
    "u_pass": ("failed", {"not-implemented"}),
    "u_zeros": ("failed", {"not-implemented"}),
    "w_dropout_eval": ("failed", {"nondeterministic-eval", "reference-mismatch"}),
    # a torch.empty placeholder (different memory each run) above a dropout left on
    "w_dropout_empty": ("failed", {"nondeterministic-eval", "reference-mismatch"}),
    "w_key_reshape": ("failed", {"op-failed"}),
    "w_mask_inverted": ("failed", {"reference-mismatch"}),
    "w_mask_square": ("failed", {"op-failed"}),
    "w_mask_unused": ("failed", {"discarded-result", "reference-mismatch"}),
    "w_no_scale": ("failed", {"reference-mismatch"}),
    "w_plus_inf": ("failed", {"non-finite", "reference-mismatch"}),
    "w_shared_heads": ("failed", {"reference-mismatch"}),
}


def copy_course(root: Path) -> None:
    for name in ("solution", "students", "graders"):
        shutil.copytree(COURSE / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(COURSE / "pyproject.toml", root / "pyproject.toml")


@pytest.mark.parametrize("args", RUNS)
def test_the_course_grades_right_in_one_run(pytester, args):
    copy_course(pytester.path)
    result = run(pytester, *args, "--shapetrace-gradescope=results.json",
                 "--shapetrace-report=report.json")
    tests = {t["name"]: t for t in json.loads((pytester.path / "results.json").read_text())["tests"]}
    report = {f"shapetrace::{t['target']}": t
              for t in json.loads((pytester.path / "report.json").read_text())["targets"]}
    verdicts = outcomes(result)
    wrong = {}
    for student, (verdict, rules) in VERDICTS.items():
        name = item(student)
        test = tests[name]
        errors = {d["rule"] for d in report[name].get("diagnostics", ())
                  if d["severity"] == "error"}
        if test["status"] != verdict or verdicts[name] != verdict.upper() or errors != rules:
            wrong[student] = (test["status"], verdicts[name], sorted(errors))
        output = test["output"]
        # readable: no traceback, nothing from shapetrace's own source
        assert "Traceback" not in output and "shapetrace/" not in output, (student, output)
        assert len(output) < 4000, (student, len(output))
        if verdict == "failed":
            assert test["score"] == 0.0
    assert not wrong, wrong
    (shared,) = report[item("w_shared_heads")]["diagnostics"]
    assert shared["line"] == 25 and "one and the same module" in shared["message"], shared
    for student in ("w_dropout_eval", "w_dropout_empty"):  # at the dropout, not the placeholder
        (found,) = [d for d in report[item(student)]["diagnostics"]
                    if d["rule"] == "nondeterministic-eval"]
        assert found["line"] == 28, (student, found)
    # the grader's own tests, traced: the NaN a +inf fill makes is found at the fill's line
    for way in ("marked", "fixture"):
        for student, verdict in (("c_split", "passed"), ("w_plus_inf", "failed")):
            name = f"graders/test_mha.py::test_output_shape_{way}[{student}]"
            assert tests[name]["status"] == verdict, (name, tests[name]["output"])
        output = " ".join(tests[f"graders/test_mha.py::test_output_shape_{way}[w_plus_inf]"]
                          ["output"].split())
        assert "non-finite [ST011] students/w_plus_inf.py:27" in output, output
        assert "came in with the inputs" not in output
    assert len(tests) == len(VERDICTS) + 4 and len(report) == len(VERDICTS) + 4


def test_unfinished_submissions_say_so_at_their_line(pytester):
    copy_course(pytester.path)
    run(pytester, "--shapetrace-gradescope=results.json")
    tests = {t["name"]: t for t in json.loads((pytester.path / "results.json").read_text())["tests"]}
    for student, line in (("u_empty", 20), ("u_pass", 19), ("u_not_implemented", 19),
                          ("u_zeros", 19), ("u_input", 19)):
        output = tests[item(student)]["output"]
        assert f"not-implemented [ST040] students/{student}.py:{line}" in " ".join(output.split()), \
            output


CRASHING_CONFTEST = '''
import shapetrace.drive.unfinished as unfinished


def _broken(attempt):
    raise RuntimeError("a check broke inside shapetrace")


unfinished.unfinished = _broken
'''


@pytest.mark.parametrize("args", RUNS)
def test_an_internal_error_is_the_targets_error_in_every_report(pytester, args):
    """shapetrace failing inside a check fails that target with one line, in the item, the
    report file and Gradescope's output; the student sees no traceback through shapetrace."""
    copy_course(pytester.path)
    shutil.rmtree(pytester.path / "graders")
    config = pytester.path / "pyproject.toml"
    text = config.read_text()
    config.write_text(text[:text.index("[[tool.shapetrace.targets]]")] + textwrap.dedent('''
        [[tool.shapetrace.targets]]
        target = "students/c_split.py::MultiHeadAttention"
        init = { embed_dim = "C", num_heads = "H", dropout = 0.0 }
        inputs = ["query=B,T,C", "key=B,S,C", "value=B,S,C", "attn_mask=T,S:mask-keep"]
    '''))
    pytester.makeconftest(CRASHING_CONFTEST)
    result = run(pytester, *args, "--shapetrace-gradescope=results.json",
                 "--shapetrace-report=report.json")
    name = item("c_split")
    assert outcomes(result) == {name: "FAILED"}
    (test,) = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert test["status"] == "failed"
    assert "a check broke inside shapetrace" in " ".join(test["output"].split())
    assert "Traceback" not in test["output"] and len(test["output"]) < 1000
    (entry,) = json.loads((pytester.path / "report.json").read_text())["targets"]
    assert "a check broke inside shapetrace" in entry["error"]


def test_the_course_grades_right_with_nothing_declared_but_the_reference(tmp_path, monkeypatch,
                                                                         capsys):
    """No inputs and no sizes in the config: keys of their own length and the optional mask are
    guessed (its meaning read from the reference's code, masked_fill(mask == 0, ...)), and the
    verdicts are the same."""
    from shapetrace.frontends.cli import main

    copy_course(tmp_path)
    config = tmp_path / "pyproject.toml"
    config.write_text("\n".join(line for line in config.read_text().splitlines()
                                if not line.startswith(("inputs = ", "dims = "))))
    monkeypatch.chdir(tmp_path)
    main(["--config", "pyproject.toml", "--format", "json", "--no-trace"])
    report = json.loads(capsys.readouterr().out)
    found = {}
    for target in report["targets"]:
        student = target["target"].split("/")[1].split(".")[0]
        errors = {d["rule"] for d in target.get("diagnostics", ()) if d["severity"] == "error"}
        found[student] = ("passed" if target["ok"] else "failed", errors)
    assert found == VERDICTS


def test_a_course_whose_mask_says_masked_out_grades_the_other_way(pytester):
    """The same submissions under the other convention (``attn_mask=T,S:mask-drop``: True means
    masked out, and the reference fills where the mask is True): the student who filled where
    the mask is 1 is now right, and the one who filled where it is 0 is wrong. The verdict
    follows the course's declared meaning, never one shapetrace chose."""
    copy_course(pytester.path)
    shutil.rmtree(pytester.path / "graders")
    solution = pytester.path / "solution" / "mha.py"
    solution.write_text(solution.read_text().replace("masked_fill(attn_mask == 0,",
                                                     "masked_fill(attn_mask,"))
    config = pytester.path / "pyproject.toml"
    text = config.read_text()
    kept = ("c_split", "w_mask_inverted", "c_sdpa")
    targets = [block for block in text.split("[[tool.shapetrace.targets]]")[1:]
               if any(f"students/{s}.py" in block for s in kept)]
    config.write_text(text[:text.index("[[tool.shapetrace.targets]]")] + "".join(
        "[[tool.shapetrace.targets]]" + block.replace("mask-keep", "mask-drop") for block in targets))
    run(pytester, "--shapetrace-gradescope=results.json", "--shapetrace-report=report.json")
    tests = {t["name"]: t for t in json.loads((pytester.path / "results.json").read_text())["tests"]}
    report = {f"shapetrace::{t['target']}": t
              for t in json.loads((pytester.path / "report.json").read_text())["targets"]}
    assert tests[item("w_mask_inverted")]["status"] == "passed", tests[item("w_mask_inverted")]
    for student in ("c_split", "c_sdpa"):  # they fill where the course's mask says "attend"
        assert tests[item(student)]["status"] == "failed", student
        errors = {d["rule"] for d in report[item(student)]["diagnostics"] if d["severity"] == "error"}
        assert "reference-mismatch" in errors, (student, errors)
        assert "Traceback" not in tests[item(student)]["output"]
