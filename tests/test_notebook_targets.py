"""A notebook as a target (``python -m shapetrace course.ipynb``): its code cells imported as a
module whose top level only defines (imports, functions, classes, constants), every other
statement kept under ``if __name__ == "__main__":`` so that importing runs no training cell and
the notebook's own calls still build and call its classes (tests/data/notebooks)."""

from __future__ import annotations

import json
from pathlib import Path

import resolved
from shapetrace.drive.snippets import notebook_module
from shapetrace.drive.targets import resolve_targets

NOTEBOOK = Path(__file__).parent / "data" / "notebooks" / "attention_course.ipynb"


def test_importing_a_notebook_defines_its_classes_and_runs_no_cell():
    before = sorted(p.name for p in NOTEBOOK.parent.iterdir())
    targets = resolve_targets(str(NOTEBOOK), root=resolved.ROOT)
    assert [t.display.rsplit("::", 1)[1] for t in targets] == ["SelfAttention", "JumbledAttention"]
    assert all(t.display.startswith(str(NOTEBOOK)) for t in targets)
    assert "not_installed_plotting" in targets[0].absent  # stood in for, as in a .py file
    assert sorted(p.name for p in NOTEBOOK.parent.iterdir()) == before  # nothing written beside it


def test_a_notebook_class_is_checked_with_the_call_its_cells_make(capsys):
    from shapetrace.frontends.cli import main

    main([str(NOTEBOOK), "--format", "json", "--no-trace"])
    targets = {t["target"].rsplit("::", 1)[1]: t for t in json.loads(capsys.readouterr().out)["targets"]}
    right, jumbled = targets["SelfAttention"], targets["JumbledAttention"]
    assert right["error"] is None and not right["diagnostics"], right["diagnostics"]
    assert any("as its own code does" in n for n in right["notes"]), right["notes"]
    [found] = [d for d in jumbled["diagnostics"] if d["severity"] == "error"]
    assert found["rule"] == "reshape-jumble"
    module = Path(found["file"])
    assert module.parent.parent.name == "shapetrace-notebooks"
    assert "t.reshape(B, self.n_head, T" in module.read_text().splitlines()[found["line"] - 1]


def test_definitions_stay_at_the_top_level_and_the_rest_runs_only_as_main():
    cell = {"cell_type": "code", "source": [
        "import torch\n", "width = 4 * 8\n", "text = open('data.txt').read()\n",
        "vocab = len(text)\n", "@torch.no_grad()\n", "def sample(model):\n", "    return model\n",
        "model = torch.nn.Linear(width, width)\n"]}
    module = notebook_module(json.dumps({"cells": [cell]}), "demo.ipynb")
    lines = module.splitlines()
    assert "width = 4 * 8" in lines and "@torch.no_grad()" in lines and "def sample(model):" in lines
    # a file read, what depends on it, and a model built run only when the notebook does
    for text in ("text = open('data.txt').read()", "vocab = len(text)",
                 "model = torch.nn.Linear(width, width)"):
        assert "    " + text in lines and text not in lines
    compile(module, "demo.py", "exec")


def test_an_import_with_an_install_fallback_stays_a_definition():
    # a course notebook's ``try: import lib`` / ``except ModuleNotFoundError: !pip install lib``:
    # the names it imports are defined at the top level, where the classes after it use them
    cell = {"cell_type": "code", "source": [
        "try:\n", "    import not_installed_trainer as tr\n", "except ModuleNotFoundError:\n",
        "    !pip install --quiet not-installed-trainer\n", "    import not_installed_trainer as tr\n",
        "try:\n", "    import json\n", "except ImportError:\n", "    !pip install json\n",
        "try:\n", "    data = open('data.txt').read()\n", "except OSError:\n", "    data = ''\n",
        "class Task(tr.Module):\n", "    pass\n"]}
    module = notebook_module(json.dumps({"cells": [cell]}), "course.ipynb")
    lines = module.splitlines()
    assert "try:" in lines and "    import not_installed_trainer as tr" in lines
    assert "    pass" in lines  # the shell line, kept as a statement: the handler still parses
    assert "class Task(tr.Module):" in lines
    assert "    try:" in lines and "        data = open('data.txt').read()" in lines  # runs only as main
    compile(module, "course.py", "exec")


def test_sizes_a_notebook_sets_in_names_and_passes_are_read_when_its_cells_cannot_run(tmp_path, capsys):
    """The cell that builds the model first reads a dataset from a package not installed, so
    its own call never runs; the sizes it names (``hidden = 24``) and passes are still read."""
    from shapetrace.frontends.cli import main

    cells = [
        "import torch\nfrom torch import nn\nimport not_installed_text_data as text_data\n",
        "class Encoder(nn.Module):\n    def __init__(self, vocab, hidden, smoothing):\n"
        "        super().__init__()\n        self.embed = nn.Embedding(vocab, hidden)\n"
        "        self.smoothing = smoothing\n\n"
        "    def forward(self, tokens):\n        return self.embed(tokens) * self.smoothing\n",
        "vocab = len(text_data.load('train'))\nhidden = 24\nsmoothing = 0.25\n"
        "encoder = Encoder(vocab, hidden, smoothing)\n",
    ]
    notebook = tmp_path / "course.ipynb"
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]}))
    main([str(notebook), "--format", "json", "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"] is None, target["error"]
    assert any(n.startswith("smoothing=0.25 as") for n in target["notes"]), target["notes"]
