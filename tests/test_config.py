"""shapetrace.toml and [tool.shapetrace]: loading, finding, and one clear line per mistake."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shapetrace.drive.config import Config, TargetConfig, find_config, load_config
from shapetrace.base.errors import UsageError
from shapetrace.drive.targets import resolve_targets

DATA = Path(__file__).parent / "data" / "targets" / "configs"

RASCHKA_INIT = {"d_in": "C", "d_out": "C", "context_length": 16, "dropout": 0.0, "num_heads": "H"}


def one_line(exc_info, *fragments: str) -> str:
    message = str(exc_info.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# Loading --------------------------------------------------------------------------------------


def test_load_shapetrace_toml():
    config = load_config(DATA / "toml" / "shapetrace.toml")
    assert isinstance(config, Config)
    assert config.dims == {"B": 3, "T": 5}
    assert config.root == (DATA / "toml").resolve()
    assert config.path == DATA / "toml" / "shapetrace.toml"
    assert config.targets == [
        TargetConfig(target="../../students.py::MultiHeadAttention", init=RASCHKA_INIT,
                     inputs=["x=B,T,C"], dims={"d": 8}, causal=True),
        TargetConfig(target="../../students.py::Head", init=None, inputs=None, dims={}, causal=None),
    ]


def test_load_pyproject_toml():
    config = load_config(DATA / "pyproject" / "pyproject.toml")
    assert config.dims == {"B": 5, "T": 7}
    assert config.root == (DATA / "pyproject").resolve()
    assert [t.target for t in config.targets] == ["../../students.py::MultiHeadAttention",
                                                  "../../uses_sibling.py"]
    assert config.targets[0].init == RASCHKA_INIT
    assert config.targets[1].causal is False


def test_dims_for_merges_target_dims_over_global():
    config = load_config(DATA / "toml" / "shapetrace.toml")
    assert config.dims_for(config.targets[0]) == {"B": 3, "T": 5, "d": 8}
    assert config.dims_for(config.targets[1]) == {"B": 3, "T": 5}


@pytest.mark.parametrize("name", ["toml/shapetrace.toml", "pyproject/pyproject.toml"])
def test_target_paths_resolve_relative_to_the_config_file(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # anywhere but the config's directory
    config = load_config(DATA / name)
    (target,) = resolve_targets(config.targets[0].target, root=config.root)
    assert target.cls.__name__ == "MultiHeadAttention"
    assert target.display == "../../students.py::MultiHeadAttention"


def test_empty_config_is_valid(tmp_path):
    config = load_config(write(tmp_path / "shapetrace.toml", ""))
    assert (config.dims, config.targets) == ({}, [])


def test_empty_tool_table_is_valid(tmp_path):
    config = load_config(write(tmp_path / "pyproject.toml", "[tool.shapetrace]\n"))
    assert (config.dims, config.targets) == ({}, [])


def test_inputs_may_use_target_dims(tmp_path):
    config = load_config(write(tmp_path / "shapetrace.toml", """
        dims = { K = 29 }
        [[targets]]
        target = "a.py"
        inputs = ["x=B,K,C", "y=B,T,J:long:J"]
        dims = { J = 31 }
    """))
    assert config.targets[0].inputs == ["x=B,K,C", "y=B,T,J:long:J"]


def test_init_keeps_any_toml_value(tmp_path):
    config = load_config(write(tmp_path / "shapetrace.toml", """
        [[targets]]
        target = "a.py"
        init = { widths = [1, 2], act = "gelu", flag = false, scale = 0.5 }
    """))
    assert config.targets[0].init == {"widths": [1, 2], "act": "gelu", "flag": False, "scale": 0.5}


# Finding --------------------------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path):
    """A repository root: find_config never looks above it."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def test_find_shapetrace_toml(repo):
    path = write(repo / "shapetrace.toml", "")
    assert find_config(repo) == path


