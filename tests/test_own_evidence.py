"""What shapetrace reads from a module's own code before it asks for a flag, and the readings it
tries when a guess does not fit (tests/data/building/own_evidence.py, modules of our own in the
styles real code uses): config objects by any name, read by attribute or key and handed on;
size arguments by what they are handed to; ``**kwargs`` handed to a base class; a module-typed
argument; key/value groups that divide the heads; ``.cuda()`` on a machine without CUDA; integer
offsets and optional inputs; probe sizes read again (an even head size, a grid's length, an even
width a constructor asks for). Each one runs clean, with a note where a reading was chosen, and a
bug behind one is still found at its line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from shapetrace.analysis.code import compared_with_none
from shapetrace.drive.kwargs_read import kwargs_base
from shapetrace.drive.config_fields import fields_read
from shapetrace.drive.usage import meaning_by_use

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

FILE = Path(__file__).parent / "data" / "building" / "own_evidence.py"


def _check(capsys, name: str, *flags: str) -> tuple[int, dict]:
    from shapetrace.frontends.cli import main

    code = main([f"{FILE}::{name}", "--format", "json", "--no-trace", *flags])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    return code, target


def _loud(target: dict) -> list[str]:
    return [d["rule"] for d in target["diagnostics"] if d["severity"] in ("error", "warning")]


def _module():
    from style_corpus import load

    return load(FILE, "own_evidence")


@pytest.mark.parametrize("name", [
    "NamespaceAttention", "NamespaceBlock", "DictModel", "StateAttention", "StateStack",
    "KeywordsOnward", "KeywordsToBlocks", "OptionalPathsConfig", "ChunkedApply", "ActivatedConv", "TwoStageModel", "Wrapper", "GpuCache", "GroupedKV", "OptionalPrevious", "RotaryPairs",
    "GridMixer", "EvenTable", "PaddedTranslator"])
def test_built_from_its_own_code_and_clean(capsys, name):
    code, target = _check(capsys, name)
    assert target["error"] is None, target["error"]
    assert (code, _loud(target)) == (0, [])


def test_a_bug_behind_a_config_read_from_the_code_is_found(capsys):
    code, target = _check(capsys, "NamespaceAttentionJumbled")
    assert code == 1 and "reshape-jumble" in _loud(target)
    line = next(d["line"] for d in target["diagnostics"] if d["rule"] == "reshape-jumble")
    assert "# BUG" in FILE.read_text().splitlines()[line - 1]


def test_config_fields_are_read_by_attribute_key_and_hand_off():
    module = _module()
    block = fields_read(module.NamespaceBlock, "settings")
    assert {"n_embd", "n_head", "attn_pdrop", "tag"} <= set(block)  # via NamespaceAttention
    assert block["tag"].compared_with_none and not block["n_embd"].by_key
    table = fields_read(module.DictModel, "table")
    assert set(table) == {"vocab_size", "emb_dim", "n_heads", "bias"}
    assert all(f.by_key for f in table.values()) and table["bias"].has_default


def test_a_size_argument_means_what_it_is_handed_to():
    module = _module()
    assert meaning_by_use(module.StateAttention, "n_state") == "C"
    assert meaning_by_use(module.StateStack, "n_vocab") == "V"
    assert meaning_by_use(module.StateStack, "n_state") == "C"  # through StateAttention too
    assert meaning_by_use(module.StateStack, "n_block") == "layers"
    assert meaning_by_use(module.GridMixer, "side") is None  # handed to nothing that says


def test_kwargs_handed_to_the_base_class():
    module = _module()
    assert kwargs_base(module.KeywordsOnward) == (module.LayersBase, frozenset({"causal"}))
    assert kwargs_base(module.LayersBase) is None
    # handed on to another class it builds, its first argument given by place
    assert kwargs_base(module.KeywordsToBlocks) == (module.HeadsBlock, frozenset({"input_dim"}))


def test_optional_input_and_offset_are_passed_as_values():
    module = _module()
    assert compared_with_none(module.OptionalPrevious.forward, "previous")
    assert not compared_with_none(module.OptionalPrevious.forward, "keys")
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_inputs

    shown = [str(s) for s in infer_inputs(module.GpuCache, Dims())]
    assert shown == ["x=B,T,C", "start_pos=0"]
    shown = [str(s) for s in infer_inputs(module.OptionalPrevious, Dims())]
    assert shown[-1] == "previous=None" and shown[1] == "keys=B,S,C"


def test_key_value_groups_divide_the_heads(capsys):
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_init

    init = infer_init(_module().GroupedKV, Dims())
    assert init["num_heads"] % init["num_kv_groups"] == 0
    assert infer_init(_module().GroupedKV, Dims({"H": 8, "d": 4}))["num_kv_groups"] == 4


def test_cuda_calls_stay_on_the_cpu_with_a_note(capsys):
    """Without CUDA, .cuda() leaves its tensor where it is and a note names the line; with
    CUDA nothing changes (and nothing is said)."""
    code, target = _check(capsys, "GpuCache")
    noted = any("no CUDA on this machine, so .cuda()" in n and "own_evidence.py:" in n
                for n in target.get("notes", []))
    assert code == 0 and noted is not torch.cuda.is_available()
    assert torch.Tensor.cuda.__name__ == "cuda"  # put back


def test_tensors_asked_for_on_cuda_are_made_on_the_cpu_with_a_note(capsys):
    code, target = _check(capsys, "GpuDeviceCache")
    noted = any("no CUDA on this machine" in n and "own_evidence.py:" in n
                for n in target.get("notes", []))
    assert code == 0 and noted is not torch.cuda.is_available(), target


@pytest.mark.parametrize("name, note", [
    ("RotaryPairs", "d=16, an even head size"),
    ("GridMixer", "T=36, the sequence length"),
    ("EvenTable", "the constructor needs an even width")])
def test_probe_sizes_read_again_say_so(capsys, name, note):
    code, target = _check(capsys, name)
    assert code == 0 and any(note in n for n in target["notes"]), target["notes"]


def test_sizes_the_user_gave_are_not_read_again(capsys):
    code, target = _check(capsys, "RotaryPairs", "--dims", "d=13")
    assert code != 0 and target["error"] is None
    assert not any("even head size" in n for n in target.get("notes", []))


def test_config_fields_from_the_command_line(capsys):
    """``--init settings.n_head=H``: some fields of a config argument, dim names resolved; the
    other fields are read from the code as without them."""
    code, target = _check(capsys, "NamespaceAttention", "--init",
                          "settings.n_head=H,settings.n_embd=96", "--dims", "H=4,d=24")
    assert (code, target["error"]) == (0, None)
    assert target["dims"]["C"] == 96 and target["dims"]["H"] == 4


def test_config_fields_from_a_config_file(tmp_path, capsys):
    from shapetrace.frontends.cli import main

    (tmp_path / "pyproject.toml").write_text(
        "[[tool.shapetrace.targets]]\n"
        f"target = \"{FILE.as_posix()}::DictModel\"\n"
        "init = { table = { emb_dim = \"C\", n_heads = \"H\", bias = true } }\n")
    code = main(["--config", str(tmp_path / "pyproject.toml"), "--format", "json", "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert (code, target["error"]) == (0, None)


def test_the_fields_given_are_what_the_module_gets():
    from shapetrace.base.dims import Dims
    from shapetrace.base.specs import parse_init
    from shapetrace.drive.infer import infer_init

    dims = Dims()
    init = infer_init(_module().DictModel, dims, given=parse_init("table.n_heads=H,table.bias=true"))
    assert init["table"]["n_heads"] == dims["H"] and init["table"]["bias"] is True
    assert init["table"]["emb_dim"] == dims["C"]  # the rest as read from the code
    init = infer_init(_module().NamespaceAttention, dims,
                      given=parse_init("settings.tag='head'"))
    assert init["settings"].tag == "head" and init["settings"].n_embd == dims["C"]


# --- in its parent's context ---------------------------------------------------------------------

PARENT = FILE.parent / "in_parent.py"


def _in_parent(capsys, name: str, *flags: str) -> tuple[int, dict]:
    from shapetrace.frontends.cli import main

    code = main([f"{PARENT}::{name}", "--format", "json", "--no-trace", *flags])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    return code, target


@pytest.mark.parametrize("name, parent", [("RotaryAttention", "RotaryModel"),
                                          ("NumberedBlock", "RotaryModel")])
def test_a_part_is_checked_as_its_model_builds_and_calls_it(capsys, name, parent):
    code, target = _in_parent(capsys, name)
    assert (code, target["error"], _loud(target)) == (0, None, [])
    assert any(n.startswith(f"checked as {parent} builds it, with the inputs its forward passes")
               for n in target["notes"]), target["notes"]


def test_a_bug_in_a_part_is_found_in_its_parents_context(capsys):
    code, target = _in_parent(capsys, "RotaryAttentionLeaky")
    assert code == 1 and target["error"] is None
    (found,) = [d for d in target["diagnostics"] if d["severity"] == "error"]
    assert found["rule"] == "discarded-result"
    assert "# BUG" in PARENT.read_text().splitlines()[found["line"] - 1]
    assert any("checked as LeakyModel builds it" in n for n in target["notes"])


def test_parents_are_found_by_what_their_constructors_build():
    from style_corpus import load

    from shapetrace.drive.parent import _parents

    module = load(PARENT, "in_parent")
    assert _parents(module.RotaryAttention)[:2] == [module.NumberedBlock, module.RotaryModel]
    assert module.LeakyModel in _parents(module.RotaryAttentionLeaky)
    assert _parents(module.RotaryModel) == []  # nothing builds the whole model


def test_what_the_user_gave_is_not_replaced_by_a_parent(capsys):
    code, target = _in_parent(capsys, "RotaryAttention", "--init", "dim=C,n_heads=H")
    assert code == 2 and "theta" in target["error"]


def test_special_token_ids_and_devices_from_their_names():
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_init
    from shapetrace.drive.plan import Request, make_plan

    dims = Dims()
    init = infer_init(_module().PaddedTranslator, dims)
    assert (init["src_pad_idx"], init["trg_pad_idx"], init["device"]) == (0, 0, "cpu")
    assert init["enc_voc_size"] == init["dec_voc_size"] == dims["V"]
    plan = make_plan(Request(module=_module().PaddedTranslator, dims=dims, display="t"))
    tokens = [g for g in plan.guesses if type(g).__name__ == "VectorInputs"][0].tokens
    assert all(spec.low == 1 for spec in tokens)  # no guessed token is padding by chance


@pytest.mark.parametrize("name", ["MaskedSelfAttention", "MaskedLayer"])
def test_a_part_is_checked_as_a_model_of_its_package_builds_it(capsys, name):
    """layers.py's classes need a mask only model.py makes: the package is read for the class
    that builds them (through the other classes of their own file)."""
    from shapetrace.frontends.cli import main

    code = main([f"{FILE.parent / 'seq2seq' / 'layers.py'}::{name}", "--format", "json",
                 "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert (code, target["error"], _loud(target)) == (0, None, [])
    assert any(n.startswith("checked as PaddedEncoder builds it") for n in target["notes"])


def test_a_vector_guess_unpacked_into_two_sizes_is_read_as_token_ids(tmp_path, capsys):
    (tmp_path / "ids.py").write_text(
        "import torch.nn as nn\n\n\n"
        "class Positions(nn.Module):\n"
        "    def __init__(self, d_model, max_len=32):\n"
        "        super().__init__()\n"
        "        self.table = nn.Embedding(max_len, d_model)\n\n"
        "    def forward(self, x):\n"
        "        batch, length = x.size()\n"
        "        return self.table.weight[:length].expand(batch, length, -1)\n")
    from shapetrace.frontends.cli import main

    code = main([str(tmp_path / "ids.py"), "--format", "json", "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert (code, target["error"]) == (0, None)
    assert any("x read as token ids" in n and "two sizes unpacked at line 10" in n
               for n in target["notes"])


def test_the_files_example_relates_arguments_to_the_inputs(capsys):
    """``n=49`` beside an input of 49 tokens in the main block: n is the sequence length; an
    argument nothing else sizes takes the example's value."""
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_init
    from style_corpus import load

    module = load(FILE.parent / "with_example.py", "with_example")
    dims = Dims()
    assert infer_init(module.TokenMixing, dims) == {"d_model": dims["C"], "n": dims["T"]}
    assert infer_init(module.Pooled, dims)["how"] == "mean"
    from shapetrace.frontends.cli import main

    code = main([str(FILE.parent / "with_example.py"), "--format", "json", "--no-trace"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and [t["error"] for t in report["targets"]] == [None, None]


def test_a_hidden_size_is_read_as_the_width_and_the_keys_at_the_queries_length(capsys):
    code, target = _check(capsys, "AdditiveScores")
    assert (code, target["error"], _loud(target)) == (0, None, [])
    notes = " ".join(target["notes"])
    assert "hidden_dim read as the width (C): as 4*C it did not fit F.linear" in notes
    assert "key, value read as long as the queries (T)" in notes


def test_a_call_in_the_projects_examples_relates_arguments_to_the_inputs(capsys):
    """No main block in the module's file: the project's examples folder calls it with
    ``span=36`` beside 36 tokens, so span is the sequence length."""
    from shapetrace.frontends.cli import main

    code = main([str(FILE.parent / "project" / "mixers" / "table.py"), "--format", "json",
                 "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert (code, target["error"], _loud(target)) == (0, None, [])


@pytest.mark.parametrize("name, note", [
    ("NamespaceBlock", "settings made with the fields the code reads from it (n_embd=143"),
    ("StateStack", "n_state read as the model width (C), from what the constructor hands it to"),
    ("StateStack", "n_block read as a count of layers"),
])
def test_values_read_from_the_code_are_said_in_a_note(capsys, name, note):
    code, target = _check(capsys, name)
    assert code == 0 and any(n.startswith(note) for n in target["notes"]), target["notes"]


def test_values_from_the_example_call_are_said_in_a_note(capsys):
    """Read, not run, when the code's own calls are off (else the main block's call is
    replayed: ``test_owncalls``)."""
    from shapetrace.frontends.cli import main

    main([str(FILE.parent / "with_example.py"), "--format", "json", "--no-trace",
          "--no-own-calls"])
    notes = [n for t in json.loads(capsys.readouterr().out)["targets"] for n in t["notes"]]
    assert "n read as the sequence length (T): the example call passes 49; give --init n=VALUE " \
           "to choose" in notes
    assert any(n.startswith("how 'mean' as in the example call") for n in notes)


def test_a_hidden_size_a_norm_reads_the_input_over_is_the_width(capsys):
    code, target = _check(capsys, "NormedStack")
    assert (code, target["error"], _loud(target)) == (0, None, [])
    notes = " ".join(target["notes"])
    assert "hidden_dim read as the width (C): as 4*C it did not fit F.layer_norm" in notes


def test_a_parent_that_only_refines_a_checkable_part_is_tried_for_a_bounded_time(capsys, monkeypatch):
    """A part that could be checked alone (only its mask guessed) is checked alone when the
    parents would take longer than their time (a constructor filling a large table in Python,
    built for each reading): the same verdict, without the parent's note."""
    from shapetrace.drive import parent
    from shapetrace.frontends.cli import main

    monkeypatch.setattr(parent, "_OPTIONAL_SECONDS", 0.0)
    code = main([f"{FILE.parent / 'seq2seq' / 'layers.py'}::MaskedLayer", "--format", "json",
                 "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert (code, target["error"], _loud(target)) == (0, None, [])
    assert not any(n.startswith("checked as") for n in target["notes"]), target["notes"]
