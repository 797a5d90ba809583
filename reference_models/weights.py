"""Copy attention weights between the multi-head layouts, so their outputs can be compared.

All the multi-head variants compute the same function; they only store the weights
differently. Every layout is read into one canonical form, ``AttentionWeights``: full (C x C)
query, key, value and output matrices in ``nn.Linear`` orientation (out_features x in_features),
with head h owning rows ``h*d : (h+1)*d`` of the query, key and value matrices. That row order
is the one ``view(B, T, H, d)`` produces, so it is the natural order of every layout:

==============================  ===============================================================
layout                          where the weights live
==============================  ===============================================================
per-head list (m05)             ``heads[h].query/key/value`` (d x C each), ``proj``
weight splits (m06, m08-m10)    ``query``, ``key``, ``value`` (C x C each), ``proj``
fused (m07, nanoGPT)            ``qkv`` (3C x C: q rows, then k, then v), ``proj``
``torch.nn.MultiheadAttention`` ``in_proj_weight`` (3C x C, like fused), ``out_proj``
single head (m03, m04)          ``query``, ``key``, ``value`` (d x C each), no output projection
==============================  ===============================================================

Example: ``copy_attention_weights(MultiHeadAttentionWrapper(8, 2), FusedQKVAttention(8, 2, 16))``
gives the fused module the wrapper's weights; both now return the same outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
from torch import Tensor


@dataclass
class AttentionWeights:
    """Query/key/value/output weights and biases in one canonical, layout-free form."""

    q: Tensor
    k: Tensor
    v: Tensor
    out: Tensor | None = None
    q_bias: Tensor | None = None
    k_bias: Tensor | None = None
    v_bias: Tensor | None = None
    out_bias: Tensor | None = None


def _bias(linear: nn.Linear) -> Tensor | None:
    return None if linear.bias is None else linear.bias.detach()


def _cat_biases(linears) -> Tensor | None:
    biases = [_bias(lin) for lin in linears]
    return None if any(b is None for b in biases) else torch.cat(biases)


def attention_weights(module: nn.Module) -> AttentionWeights:
    """Read the weights of any supported layout (see the module docstring)."""
    if isinstance(module, nn.MultiheadAttention):
        if not module._qkv_same_embed_dim:
            raise ValueError("nn.MultiheadAttention with kdim/vdim != embed_dim is not supported")
        q, k, v = module.in_proj_weight.detach().chunk(3)
        qb = kb = vb = None
        if module.in_proj_bias is not None:
            qb, kb, vb = module.in_proj_bias.detach().chunk(3)
        return AttentionWeights(q, k, v, module.out_proj.weight.detach(), qb, kb, vb,
                                _bias(module.out_proj))
    proj = getattr(module, "proj", None)
    out, out_bias = (None, None) if proj is None else (proj.weight.detach(), _bias(proj))
    if hasattr(module, "heads"):
        heads = list(module.heads)
        return AttentionWeights(
            torch.cat([h.query.weight.detach() for h in heads]),
            torch.cat([h.key.weight.detach() for h in heads]),
            torch.cat([h.value.weight.detach() for h in heads]),
            out,
            _cat_biases(h.query for h in heads),
            _cat_biases(h.key for h in heads),
            _cat_biases(h.value for h in heads),
            out_bias,
        )
    if hasattr(module, "qkv"):
        q, k, v = module.qkv.weight.detach().chunk(3)
        qb = kb = vb = None
        if module.qkv.bias is not None:
            qb, kb, vb = module.qkv.bias.detach().chunk(3)
        return AttentionWeights(q, k, v, out, qb, kb, vb, out_bias)
    if all(hasattr(module, name) for name in ("query", "key", "value")):
        return AttentionWeights(
            module.query.weight.detach(), module.key.weight.detach(), module.value.weight.detach(),
            out, _bias(module.query), _bias(module.key), _bias(module.value), out_bias,
        )
    raise TypeError(f"{type(module).__name__} is not a supported attention layout")


def _set(param: Tensor | None, value: Tensor | None, what: str) -> None:
    """Copy ``value`` into ``param``; a bias missing on either side must be, or becomes, zero."""
    if value is None:
        if param is None:
            return
        if not what.endswith("bias"):
            raise ValueError(f"{what}: the source has no such weight")
        param.zero_()
        return
    if param is None:
        if bool(value.any()):
            raise ValueError(f"{what}: the source has a non-zero bias but the target has none "
                             f"(build it with bias=True)")
        return
    if param.shape != value.shape:
        raise ValueError(f"{what}: shape {tuple(value.shape)} does not fit {tuple(param.shape)}")
    param.copy_(value)


def load_attention_weights(module: nn.Module, w: AttentionWeights) -> None:
    """Write canonical weights into any supported layout, in place."""
    with torch.no_grad():
        if isinstance(module, nn.MultiheadAttention):
            _set(module.in_proj_weight, torch.cat([w.q, w.k, w.v]), "in_proj_weight")
            biases = (w.q_bias, w.k_bias, w.v_bias)
            fused = None if any(b is None for b in biases) else torch.cat(biases)
            _set(module.in_proj_bias, fused, "in_proj_bias")
            _set(module.out_proj.weight, w.out, "out_proj.weight")
            _set(module.out_proj.bias, w.out_bias, "out_proj.bias")
            return
        proj = getattr(module, "proj", None)
        if proj is not None:
            _set(proj.weight, w.out, "proj.weight")
            _set(proj.bias, w.out_bias, "proj.bias")
        if hasattr(module, "heads"):
            heads = list(module.heads)
            for name in ("query", "key", "value"):
                weight = getattr(w, name[0])
                bias = getattr(w, f"{name[0]}_bias")
                rows = weight.shape[0] // len(heads)
                for h, head in enumerate(heads):
                    part = slice(h * rows, (h + 1) * rows)
                    _set(getattr(head, name).weight, weight[part], f"heads.{h}.{name}.weight")
                    _set(getattr(head, name).bias, None if bias is None else bias[part],
                         f"heads.{h}.{name}.bias")
        elif hasattr(module, "qkv"):
            _set(module.qkv.weight, torch.cat([w.q, w.k, w.v]), "qkv.weight")
            biases = (w.q_bias, w.k_bias, w.v_bias)
            _set(module.qkv.bias, None if any(b is None for b in biases) else torch.cat(biases),
                 "qkv.bias")
        elif all(hasattr(module, name) for name in ("query", "key", "value")):
            for name in ("query", "key", "value"):
                _set(getattr(module, name).weight, getattr(w, name[0]), f"{name}.weight")
                _set(getattr(module, name).bias, getattr(w, f"{name[0]}_bias"), f"{name}.bias")
        else:
            raise TypeError(f"{type(module).__name__} is not a supported attention layout")


def copy_attention_weights(src: nn.Module, dst: nn.Module) -> None:
    """Give ``dst`` the weights of ``src`` (any two supported layouts of the same sizes)."""
    load_attention_weights(dst, attention_weights(src))
