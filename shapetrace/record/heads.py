"""One head of each attention's weights, kept while the values exist, for the report's heatmaps.

An observer of the recorder (``Recorder(observer=...)``): the plugin and ``check()`` keep the
weights of sample 0, head 0 of the first call of each attention, as rows of floats.
"""

from __future__ import annotations

import math

import torch

from ..base.compat import disable_torch_function
from ..base.ops import SDPA, SOFTMAXES
from ..base.records import OpRecord
from .probes import readable

Tensor = torch.Tensor


#: The most positions a kept head of attention weights has along each of its two axes.
HEAD_LIMIT = 32


def head_keeper(heads: dict[int, list], limit: int | None = None):
    """An observer (``Recorder(observer=...)``) that keeps one head of each attention's weights
    (:func:`head_weights`) in ``heads``, by record index, for the report's heatmaps: the first
    call of each attention (module and line; a loop runs it again), at most ``limit`` of them."""
    seen: set = set()

    def keep(rec, outs, args, kwargs) -> None:
        if rec.op in SOFTMAXES or rec.op == SDPA:
            site = rec.site  # its code by identity: code objects of two files compare equal
            key = (rec.module, site and (id(site[0]), site[1]))
            if key in seen or (limit is not None and len(heads) >= limit):
                return
            weights = head_weights(rec, outs, args, kwargs)
            if weights is not None:
                seen.add(key)
                heads[rec.index] = weights

    return keep


def head_weights(rec: OpRecord, outs, args, kwargs) -> list[list[float]] | None:
    """One head's attention weights, for the report's heatmap: a softmax's output, or the weights
    inside ``F.scaled_dot_product_attention``, at the first index of every axis but the last two
    (sample 0, head 0), as rows of floats (a few hundred at the probe sizes). Weights a mask
    removed are exactly 0. None for an op that is neither, or without values (fake)."""
    with disable_torch_function():
        try:
            if rec.op in SOFTMAXES and outs:
                weights = _first_head(outs[0])
            elif rec.op == SDPA:
                weights = _sdpa_head(args, kwargs)
            else:
                return None
            if weights is None or weights.ndim != 2:
                return None
            weights = weights[:HEAD_LIMIT, :HEAD_LIMIT].detach().double()
            return [[round(v, 4) for v in row] for row in weights.tolist()]
        except Exception:  # under a functorch transform, or a tensor subclass without values
            return None


def _first_head(t: Tensor) -> Tensor | None:
    if not isinstance(t, Tensor) or t.ndim < 2 or not readable(t):
        return None
    return t[(0,) * (t.ndim - 2)]


def _sdpa_head(args, kwargs) -> Tensor | None:
    """The weights ``scaled_dot_product_attention`` computed for head 0 of sample 0."""
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale")
    call = dict(zip(names, args))
    call.update(kwargs)
    q, k = call.get("query"), call.get("key")
    if not isinstance(q, Tensor) or not isinstance(k, Tensor) or not readable(q) \
            or not readable(k) or q.ndim < 2 or k.ndim != q.ndim:
        return None
    q, k = _first_head(q).double(), _first_head(k).double()
    scale = call.get("scale")
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(0, 1) * scale
    mask = call.get("attn_mask")
    if isinstance(mask, Tensor):
        full = mask.expand(*call["query"].shape[:-2], *scores.shape) if mask.ndim >= 2 \
            else mask.expand(*scores.shape)
        mask = _first_head(full)
        scores = scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool \
            else scores + mask.double()
    if call.get("is_causal"):
        keep = torch.ones(scores.shape, dtype=torch.bool).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    return torch.softmax(scores, dim=-1)
