"""Modules built and fed from what their own code does: config fields read by what the code
hands them to, inputs handed to a helper that never reads them, an image a permute of four
axes wants, a torch layer's subclass that hands all its arguments on, weights its constructor
leaves unset, an even head size where the module's own check refuses an odd one; a guess that
made an empty tensor is no verdict; a package not installed whose calls only log (or, while
the module is built, initialise a weight) is passed over, one handed a tensor in forward is
not."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from shapetrace.analysis.code import never_read
from shapetrace.drive.config_fields import fields_read, value_by_use
from shapetrace.drive.unset import UnsetWatch, initialise
from style_corpus import load

DATA = Path(__file__).parent / "data"


def _targets(path: Path, *flags: str, cls: str = "") -> dict:
    """Each class of ``path`` (``cls`` alone when given) as ``python -m shapetrace`` reports it
    in JSON, by its name, run from the file's folder."""
    out = subprocess.run([sys.executable, "-m", "shapetrace", str(path) + (f"::{cls}" if cls else ""),
                          "--format", "json", "--no-trace", *flags], capture_output=True, text=True,
                         timeout=900, cwd=path.parent)
    return {t["target"].split("::")[-1]: t for t in json.loads(out.stdout)["targets"]}


@pytest.fixture(scope="module")
def forecast() -> dict:
    return _targets(DATA / "configs_by_use" / "forecast.py")


@pytest.fixture(scope="module")
def channels() -> dict:
    return _targets(DATA / "channels" / "blocks.py")


@pytest.fixture(scope="module")
def positions() -> dict:
    return _targets(DATA / "guesses_sized" / "positions.py")


@pytest.fixture(scope="module")
def logged() -> dict:
    return _targets(DATA / "absent_logging" / "model.py")


# --- config fields by use ----------------------------------------------------------------------

def _data_module(folder: str, stem: str):
    """A test module of tests/data, under a name of its own (``model`` would stand for any
    other test's module of that name in the same process)."""
    return load(DATA / folder / f"{stem}.py", "read_by_use")


def _forecast_module():
    return _data_module("configs_by_use", "forecast")


def test_config_fields_are_read_by_what_the_code_hands_them_to():
    fields = fields_read(_forecast_module().Forecaster, "configs")
    assert fields["pred_len"].uses == {"C"}  # nn.Linear(configs.d_model, configs.pred_len)
    assert fields["enc_in"].uses == {"C"}
    assert "layers" in fields["e_layers"].uses  # range(configs.e_layers)
    assert fields["activation"].handed_defaults == ["relu"]  # EncoderLayer(activation=...)
    assert fields["factor"].handed_defaults == [5]  # FullAttention(False, configs.factor)
    dims = {"C": 143, "H": 11, "d": 13, "T": 7, "B": 5}
    assert value_by_use(fields["pred_len"], dims, "pred_len") == 143
    assert value_by_use(fields["e_layers"], dims, "e_layers") == 2
    assert value_by_use(fields["activation"], dims, "activation") == "relu"


def test_a_config_model_whose_fields_name_nothing_is_built_and_checked(forecast):
    entry = forecast["Forecaster"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry


def test_an_input_handed_to_a_helper_that_never_reads_it_is_never_read():
    forward = _forecast_module().Forecaster.forward
    assert never_read(forward, "x_dec") and never_read(forward, "x_mark_dec")
    assert not never_read(forward, "x")


# --- images a permute wants; a layer subclass handing its arguments on ------------------------

@pytest.mark.parametrize("cls", ["MixBlock", "ChannelMLP", "ChannelNorm"])
def test_an_input_a_permute_of_four_axes_reads_is_an_image(channels, cls):
    entry = channels[cls]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("x read as an image (B, ") for n in entry["notes"]), entry["notes"]


def test_only_the_input_the_permute_read_is_read_as_an_image(channels):
    notes = channels["MixBlock"]["notes"]
    assert not any(n.startswith(("kv read", "x, kv read")) for n in notes), notes


# --- weights the constructor leaves unset -------------------------------------------------------

class _Kept(nn.Linear):
    def reset_parameters(self):  # weights loaded from a checkpoint later
        return None


class _Table(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.empty(4, 4))
        self.b = nn.Parameter(torch.empty(4).fill_(0.5))
        self.c = nn.Parameter(torch.empty(4))
        with torch.no_grad():
            self.c[:] = 2.0


@pytest.mark.parametrize("make", [lambda: nn.MultiheadAttention(8, 2, batch_first=True),
                                  lambda: nn.TransformerEncoderLayer(8, 2), lambda: nn.Conv2d(3, 4, 3),
                                  lambda: nn.Embedding(5, 4), lambda: nn.LayerNorm(4),
                                  lambda: nn.GRU(4, 4), lambda: nn.BatchNorm2d(3)])