def test_find_pyproject_with_table(repo):
    path = write(repo / "pyproject.toml", "[tool.shapetrace]\ndims = { B = 3 }\n")
    assert find_config(repo) == path


def test_shapetrace_toml_comes_before_pyproject(repo):
    write(repo / "pyproject.toml", "[tool.shapetrace]\n")
    path = write(repo / "shapetrace.toml", "")
    assert find_config(repo) == path


def test_pyproject_without_table_is_skipped(repo):
    write(repo / "pyproject.toml", "[project]\nname = 'x'\n")
    assert find_config(repo) is None


def test_find_walks_up_from_a_subdirectory(repo):
    path = write(repo / "pyproject.toml", "[[tool.shapetrace.targets]]\ntarget = 'a.py'\n")
    (repo / "src" / "student").mkdir(parents=True)
    assert find_config(repo / "src" / "student") == path


def test_find_stops_at_the_repository_root(tmp_path):
    write(tmp_path / "shapetrace.toml", "")  # outside the repository: not ours
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "sub").mkdir()
    assert find_config(tmp_path / "repo" / "sub") is None


def test_broken_pyproject_meant_for_shapetrace_is_found(repo):
    path = write(repo / "pyproject.toml", "[tool.shapetrace]\ndims = {\n")
    assert find_config(repo) == path


def test_broken_unrelated_pyproject_is_skipped(repo):
    write(repo / "pyproject.toml", "[project\n")
    assert find_config(repo) is None


# Errors ---------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(UsageError) as exc_info:
        load_config(tmp_path / "shapetrace.toml")
    one_line(exc_info, "config file not found:", "shapetrace.toml")


def test_pyproject_without_table(tmp_path):
    path = write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    with pytest.raises(UsageError) as exc_info:
        load_config(path)
    one_line(exc_info, "pyproject.toml: no [tool.shapetrace] table")


