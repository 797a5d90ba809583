"""Inputs read from torch's own layers that forward hands them to: a key padding mask handed to
``nn.TransformerEncoderLayer`` or ``nn.MultiheadAttention`` is (B, T) bool, True where a key is
padding; a sequence handed to them as ``query``, ``key``, ``value``, ``src``, ``tgt`` or
``memory`` is (B, T, C) where the layer was built ``batch_first=True``, else (T, B, C), as torch
documents them (keys of a length of their own, S, unless the queries are handed as them too)."""

from __future__ import annotations

import ast
import inspect

from ..base.specs import InputSpec
from .input_reads import _built_in, _init_bodies, _self_attribute, _self_calls, _torch_layers_built
from .usage import _function_def, _tree


#: the padding masks torch's attention layers take, by their parameter's name: (B, source
#: length), True where a key is padding (the documented meaning)
_TORCH_PADDING = {"key_padding_mask": "S", "src_key_padding_mask": "T",
                  "tgt_key_padding_mask": "T", "memory_key_padding_mask": "S"}


def spec_by_torch_layer(name: str, forward, owner: type | None) -> InputSpec | None:
    """The input ``name`` read from the parameter of a torch layer forward hands it to
    (``self.encoder_layer(e, self.mask, padding_mask)``, the layer built as
    ``nn.TransformerEncoderLayer(...)``): a key padding mask is (B, T) bool, True where a key
    is padding, as torch documents it (the keys are the queries' own sequence when the call
    hands one tensor as both). None for anything else."""
    import torch.nn as nn

    body = _function_def(_tree(getattr(forward, "__func__", forward)), "forward")
    bodies = _init_bodies(owner)
    if body is None or not bodies:
        return None
    built = _built_in(bodies, _torch_layers_built)
    calls = _built_in(bodies, lambda b: dict(_self_calls(b)))
    for node in ast.walk(body):
        attr = _self_attribute(node.func) if isinstance(node, ast.Call) else None
        layer = getattr(nn, built.get(attr, ""), None) if attr else None
        if not (isinstance(layer, type) and issubclass(layer, nn.Module)):
            continue
        try:
            params = [q for q in inspect.signature(layer.forward).parameters if q != "self"]
        except (TypeError, ValueError):
            continue
        there = next((params[i] for i, a in enumerate(node.args)
                      if isinstance(a, ast.Name) and a.id == name and i < len(params)), None) \
            or next((k.arg for k in node.keywords if isinstance(k.value, ast.Name)
                     and k.value.id == name), None)
        length = _TORCH_PADDING.get(there or "")
        if length is None:
            sequence = _sequence_of(there, node, name, calls.get(attr))
            if sequence is not None:
                return sequence
            continue
        same = len(node.args) >= 2 and ast.dump(node.args[0]) == ast.dump(node.args[1])
        return InputSpec(name, ("B", "T" if length == "T" or same else "S"), "bool", mask="drop")
    return None


#: the sequences torch's attention layers take, by parameter: the queries' (T) or another (S)
_TORCH_SEQUENCES = {"query": "T", "key": "S", "value": "S", "src": "T", "tgt": "T", "memory": "S"}


def _sequence_of(there: str | None, call: ast.Call, name: str, built: ast.Call | None) -> InputSpec | None:
    """The input ``name`` handed to torch's attention layer as its sequence ``there``
    (``self.attn(dec_inp, enc_inp, enc_inp)``): (B, T, C) with ``batch_first=True`` where the
    layer was built, else (T, B, C), as torch documents them; keys and values the queries' own
    length when the call hands the queries as them too. None when the layer's ``batch_first``
    is not a constant."""
    length = _TORCH_SEQUENCES.get(there or "")
    if length is None or built is None:
        return None
    flag = next((k.value for k in built.keywords if k.arg == "batch_first"), ast.Constant(False))
    if not isinstance(flag, ast.Constant) or not isinstance(flag.value, bool):
        return None
    first = call.args[0] if call.args else None
    if length == "S" and isinstance(first, ast.Name) and first.id == name:
        length = "T"
    return InputSpec(name, ("B", length, "C") if flag.value else (length, "B", "C"))
