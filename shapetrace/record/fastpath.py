"""PyTorch's fused fast path, which a trace switches off.

In eval mode without gradients, ``nn.TransformerEncoderLayer`` (and so ``nn.TransformerEncoder``)
and ``nn.MultiheadAttention`` run one fused kernel instead of their standard ops, and with a
padding mask ``nn.TransformerEncoder`` runs on nested tensors. Torch takes that path only when
no ``__torch_function__`` mode is active, so under a trace these modules run the standard path:
their outputs differ from an untraced run's by float rounding (about 1e-6), and at padded
positions entirely. The trace must see the ops, so it cannot be otherwise; :class:`FastPathWatch`
notes the calls in which torch would have taken the fast path (its own conditions, checked from
the module and the call) so that the report can say so in one line.
"""

from __future__ import annotations

import torch
from torch import nn

from ..base.compat import own_hook_count, same_qkv_width

_DEVICES = ("cpu", "cuda")


class FastPathWatch:
    """While entered, notes each call of an encoder layer or a multi-head attention of ``model``
    that would have run PyTorch's fast path without the trace; :attr:`note` says which."""

    def __init__(self, model):
        self.model = model if isinstance(model, nn.Module) else None
        self.hits: dict[int, nn.Module] = {}
        self._handles = []

    def __enter__(self) -> "FastPathWatch":
        if self.model is None:
            return self
        for module in self.model.modules():
            check = _CHECKS.get(type(module))
            if check is not None:
                self._handles.append(module.register_forward_pre_hook(
                    self._hook(check), with_kwargs=True))
        return self

    def __exit__(self, *exc_info) -> bool:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        return False

    def _hook(self, check):
        def hook(module, args, kwargs):
            try:
                if check(module, args, kwargs):
                    self.hits[id(module)] = module
            except Exception:  # noqa: BLE001 - a note is never worth a failed trace
                pass
            return None

        return hook

    @property
    def note(self) -> str | None:
        if not self.hits or self.model is None:
            return None
        names = {id(m): name for name, m in self.model.named_modules()}
        shown: dict[str, list[str]] = {}
        layers = [names[i] for i, m in self.hits.items() if isinstance(m, nn.TransformerEncoderLayer)]
        for i, module in self.hits.items():
            path = names.get(i, "")
            if isinstance(module, nn.MultiheadAttention) and any(
                    path.startswith(f"{layer}.") or layer == "" for layer in layers):
                continue  # inside a layer already named: its fast path covers the attention too
            shown.setdefault(f"nn.{type(module).__name__}", []).append(path or "the model")
        which = " and ".join(f"{kind} ({', '.join(paths)})" for kind, paths in shown.items())
        return (f"{which} ran the standard path, not PyTorch's fused fast path, which a trace "
                f"switches off: their outputs can differ from an untraced run's by float rounding "
                f"(about 1e-6), and at padded positions entirely")


def _common(tensors) -> bool:
    """The conditions both modules share: fast path enabled, no autocast, tensors on the CPU or
    a GPU, and no gradient needed."""
    if not torch.backends.mha.get_fastpath_enabled() or torch.is_autocast_enabled():
        return False
    if not all(isinstance(t, torch.Tensor) and t.device.type in _DEVICES for t in tensors):
        return False
    return not (torch.is_grad_enabled() and any(t.requires_grad for t in tensors))


def _arg(args, kwargs, index: int, name: str):
    return args[index] if len(args) > index else kwargs.get(name)


def _encoder_layer(layer: nn.TransformerEncoderLayer, args, kwargs) -> bool:
    """``nn.TransformerEncoderLayer.forward``'s fast-path conditions."""
    src = _arg(args, kwargs, 0, "src")
    attn = layer.self_attn
    if not isinstance(src, torch.Tensor) or src.dim() != 3 or src.is_nested or layer.training:
        return False
    if not attn.batch_first or attn.in_proj_bias is None or not same_qkv_width(attn):
        return False
    if not getattr(layer, "activation_relu_or_gelu", False) or layer.norm1.eps != layer.norm2.eps:
        return False
    if attn.num_heads % 2:
        return False
    hooks = sum(own_hook_count(m) for m in layer.modules())
    if hooks > _watch_hooks(layer):
        return False  # the user's own hooks: torch takes the standard path anyway
    params = (attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
              layer.norm1.weight, layer.norm1.bias, layer.norm2.weight, layer.norm2.bias,
              layer.linear1.weight, layer.linear1.bias, layer.linear2.weight, layer.linear2.bias)
    return _common((src, *params))


def _watch_hooks(layer: nn.Module) -> int:
    """The watch's own hooks inside ``layer``: one on it and one on each attention it holds."""
    return sum(1 for m in layer.modules() if type(m) in _CHECKS)


def _attention(attn: nn.MultiheadAttention, args, kwargs) -> bool:
    """``nn.MultiheadAttention.forward``'s fast-path conditions (self-attention only)."""
    query, key, value = (_arg(args, kwargs, i, n) for i, n in enumerate(("query", "key", "value")))
    for mask in (_arg(args, kwargs, 3, "key_padding_mask"), _arg(args, kwargs, 5, "attn_mask")):
        if isinstance(mask, torch.Tensor) and torch.is_floating_point(mask):
            return False
    if not isinstance(query, torch.Tensor) or query.dim() != 3 or not (query is key is value):
        return False
    if attn.in_proj_weight is None or query.dtype != attn.in_proj_weight.dtype:
        return False
    if attn.in_proj_bias is not None and query.dtype != attn.in_proj_bias.dtype:
        return False
    if attn.training or attn.num_heads % 2 or not attn.batch_first or attn.add_zero_attn:
        return False
    if attn.bias_k is not None or attn.bias_v is not None or not same_qkv_width(attn):
        return False
    if query.is_nested:
        return False
    return _common((query, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                          attn.out_proj.bias))


_CHECKS = {nn.TransformerEncoderLayer: _encoder_layer, nn.MultiheadAttention: _attention}