TARGET = '[[targets]]\ntarget = "a.py"\n'


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        pytest.param("dims = {\n", ["invalid TOML", "line 1"], id="toml-syntax"),
        pytest.param("dims = { B = 5 }\n\n[[targets]\n", ["invalid TOML", "line 3"], id="toml-syntax-line"),
        pytest.param("dim = { B = 5 }\n", ["dim is not a known key; did you mean 'dims'?"], id="unknown-key"),
        pytest.param("target = 'a.py'\n", ["target is not a known key; did you mean 'targets'?"],
                     id="unknown-key-target"),
        pytest.param("colour = true\n", ["colour is not a known key; expected one of dims, targets"],
                     id="unknown-key-no-match"),
        pytest.param("dims = 5\n", ["dims must be a table of NAME = SIZE", "got an integer"], id="dims-not-table"),
        pytest.param("dims = { B = 0 }\n", ["dims.B must be a positive integer, got 0"], id="size-zero"),
        pytest.param("dims = { B = -2 }\n", ["dims.B must be a positive integer, got -2"], id="size-negative"),
        pytest.param("dims = { B = '5' }\n", ["dims.B must be a positive integer, got '5'"], id="size-string"),
        pytest.param("dims = { B = 2.5 }\n", ["dims.B must be a positive integer, got 2.5"], id="size-float"),
        pytest.param("dims = { B = true }\n", ["dims.B must be a positive integer, got True"], id="size-bool"),
        pytest.param('dims = { "2x" = 3 }\n', ["dims has '2x', which is not a valid dimension name"],
                     id="dim-name"),
        pytest.param("[targets]\ntarget = 'a.py'\n",
                     ["targets must be an array of tables, written [[targets]]"], id="targets-not-array"),
        pytest.param("targets = ['a.py']\n", ["targets must be an array of tables"], id="targets-strings"),
        pytest.param("[[targets]]\ninit = {}\n", ["targets[0] has no 'target' key"], id="no-target"),
        pytest.param("[[targets]]\ntarget = ''\n", ["targets[0].target must be a non-empty string"],
                     id="empty-target"),
        pytest.param("[[targets]]\ntarget = 3\n", ["targets[0].target must be a non-empty string, got 3"],
                     id="target-not-string"),
        pytest.param(TARGET + "input = ['x=B,T,C']\n",
                     ["targets[0].input is not a known key; did you mean 'inputs'?"], id="unknown-target-key"),
        pytest.param(TARGET + "causal = 'yes'\n", ["targets[0].causal must be true or false, got 'yes'"],
                     id="causal-not-bool"),
        pytest.param(TARGET + "inputs = 'x=B,T,C'\n", ["targets[0].inputs must be a list of strings"],
                     id="inputs-string"),
        pytest.param(TARGET + "inputs = [1, 2]\n", ["targets[0].inputs must be a list of strings"],
                     id="inputs-not-strings"),
        pytest.param(TARGET + "inputs = ['x=B,T,Q']\n",
                     ["targets[0].inputs[0] is invalid", "unknown dimension 'Q'"], id="inputs-unknown-dim"),
        pytest.param(TARGET + "inputs = ['x=B,T,C', 'y=B:oops']\n",
                     ["targets[0].inputs[1] is invalid", "unknown dtype 'oops'"], id="inputs-bad-dtype"),
        pytest.param(TARGET + "init = 'd_in=C'\n", ["targets[0].init must be a table", "got a string"],
                     id="init-not-table"),
        pytest.param(TARGET + 'init = { "bad key" = 1 }\n', ["targets[0].init has 'bad key'"], id="init-key"),
        pytest.param(TARGET + "dims = [1]\n", ["targets[0].dims must be a table", "got an array"],
                     id="target-dims-not-table"),
        pytest.param(TARGET + "dims = { d = 0 }\n", ["targets[0].dims.d must be a positive integer"],
                     id="target-size-zero"),
        pytest.param(TARGET + TARGET + "causal = 1\n", ["targets[1].causal must be true or false"],
                     id="second-target"),
    ],
)
def test_shapetrace_toml_errors(tmp_path, text, fragments):
    path = write(tmp_path / "shapetrace.toml", text)
    with pytest.raises(UsageError) as exc_info:
        load_config(path)
    one_line(exc_info, f"{path}: ", *fragments)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        pytest.param("[tool.shapetrace]\ndims = { B = 0 }\n",
                     ["tool.shapetrace.dims.B must be a positive integer"], id="size"),
        pytest.param("[tool.shapetrace]\nfoo = 1\n", ["tool.shapetrace.foo is not a known key"],
                     id="unknown-key"),
        pytest.param("[tool.shapetrace.targets]\ntarget = 'a.py'\n",
                     ["tool.shapetrace.targets must be an array of tables, written [[tool.shapetrace.targets]]"],
                     id="targets-not-array"),
        pytest.param("[[tool.shapetrace.targets]]\ntarget = 'a.py'\ncausal = 'no'\n",
                     ["tool.shapetrace.targets[0].causal must be true or false"], id="causal"),
        pytest.param("[[tool.shapetrace.targets]]\ninputs = []\n",
                     ["tool.shapetrace.targets[0] has no 'target' key"], id="no-target"),
        pytest.param("[tool.shapetrace]\ndims = { B = 5 \n", ["invalid TOML", "line 2"], id="toml-syntax"),
    ],
)
def test_pyproject_errors(tmp_path, text, fragments):
    path = write(tmp_path / "pyproject.toml", text)
    with pytest.raises(UsageError) as exc_info:
        load_config(path)
    one_line(exc_info, f"{path}: ", *fragments)


def test_config_combining_to_invalid_dims(tmp_path):
    path = write(tmp_path / "shapetrace.toml", TARGET + "dims = { C = 0 }\n")
    with pytest.raises(UsageError) as exc_info:
        load_config(path)
    one_line(exc_info, "targets[0].dims.C must be a positive integer")
