"""``python -m shapetrace``: exit codes, one-line errors, target forms, config files, formats,
and ``--fake``.

Most cases run in-process through ``shapetrace.frontends.cli.main``; a few run the real entry point in a
subprocess (``--help`` without torch, plain output when piped, colour on a terminal, memory
under ``--fake``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from shapetrace.frontends.cli import main
from shapetrace.base.errors import ShapetraceError
from shapetrace.rules.registry import RULES

ROOT = Path(__file__).resolve().parent.parent
TARGETS = "tests/data/targets"
CLI = "tests/data/cli"
MODELS = f"{CLI}/models.py"
CORRECT = f"{MODELS}::Attention"
JUMBLED = f"{MODELS}::JumbledAttention"
VALUE_RULES = {name for name, rule in RULES.items() if rule.needs_values}


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "100")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code, out, err = run(capsys, *argv, "--format", "json")
    return code, json.loads(out)


def assert_one_line_error(err: str, *fragments: str) -> None:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("shapetrace: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], err


def shape_findings(target_json: dict) -> set[tuple[str, int | None]]:
    return {(d["rule"], d["line"]) for d in target_json["diagnostics"]
            if d["rule"] not in VALUE_RULES}


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


# Bad input: exit 2, one line on stderr, no traceback ------------------------------------------

BAD_INPUTS = [
    pytest.param([f"{CLI}/nope.py"], ["no such file", "nope.py"], id="missing-file"),
    pytest.param([f"{TARGETS}/broken_syntax.py"], ["syntax error", "broken_syntax.py:5"],
                 id="syntax-error"),
    pytest.param([f"{TARGETS}/import_error.py"],
                 ["cannot import", "definitely_not_an_installed_module", "import_error.py:3"],
                 id="import-error"),
    pytest.param([f"{TARGETS}/imports_raising.py"], ["weights.pt is missing", "raising_helper.py:5"],
                 id="import-raises"),
    pytest.param([f"{MODELS}::Atention"], ["no class 'Atention'", "Attention"], id="unknown-class"),
    pytest.param(["nosuchpackage.attention::Head"], ["cannot import module", "nosuchpackage"],
                 id="unknown-package"),
    pytest.param(["attention"], ["no such file", "file.py::Name"], id="target-not-a-file"),
    pytest.param([f"{CLI}/needs_init.py::Fragile"],
                 ["Fragile(n_embd=143, n_head=11) raised ValueError", "needs_init.py:22"],
                 id="constructor-raises"),
    pytest.param([f"{CLI}/needs_init.py::Scaled"], ["'temperature'", "--init temperature="],
                 id="constructor-argument-not-inferred"),
    pytest.param([f"{CLI}/quits.py"], ["called exit(3)", "__main__"], id="exit-in-forward"),
    pytest.param([CORRECT, "--init", "n_embd"], ["--init expects KEY=VALUE", "n_embd"],
                 id="init-malformed"),
    pytest.param([CORRECT, "--init", "n_embed=C"], ["no argument 'n_embed'", "n_embd"],
                 id="init-unknown-argument"),
    pytest.param([CORRECT, "--init", "n_embd=C,n_embd=H"], ["given twice"], id="init-twice"),
    pytest.param([CORRECT, "--init", "n_embd=C", "--init", "n_embd=H"], ["'n_embd' is given twice"],
                 id="init-twice-in-two-flags"),
    pytest.param([CORRECT, "--dims", "B"], ["--dims", "NAME=SIZE"], id="dims-malformed"),
    pytest.param([CORRECT, "--dims", "B=five"], ["--dims", "integer"], id="dims-not-a-number"),
    pytest.param([CORRECT, "--dims", "B=0"], ["--dims", "positive"], id="dims-zero"),
    pytest.param([CORRECT, "--dims", "T=-7"], ["--dims", "positive"], id="dims-negative"),
    pytest.param([CORRECT, "--input", "x"], ["NAME=DIMS"], id="input-malformed"),
    pytest.param([CORRECT, "--input", "x=B,Q,C"], ["unknown dimension 'Q'", "--dims Q="],
                 id="input-unknown-dim"),
    pytest.param([CORRECT, "--input", "x=B,0,C"], ["size 0 must be positive"], id="input-zero-size"),
    pytest.param([CORRECT, "--input", "x=B,T,C:float8"], ["unknown dtype 'float8'", "bfloat16"],
                 id="input-unknown-dtype"),
    pytest.param(["--config", f"{CLI}/configs/missing.toml"], ["config file not found"],
                 id="config-missing"),
    pytest.param([CORRECT, "--format", "pdf"], ["unknown format 'pdf'", "html"], id="unknown-format"),
    pytest.param([CORRECT, "--output", "no/such/folder/report.json"],
                 ["cannot write", "no such directory"], id="output-folder-missing"),
    pytest.param([CORRECT, "--output", CLI], ["cannot write", "is a directory"],
                 id="output-is-a-directory"),
    pytest.param(["--dims", "d=8"], ["need a TARGET"], id="dims-without-target"),
    pytest.param(["--fake"], ["--fake needs a TARGET"], id="fake-without-target"),
]


@pytest.mark.parametrize(("argv", "fragments"), BAD_INPUTS)
def test_bad_input_exits_2_with_one_line(capsys, argv, fragments):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert_one_line_error(err, *fragments)


CONFIG_MISTAKES = [
    pytest.param("shapetrace.toml", "[[targets]\ntarget = 'x.py'\n", ["invalid TOML", "line 1"],
                 id="config-invalid-toml"),
    pytest.param("pyproject.toml", "[project]\nname = 'course'\n", ["no [tool.shapetrace] table"],
                 id="pyproject-without-table"),
    pytest.param("shapetrace.toml", "[[targets]]\ntarget = 3\n", ["target"], id="config-bad-value"),
    pytest.param("shapetrace.toml", "dims = { B = 5 }\n", ["no targets"], id="config-no-targets"),
]


@pytest.mark.parametrize(("name", "text", "fragments"), CONFIG_MISTAKES)
def test_config_mistake_exits_2_with_one_line(capsys, tmp_path, name, text, fragments):
    config = write(tmp_path / name, text)
    code, out, err = run(capsys, "--config", config)
    assert code == 2
    assert_one_line_error(err, *fragments)


@pytest.mark.parametrize("argv", [
    pytest.param(["--width", "wide"], id="width-not-a-number"),
    pytest.param(["--width", "3"], id="width-too-narrow"),
    pytest.param(["--causal", "--no-causal"], id="causal-and-no-causal"),
    pytest.param(["--no-such-flag"], id="unknown-flag"),
])
def test_argparse_errors_exit_2_in_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exc_info:
        main([CORRECT, *argv])
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("shapetrace: error: ") and err.count("\n") == 1
    assert err.rstrip().endswith("(see shapetrace --help)")
    assert "Traceback" not in err


def test_debug_shows_the_exception(capsys):
    with pytest.raises(ShapetraceError, match="no such file"):
        main([f"{CLI}/nope.py", "--debug"])


def test_internal_error_is_one_line_unless_debug(capsys, monkeypatch):
    from shapetrace.drive import jobs as _jobs

    def broken(self, target, **kwargs):
        raise RuntimeError("something inside shapetrace broke\nsecond line")

    monkeypatch.setattr(_jobs.Job, "check", broken)
    code, out, err = run(capsys, CORRECT, "--fake")
    assert code == 2
    assert_one_line_error(err, "internal error: RuntimeError: something inside shapetrace broke",
                          "--debug")
    with pytest.raises(RuntimeError):
        main([CORRECT, "--fake", "--debug"])


def test_failed_target_reports_the_others_and_exits_2(capsys):
    code, report = run_json(capsys, JUMBLED, f"{CLI}/needs_init.py::Scaled", "--fake")
    assert code == 2
    jumbled, scaled = report["targets"]
    assert jumbled["error"] is None and not jumbled["ok"]
    assert "temperature" in scaled["error"]
    assert capsys.readouterr().err == ""  # already read by run_json: nothing more


# Exit codes 0 and 1 ---------------------------------------------------------------------------


def test_correct_module_exits_0(capsys):
    code, out, err = run(capsys, CORRECT)
    assert code == 0, out + err
    assert "no problems found" in out


def test_buggy_module_exits_1(capsys):
    code, out, err = run(capsys, JUMBLED, "--no-trace")
    assert code == 1
    assert "reshape-jumble" in out and "models.py:46" in out
    assert err == ""


def test_warnings_alone_exit_0(capsys):
    code, report = run_json(capsys, f"{CLI}/warning_only.py")
    assert [d["severity"] for d in report["targets"][0]["diagnostics"]] == ["warning"]
    assert code == 0


# Target forms ---------------------------------------------------------------------------------


def test_two_files(capsys):
    code, report = run_json(capsys, f"{TARGETS}/uses_sibling.py", MODELS, "--fake")
    assert [t["target"] for t in report["targets"]] == [
        f"{TARGETS}/uses_sibling.py::Projection", CORRECT, JUMBLED]
    assert code == 1


def test_file_and_one_class(capsys):
    code, report = run_json(capsys, f"{TARGETS}/students.py::Head", CORRECT, "--fake")
    assert [t["target"] for t in report["targets"]] == [f"{TARGETS}/students.py::Head", CORRECT]
    assert code == 0


def test_package_module_and_class(capsys, monkeypatch):
    monkeypatch.chdir(ROOT / TARGETS)
    code, report = run_json(capsys, "student_pkg.attention::SelfAttention", "--fake")
    (target,) = report["targets"]
    assert target["target"] == "student_pkg.attention::SelfAttention"
    assert target["error"] is None
    assert target["trace"][0]["inputs"][0] == "(B, T, C)"
    assert code == 0


# Config files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [
    pytest.param(f"{CLI}/configs/shapetrace.toml", id="shapetrace-toml"),
    pytest.param(f"{CLI}/configs/pyproject/pyproject.toml", id="pyproject-table"),
])
def test_config(capsys, config):
    code, report = run_json(capsys, "--config", config, "--fake")
    correct, jumbled = report["targets"]
    assert correct["target"].endswith("models.py::Attention")
    assert correct["dims"] == {"B": 3, "T": 7, "H": 11, "d": 8, "C": 88}  # global B, per-target d
    assert correct["ok"]
    assert jumbled["dims"]["B"] == 3 and jumbled["dims"]["d"] == 13
    assert {d["rule"] for d in jumbled["diagnostics"]} == {"reshape-jumble"}
    assert code == 1


def test_command_line_dims_override_config(capsys):
    code, report = run_json(capsys, "--config", f"{CLI}/configs/shapetrace.toml", "--fake",
                            "--dims", "B=2")
    assert [t["dims"]["B"] for t in report["targets"]] == [2, 2]


def test_config_plus_command_line_target(capsys):
    code, report = run_json(capsys, "--config", f"{CLI}/configs/shapetrace.toml",
                            f"{TARGETS}/students.py::Head", "--fake")
    assert len(report["targets"]) == 3
    assert report["targets"][-1]["target"] == f"{TARGETS}/students.py::Head"


# Inputs and constructor arguments -------------------------------------------------------------


def test_inputs_from_jaxtyping_annotations(capsys):
    code, report = run_json(capsys, f"{TARGETS}/annotated.py::Embed", "--fake")
    (target,) = report["targets"]
    assert target["error"] is None
    assert target["trace"][0]["op"] == "F.embedding"
    assert target["trace"][0]["inputs"][0] == "(B, T)"


def test_inputs_from_parameter_names(capsys):
    code, report = run_json(capsys, CORRECT, "--fake")
    assert report["targets"][0]["trace"][0]["inputs"][0] == "(B, T, C)"


def test_input_overrides_inference(capsys):
    code, report = run_json(capsys, CORRECT, "--fake", "--input", "x=B,S,C")
    assert report["targets"][0]["trace"][0]["inputs"][0] == "(B, S, C)"
    assert code == 0


def test_init_fills_what_inference_cannot(capsys):
    code, report = run_json(capsys, f"{CLI}/needs_init.py::Scaled", "--fake",
                            "--init", "temperature=2.0")
    assert report["targets"][0]["error"] is None
    assert code == 0


def test_init_resolves_dim_names(capsys):
    code, report = run_json(capsys, CORRECT, "--fake", "--dims", "H=4,d=8",
                            "--init", "n_embd=C,n_head=H,block_size=T")
    (target,) = report["targets"]
    assert target["dims"]["C"] == 32
    assert target["error"] is None


# Output formats -------------------------------------------------------------------------------


def test_json_report_keys(capsys):
    code, report = run_json(capsys, JUMBLED)
    assert set(report) == {"shapetrace", "targets"}
    (target,) = report["targets"]
    assert {"target", "ok", "error", "dims", "diagnostics", "trace"} <= set(target)
    jumble = next(d for d in target["diagnostics"] if d["rule"] == "reshape-jumble")
    assert jumble["code"] == "ST001" and jumble["severity"] == "error"
    assert jumble["file"] == MODELS and jumble["line"] == 46
    assert {"op", "module", "file", "line", "inputs", "outputs"} <= set(target["trace"][0])


def test_prints_in_the_users_code_go_to_stderr(capsys):
    code, out, err = run(capsys, f"{CLI}/noisy.py", "--format", "json", "--fake")
    assert json.loads(out)["targets"][0]["ok"]
    assert "loading my attention" in err and "building 143" in err


def test_html_output_file(capsys, tmp_path):
    path = tmp_path / "report.html"
    code, out, err = run(capsys, JUMBLED, "--format", "html", "--output", str(path))
    assert code == 1 and out == ""
    html = path.read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    assert JUMBLED in html
    assert "reshape-jumble" in html and "models.py:46" in html


def test_html_to_stdout(capsys):
    code, out, err = run(capsys, JUMBLED, "--format", "html", "--no-trace")
    assert code == 1
    assert "<html" in out.lower() and "reshape-jumble" in out
    assert "Tensor.split" not in out  # --no-trace holds for exports too


def test_svg_output_is_xml(capsys, tmp_path):
    path = tmp_path / "report.svg"
    code, out, err = run(capsys, JUMBLED, "--format", "svg", "--output", str(path), "--no-trace")
    svg = path.read_text()
    assert svg.startswith("<svg")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "reshape-jumble" in svg


@pytest.mark.parametrize(("suffix", "check"), [
    pytest.param(".html", lambda s: "<html" in s.lower(), id="html"),
    pytest.param(".svg", lambda s: s.startswith("<svg"), id="svg"),
    pytest.param(".json", lambda s: json.loads(s)["targets"], id="json"),
    pytest.param(".txt", lambda s: "reshape-jumble" in s and "\x1b[" not in s, id="text"),
])
def test_output_format_from_extension(capsys, tmp_path, suffix, check):
    path = tmp_path / f"report{suffix}"
    run(capsys, JUMBLED, "--fake", "--output", str(path))
    assert check(path.read_text())


def test_rules(capsys):
    code, out, err = run(capsys, "--rules")
    assert code == 0
    for rule in RULES.values():
        assert rule.code in out and rule.name in out


def test_rules_json(capsys):
    code, out, err = run(capsys, "--rules", "--format", "json")
    rules = json.loads(out)
    assert [r["rule"] for r in rules] == list(RULES)
    assert {r["rule"] for r in rules if r["needs_values"]} == VALUE_RULES


def test_demo(capsys):
    code, out, err = run(capsys)
    assert code == 0
    assert "reshape-jumble" in out and "python -m shapetrace path/to/attention.py" in out


def test_demo_as_html(capsys):
    code, out, err = run(capsys, "--format", "html")
    assert code == 0
    assert "<html" in out.lower() and "reshape-jumble" in out


def test_version(capsys):
    from shapetrace import __version__

    with pytest.raises(SystemExit) as exc_info:
        main(["--version"])
    assert exc_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"shapetrace {__version__}"


# --fake ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [
    pytest.param(CORRECT, id="correct"),
    pytest.param(JUMBLED, id="jumbled-reshape"),
    pytest.param(f"{CLI}/scales.py::TensorScale", id="tensor-scale"),
    pytest.param(f"{CLI}/scales.py::WidthScale", id="tensor-scale-by-width"),
])
def test_fake_finds_the_same_shape_problems(capsys, target):
    code_real, real = run_json(capsys, target)
    code_fake, fake = run_json(capsys, target, "--fake")
    (real_target,), (fake_target,) = real["targets"], fake["targets"]
    assert shape_findings(fake_target) == shape_findings(real_target)
    assert code_fake == code_real
    assert [r["outputs"] for r in fake_target["trace"]] == [r["outputs"] for r in real_target["trace"]]
    assert set(fake_target["skipped"]) == VALUE_RULES
    assert "skipped" not in real_target


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_fake_report_says_what_was_skipped(capsys, fmt):
    code, out, err = run(capsys, CORRECT, "--fake", "--format", fmt, "--width", "200")
    assert "--fake" in out
    for name in VALUE_RULES:
        assert name in out


@pytest.mark.parametrize(("name", "line", "fragment"), [
    pytest.param("ItemScale", 16, ".item()", id="item"),
    pytest.param("MaskSelect", 29, "x[mask]", id="boolean-mask-index"),
    pytest.param("NonZero", 41, "torch.nonzero", id="nonzero"),
    pytest.param("BranchOnValue", 53, "if/while on a tensor", id="if-on-a-tensor"),
])
def test_fake_explains_ops_that_need_values(capsys, name, line, fragment):
    code, out, err = run(capsys, f"{CLI}/data_dependent.py::{name}", "--fake", "--format", "json")
    assert "Traceback" not in out + err
    assert code == 2  # the module could not run under --fake: not a bug in the student's code
    (target,) = json.loads(out)["targets"]
    assert target["diagnostics"] == []
    assert f"data_dependent.py:{line}" in target["error"]
    assert fragment in target["error"] and "run without --fake" in target["error"]
    assert_one_line_error(err, f"data_dependent.py:{line}", "run without --fake")


def test_fake_constructor_that_reads_a_value(capsys):
    code, out, err = run(capsys, f"{CLI}/data_dependent.py::ItemInInit", "--fake")
    assert code == 2
    assert_one_line_error(err, "ItemInInit()", "data_dependent.py:64", "run without --fake")


def test_data_dependent_ops_run_without_fake(capsys):
    code, report = run_json(capsys, f"{CLI}/data_dependent.py::MaskSelect")
    assert report["targets"][0]["error"] is None
    assert not any("--fake" in d["message"] for d in report["targets"][0]["diagnostics"])


def test_fake_mode_is_left_on_error():
    import torch

    from shapetrace.record.fake import NeedsValuesError, fake_mode

    with pytest.raises(NeedsValuesError):
        with fake_mode(True):
            torch.ones(3).nonzero()
    assert type(torch.ones(1)).__name__ == "Tensor"


# The real entry point, in subprocesses --------------------------------------------------------


def environment(**extra: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "TERM")}
    environ.update(extra)
    return environ


def python(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=environment(**(env or {})),
                          capture_output=True, text=True, timeout=120)


def test_help_does_not_import_torch():
    code = textwrap.dedent("""
        import sys
        from shapetrace.frontends.cli import main
        try:
            main(["--help"])
        except SystemExit as exc:
            assert exc.code == 0, exc.code
        heavy = sorted(m for m in ("torch", "rich", "jaxtyping") if m in sys.modules)
        assert not heavy, heavy
    """)
    result = python("-c", code)
    assert result.returncode == 0, result.stderr
    assert "usage: shapetrace" in result.stdout and "exit codes" in result.stdout


@pytest.mark.parametrize(("argv", "code"), [
    pytest.param([CORRECT, "--fake"], 0, id="correct"),
    pytest.param([JUMBLED, "--fake"], 1, id="jumbled"),
    pytest.param([f"{TARGETS}/broken_syntax.py"], 2, id="syntax-error"),
])
def test_entry_point_exit_codes(argv, code):
    result = python("-m", "shapetrace", *argv)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    if code == 2:
        assert len(result.stderr.splitlines()) == 1


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def has_colour(text: str) -> bool:
    for params in _SGR.findall(text):
        codes = [int(p) for p in params.split(";") if p]
        if any(30 <= c <= 38 or 90 <= c <= 97 for c in codes):
            return True
    return False


def test_piped_output_is_plain():
    result = python("-m", "shapetrace", JUMBLED, "--fake")
    assert result.returncode == 1
    assert "reshape-jumble" in result.stdout
    assert "\x1b[" not in result.stdout
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) == 100  # a pipe gets 100 columns, not rich's 80
    assert not [line for line in lines if line != line.rstrip()]


@pytest.mark.parametrize(("env", "coloured"), [
    pytest.param({}, True, id="terminal"),
    pytest.param({"NO_COLOR": "1"}, False, id="terminal-no-color"),
])
def test_terminal_colour(env, coloured):
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "shapetrace", JUMBLED, "--fake", "--no-trace"],
                            cwd=ROOT, env=environment(TERM="xterm-256color", **env),
                            stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert proc.wait(timeout=120) == 1, proc.stderr.read()
    proc.stderr.close()
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "reshape-jumble" in out
    assert has_colour(out) is coloured


def test_fake_builds_no_real_parameters():
    """C=32768: the qkv projection alone would need 12 GiB; under --fake it fits in 3 GiB."""
    limit = 3 << 30
    cap = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))"
    run_cli = ("import runpy, sys; sys.argv = ['shapetrace', *sys.argv[1:]]; "
               "runpy.run_module('shapetrace', run_name='__main__')")
    argv = [CORRECT, "--dims", "H=64,d=512", "--format", "json"]
    few_threads = {"OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}  # address space, not memory
    fake = python("-c", f"{cap}; {run_cli}", *argv, "--fake", env=few_threads)
    assert fake.returncode == 0, fake.stderr
    assert json.loads(fake.stdout)["targets"][0]["dims"]["C"] == 32768
    real = python("-c", f"{cap}; {run_cli}", *argv, env=few_threads)
    assert real.returncode == 2  # without --fake the same build does not fit: refused first
    assert "at H=64, d=512 one forward pass needs about" in real.stderr


def test_fake_leaves_out_the_value_rules_in_the_run_itself(monkeypatch):
    """Under --fake the rules that need values are not run at all, not only listed as skipped."""
    import shapetrace.drive.check as check_module
    import shapetrace.rules as rules_module
    from shapetrace.rules.registry import RULES

    seen = []
    real = rules_module.run_trace_rules

    def spy(analysis, skip=(), **options):
        seen.append(set(skip))
        return real(analysis, skip=skip, **options)

    monkeypatch.setattr(rules_module, "run_trace_rules", spy)
    from models_basic import MHA

    result = check_module.check_target(MHA, fake=True)
    value_rules = {name for name, rule in RULES.items() if rule.needs_values}
    assert result.error is None
    assert seen and value_rules <= seen[0]
    assert set(result.skipped) == value_rules
    assert not {d.rule for d in result.diagnostics} & value_rules


def test_the_demo_does_not_greet_a_numpy_less_install_with_a_warning(tmp_path):
    """torch warns "Failed to initialize NumPy" when NumPy is missing; the demo stays quiet."""
    script = tmp_path / "no_numpy.py"
    script.write_text("import sys\nsys.modules['numpy'] = None\n"
                      "from shapetrace.__main__ import main\nsys.exit(main([]))\n")
    proc = subprocess.run([sys.executable, "-W", "default", str(script)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "NumPy" not in proc.stderr and "UserWarning" not in proc.stderr
    assert "JumbledSelfAttention" in proc.stdout


def test_init_flags_add_up(capsys):
    """``--init`` is repeatable, as ``--input`` is: every flag's arguments are used, none lost
    (a causal mask of 3 positions makes the probe run 3 positions long)."""
    code, report = run_json(capsys, CORRECT, "--init", "block_size=3", "--init", "n_head=H")
    (target,) = report["targets"]
    assert code == 0 and target["dims"]["T"] == 3, target["dims"]