def test_torch_s_own_layers_leave_nothing_unset(make):
    watch = UnsetWatch()
    with watch:
        module = make()
    assert watch.unset(module) == []


def test_weights_made_empty_and_never_written_are_found_and_given_values():
    watch = UnsetWatch()
    with watch:
        kept, table = _Kept(3, 4), _Table()
    assert watch.unset(kept) == ["weight", "bias"]
    watch = UnsetWatch()
    with watch:
        table = _Table()
    assert watch.unset(table) == ["w"]  # b filled, c assigned into
    initialise(table, ["w"])
    assert torch.isfinite(table.w).all() and 0 < table.w.abs().max() < 1
    assert torch.equal(table.b, torch.full((4,), 0.5)) and torch.equal(table.c, torch.full((4,), 2.0))


def test_unset_weights_are_said_and_never_judged(channels):
    notes = channels["ChannelMLP"]["notes"]
    assert any("`fc.0.weight`" in n and "never written by the constructor" in n for n in notes), notes


# --- sizes the guess did not meet ---------------------------------------------------------------

def test_an_even_head_size_where_the_module_s_own_check_refuses_an_odd_one(positions):
    entry = positions["PairedRotary"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert entry["dims"]["d"] % 2 == 0
    assert any("own check refused the odd one" in n for n in entry["notes"]), entry["notes"]


def test_an_empty_tensor_made_from_a_guess_is_a_target_error_not_a_finding(positions):
    entry = positions["GridAttention"]
    assert entry["diagnostics"] == [], entry
    assert "on an empty tensor (0, " in entry["error"] and "positions.py:13" in entry["error"]
    assert "--input" in entry["error"]


# --- a package not installed --------------------------------------------------------------------

def test_calls_that_only_log_through_a_missing_package_are_passed_over(logged):
    entry = logged["Logged"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    note = next(n for n in entry["notes"] if "shapetrace_missing_logger" in n)
    assert "`shapetrace_missing_logger.logger.debug` at" in note and "model.py:15" in note


def test_a_missing_package_handed_a_tensor_in_forward_stops_the_class(logged):
    error = logged["Summarized"]["error"]
    assert "shapetrace_missing_logger.summarize" in error and "model.py:29" in error


def test_a_weight_initialised_through_a_missing_package_is_passed_over_while_building(logged):
    entry = logged["Initialised"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any("`shapetrace_missing_logger.trunc_normal_` at" in n for n in entry["notes"])


def test_a_namespace_of_fields_is_what_the_forecaster_is_built_with():
    forecast = _forecast_module()
    from shapetrace.drive.infer import infer_init

    init = infer_init(forecast.Forecaster, {"B": 5, "T": 7, "H": 11, "d": 13, "C": 143, "L": 23,
                                            "V": 19, "S": 11})
    configs = init["configs"]
    assert isinstance(configs, types.SimpleNamespace)
    assert (configs.pred_len, configs.e_layers, configs.activation) == (143, 2, "relu")
    forecast.Forecaster(**init)


def test_a_module_argument_is_built_as_another_package_of_the_project_builds_it_when_the_file_needs_a_missing_package():
    """layers/family.py imports a package not installed; model/net.py, which builds HeadsLayer
    with PlainAttention, imports layers.family: read with the same package standing in. The
    project builds it with PlainAttention twice and with a GPU kernel once (in the file read
    first): the class it builds most often stands. The mask forward only hands to the attention,
    which tests it for None, is None."""
    entry = _targets(DATA / "project_absent" / "layers" / "family.py")["HeadsLayer"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("attention built as net.py:11 builds it: PlainAttention(...)")
               for n in entry["notes"]), entry["notes"]


def test_an_argument_annotated_as_a_pair_of_ints_is_a_pair_and_sizes_the_image():
    entry = _targets(DATA / "channels" / "windows.py")["GridBlock"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("input read as an image (B, C, 4, 4)") for n in entry["notes"]), \
        entry["notes"]


def test_a_name_inside_a_helper_defined_in_the_constructor_is_the_helper_s_own():
    """``Scale(c_hidden, c_cond)`` inside ``get_block(c_hidden)``: that c_hidden is the helper's
    parameter (one width), not the constructor's list of widths of the same name."""
    from shapetrace.drive.builtby import passed_for

    model = _data_module("nested_scope", "model")
    found = passed_for(model.Scale, "c")
    assert found is None or not isinstance(found.value, list), found


def test_a_subclass_handing_its_keywords_to_a_base_of_the_project_is_built_through_it():
    """Only torch's own layers are built with their base's arguments directly: a base of the
    project's is read where the subclass hands it what it sets itself (``causal=False``)."""
    entry = _targets(DATA / "configs_by_use" / "forwarding.py")["Encoder"]
    assert entry["error"] is None, entry["error"]


def test_a_module_argument_the_project_builds_as_one_of_torch_s_layers():
    entry = _targets(DATA / "configs_by_use" / "adaptive.py")["AdaptiveNorm"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("norm built as adaptive.py:22 builds it: LayerNorm(...)")
               for n in entry["notes"]), entry["notes"]


def test_a_size_handed_to_a_layer_with_a_few_more_keeps_its_meaning(forecast):
    """``nn.Embedding(num_classes + use_null, hidden_size)``: num_classes is a vocabulary."""
    entry = forecast["ClassEmbedder"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry


def test_a_constructor_argument_only_ever_tested_is_a_switch_turned_on(forecast):
    entry = forecast["ModulatedBlock"]
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("adaLN set True") for n in entry["notes"]), entry["notes"]


def test_an_argument_read_as_a_number_too_is_no_switch():
    from shapetrace.analysis.code import only_switched

    forecast = _forecast_module()
    assert only_switched(forecast.ModulatedBlock, "adaLN")
    assert not only_switched(forecast.ClassEmbedder, "dropout_prob")  # compared with 0
    assert not only_switched(forecast.ModulatedBlock, "dim")
    assert not only_switched(_OnlyKept, "flag")  # kept and never read: says nothing


class _OnlyKept(nn.Module):
    def __init__(self, flag):
        super().__init__()
        self.flag = flag


def test_a_name_inside_a_lambda_without_parameters_is_the_constructor_s():
    """``get_ff = lambda: Chunked(ff_chunks, ...)``: ff_chunks is the constructor's (default 1)."""
    from shapetrace.drive.builtby import passed_for

    model = _data_module("nested_scope", "model")
    found = passed_for(model.Chunked, "chunks")
    assert found is not None and found.value == 1, found


def test_a_torch_layer_the_project_builds_keeps_the_layout_its_call_writes_out():
    """``nn.Transformer(..., batch_first=True)`` built at the probe sizes stays batch-first:
    built sequence-first, source and target of different lengths would fail as the guess's
    op-failed, a false alarm."""
    (entry,) = _targets(DATA / "configs_by_use" / "adaptive.py", "--no-own-calls",
                        cls="Seq2Seq").values()
    assert entry["error"] is None and entry["diagnostics"] == [], entry


def test_a_notebook_s_own_version_of_a_class_does_not_build_the_module_s():
    """chapter.ipynb defines Wrapper itself (batch-first) and builds it with a batch-first
    transformer; seq_model.py's Wrapper takes the transformer sequence-first. The notebook's call
    says which class the argument is (a torch transformer), not the layout its own version is
    written for: built with torch's defaults, the module's Wrapper runs and is clean."""
    (entry,) = _targets(DATA / "notebook_versions" / "seq_model.py", "--no-own-calls",
                        cls="Wrapper").values()
    assert entry["error"] is None and entry["diagnostics"] == [], entry
    assert any(n.startswith("transformer built as chapter.ipynb") for n in entry["notes"])


def test_an_argument_the_class_calls_is_no_config_of_fields():
    from shapetrace.drive.config_fields import called

    seq_model = _data_module("notebook_versions", "seq_model")
    assert called(seq_model.Wrapper, "transformer")  # self.transf(src, tgt)
    assert not called(seq_model.Wrapper, "n_features")


def test_config_fields_bound_to_names_of_their_own_are_read_by_those_names():
    module = _data_module("configs_by_use", "aliased")
    fields = fields_read(module.SuffixedEncoder, "hp")
    assert fields["width_enc"].uses == {"C"}  # n_embd = hp.width_enc
    assert "layers" in fields["blocks_enc"].uses  # self.depth = hp.blocks_enc; range(self.depth)
    assert fields["aux_layers"].sequence  # len(hp.aux_layers)
    dims = {"C": 143, "H": 11, "d": 13, "T": 7, "B": 5}
    assert value_by_use(fields["width_enc"], dims, "width_enc") == 143
    assert value_by_use(fields["blocks_enc"], dims, "blocks_enc") == 2
    assert value_by_use(fields["aux_layers"], dims, "aux_layers") == []


def test_a_namespace_of_unnamed_fields_is_built_from_their_names_and_the_module_checked():
    found = _targets(DATA / "configs_by_use" / "aliased.py", cls="SuffixedEncoder")["SuffixedEncoder"]
    assert found.get("error") is None, found.get("error")
    assert not [d for d in found["diagnostics"] if d["severity"] == "error"], found["diagnostics"]


def test_a_rate_handed_to_layers_whose_defaults_disagree_is_the_least_of_them():
    fields = fields_read(_data_module("configs_by_use", "aliased").RatedBlock, "hp")
    assert sorted(fields["rate"].handed_defaults) == [0.0, 0.5]
    assert value_by_use(fields["rate"], {"C": 143, "H": 11}, "rate") == 0.0
