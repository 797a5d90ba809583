"""Repository idioms read as their code means them: a config field the code asks ``hasattr``
of, or reads with a default the code computes, is left out of the config shapetrace makes (so
a causal mask it would widen stays causal, and the code's own head size stands),
and a base class whose forward only raises NotImplementedError, implemented by its subclasses
in the file, is not a target of its own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import shapetrace as st
from shapetrace.drive.targets import resolve_targets
from shapetrace.drive.config_fields import fields_read

DATA = Path(__file__).parent / "data" / "repo_readings"
ROOT = Path(__file__).parent.parent


def test_a_field_asked_hasattr_of_is_left_out_of_the_config():
    (target,) = resolve_targets(f"{DATA / 'prefix_gpt.py'}::PrefixCausalAttention", root=ROOT)
    assert "n_prefix" not in fields_read(target.cls, "config")
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is None and not result.diagnostics, result.diagnostics
    # the field matters: given, its prefix sees its own future, which the causal check finds
    config = SimpleNamespace(n_head=11, n_embd=143, block_size=23, n_prefix=4)
    given = st.check(target.cls, init={"config": config}, target=target.display).targets[0]
    assert [d.rule for d in given.diagnostics if d.severity == "error"] == ["causal-leak"]


def test_a_field_read_with_a_computed_default_is_left_to_the_code():
    """``getattr(config, "attention_head_size", hidden // heads)``: left out of the config made,
    so the code's own head size stands (a None there would fail the constructor)."""
    (target,) = resolve_targets(f"{DATA / 'own_head_size.py'}::OwnHeadSizeAttention", root=ROOT)
    assert "attention_head_size" not in fields_read(target.cls, "config")
    assert {"num_attention_heads", "hidden_size"} <= set(fields_read(target.cls, "config"))
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is None and not [d for d in result.diagnostics if d.severity != "info"]


def test_a_constructor_argument_never_read_is_none():
    (target,) = resolve_targets(f"{DATA / 'unread_argument.py'}::SharedConfigEncoder", root=ROOT)
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is None and not [d for d in result.diagnostics if d.severity != "info"]
    assert any(n.startswith("out_ch=None: its constructor never reads it") for n in result.notes)


def test_an_abstract_base_is_left_out_and_can_still_be_named():
    targets = resolve_targets(str(DATA / "backbones.py"), root=ROOT)
    assert [t.display.split("::")[-1] for t in targets] == ["MlpBackbone"]
    (base,) = resolve_targets(f"{DATA / 'backbones.py'}::Backbone", root=ROOT)
    assert base.cls.__name__ == "Backbone"
