"""Whether a module takes images or signals, channels first, and what a failed run says of it.

Inputs guessed from parameter names are vectors, (B, T, C). A module whose code reads images
(a 2-D convolution or norm first, ``B, C, H, W = x.shape``) or 1-D signals (a ``Conv1d`` first,
channels on axis 1) is fed them instead: :func:`takes_images`, :func:`takes_videos` and
:func:`first_channels` read the module; :func:`signal_refused`, :func:`moved_refused` and
:func:`signal_reading` read a run that failed on vectors. Split from ``layout``, which reads
which axis is the batch and which the sequence.
"""

from __future__ import annotations

import dataclasses
import re


def takes_images(model) -> bool:
    """Whether ``model`` works on images: it holds a 2-D convolution, pooling or norm, a layer
    that cuts an image into patches (``nn.Unfold``), or a parameter shaped for one
    (``(1, C, 1, 1)``)."""
    import torch.nn as nn

    if model is None:
        return False
    image_layers = (nn.Conv2d, nn.BatchNorm2d, nn.InstanceNorm2d, nn.MaxPool2d, nn.AvgPool2d,
                    nn.AdaptiveAvgPool2d, nn.AdaptiveMaxPool2d, nn.PixelShuffle, nn.Upsample,
                    nn.Unfold)
    if any(isinstance(m, image_layers) for m in model.modules()):
        return True
    return any(p.dim() == 4 and p.shape[0] == 1 and p.shape[-1] == 1 and p.shape[-2] == 1
               for p in model.parameters())


def takes_videos(model) -> bool:
    """Whether ``model`` works on videos or volumes (B, C, T, H, W): it holds a 3-D
    convolution, pooling or norm, or a parameter shaped for one (``(1, C, 1, 1, 1)``)."""
    import torch.nn as nn

    if model is None:
        return False
    video_layers = (nn.Conv3d, nn.ConvTranspose3d, nn.BatchNorm3d, nn.InstanceNorm3d,
                    nn.MaxPool3d, nn.AvgPool3d, nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool3d)
    if any(isinstance(m, video_layers) for m in model.modules()):
        return True
    return any(p.dim() == 5 and p.shape[0] == 1 and all(n == 1 for n in p.shape[2:])
               for p in model.parameters())


def first_channels(model, video: bool = False) -> int | None:
    """The input channels of the first 2-D convolution (or 2-D norm) of ``model`` (3-D for a
    ``video``), or of the first linear layer after an ``nn.Unfold`` (which hands it channels x
    kernel area)."""
    import math

    import torch.nn as nn

    conv, norms = (nn.Conv3d, (nn.BatchNorm3d, nn.InstanceNorm3d, nn.GroupNorm)) if video \
        else (nn.Conv2d, (nn.BatchNorm2d, nn.InstanceNorm2d, nn.GroupNorm))
    area = None  # the kernel area of an nn.Unfold met, until the layer after it
    for sub in model.modules() if model is not None else ():
        if isinstance(sub, conv):
            return sub.in_channels
        if isinstance(sub, norms):
            return getattr(sub, "num_features", None) or getattr(sub, "num_channels", None)
        if isinstance(sub, nn.Unfold):
            size = sub.kernel_size
            area = math.prod(size) if isinstance(size, (tuple, list)) else size * size
        elif area is not None and isinstance(sub, nn.Linear):
            return sub.in_features // area if sub.in_features % area == 0 else None
    return None


#: the ops a (B, C, T) signal meets first
SIGNAL_OPS = frozenset({"F.conv1d", "torch.conv1d", "F.max_pool1d", "F.avg_pool1d",
                        "F.conv_transpose1d", "torch.conv_transpose1d",
                        # norms over the channels of axis 1: (N, C, L), never (N, L, C)
                        "F.group_norm", "torch.group_norm", "F.batch_norm", "torch.batch_norm",
                        "F.instance_norm", "torch.instance_norm"})


def signal_refused(failed, names: tuple[str, ...]) -> bool:
    """Whether a 1-D convolution (a pooling, a norm over the channels of axis 1) failed on a
    tensor of the shape of a vector guess of ``names`` (B, T, C): the input itself, made from
    it elementwise (an activation), or reshaped to its own shape; or an elementwise op where
    such a tensor met a per-channel scale or shift of shape (1, C, 1)."""
    import torch

    op = failed.failed_op
    if op is None:  # a norm module's own check, before its op: ``InstanceNorm1d(C)`` given (B, T, C)
        found = _FEATURES.search(str(failed.raised)) if failed.raised is not None else None
        return found is not None and any(
            a.dim() == 3 and a.shape[1] == int(found.group(2)) and a.shape[2] == int(found.group(1))
            for a, n in zip(failed.args, failed.names) if n in names and isinstance(a, torch.Tensor))
    if op.op not in SIGNAL_OPS | _ELEMENTWISE:
        return False
    if "norm" in op.op and failed.model is not None and takes_images(failed.model):
        return False  # a norm of an image block: the image reading is the one to try
    shapes = {tuple(a.shape) for a, n in zip(failed.args, failed.names)
              if n in names and isinstance(a, torch.Tensor) and a.dim() == 3}
    if op.op in _ELEMENTWISE:  # a scale or shift of the module's own, (1, C, 1): channels on axis 1
        return any(tuple(m.shape) in shapes for m in op.inputs) and any(
            len(m.shape) == 3 and m.shape[0] == m.shape[2] == 1 and m.shape[1] > 1
            and any(m.shape[1] == s[2] != s[1] for s in shapes) for m in op.inputs)
    if any(tuple(m.shape) in shapes for m in op.inputs):
        return True
    # padded along its last axis first (F.pad(x, [1, 1]) before a convolution): (B, T, C + 2)
    return op.op not in _SIGNAL_NORMS and bool(op.inputs) and len(op.inputs[0].shape) == 3 \
        and tuple(op.inputs[0].shape[:2]) in {s[:2] for s in shapes} \
        and failed.raised is not None and "channels" in str(failed.raised)


#: what a 1-D norm module says of an input whose axis 1 is not its features
_FEATURES = re.compile(r"expected input's size at dim=1 to match num_features \((\d+)\), but got: (\d+)")
#: elementwise ops where a per-channel scale or shift of shape (1, C, 1) meets the data
_ELEMENTWISE = frozenset({"Tensor.mul", "torch.mul", "Tensor.add", "torch.add", "Tensor.sub",
                          "torch.sub", "Tensor.div", "torch.div", "*", "+", "-", "/"})
#: norms over axis 1 among SIGNAL_OPS
_SIGNAL_NORMS = frozenset(o for o in SIGNAL_OPS if "norm" in o)
#: ops that read features on the last axis
LAST_AXIS_OPS = frozenset({"F.layer_norm", "torch.layer_norm", "F.rms_norm", "torch.rms_norm",
                           "F.linear", "torch._C._nn.linear"})


def moved_refused(failed, names: tuple[str, ...]) -> bool:
    """Whether an op that reads features on the last axis failed on a vector guess of ``names``
    (B, T, C) that forward moved to (B, C, T) first (``x.transpose(1, -1)``): code that moves
    its input's axis 1 last before a norm takes channels first."""
    import torch

    op = failed.failed_op
    if op is None or op.op not in LAST_AXIS_OPS:
        return False
    swapped = {(a.shape[0], a.shape[2], a.shape[1]) for a, n in zip(failed.args, failed.names)
               if n in names and isinstance(a, torch.Tensor) and a.dim() == 3 and a.shape[1] != a.shape[2]}
    return bool(op.inputs) and tuple(op.inputs[0].shape) in swapped


def signal_reading(inputs: tuple, failed, names: tuple[str, ...]):
    """``(inputs, note)`` with ``names`` read as signals (B, C, T), channels first, the channels
    the 1-D convolution that refused them takes, when a vector guess (B, T, C) failed there or
    at a norm forward moved its axis 1 last for; masks multiplied into them follow. None
    otherwise."""
    from ..base.specs import InputSpec

    op = failed.failed_op
    if not (signal_refused(failed, names) or moved_refused(failed, names)) or failed.model is None:
        return None
    channels = next(filter(None, map(_channels_of, failed.model.modules())), None)
    read = tuple(InputSpec(s.name, ("B", channels or "C", s.dims[1]))
                 if isinstance(s, InputSpec) and s.name in names and len(s.dims) == 3
                 else _channels_first_mask(s) for s in inputs)
    if op is None:
        why = "as its norm of the channels of axis 1 takes"
    elif op.op in SIGNAL_OPS:
        why = f"as the {'norm' if 'norm' in op.op else '1-D convolution'} {op.op} takes"
    elif op.op in _ELEMENTWISE:
        why = f"as a scale or shift of its own per channel, (1, C, 1), meets it at {op.op}"
    else:
        why = f"as forward moves axis 1 last for {op.op}"
    moved = [s.name for s in inputs if isinstance(s, InputSpec) and s.name in names and len(s.dims) == 3] \
        or list(names)
    return read, (f"{', '.join(moved)} read as (B, {channels or 'C'}, T), channels first, {why}: "
                  f"as (B, T, C) it did not fit; give --input {moved[0]}=B,C,T to choose")


def _channels_first_mask(spec):
    """A mask multiplied into values read as (B, T, C), (B, T, 1), as they are read channels
    first: (B, 1, T); any other input as it is."""
    if getattr(spec, "mask", None) == "mul" and tuple(spec.dims) == ("B", "T", 1):
        return dataclasses.replace(spec, dims=("B", 1, "T"))
    return spec


def _channels_of(module) -> int | None:
    """The channels a layer that takes (N, C, L) signals takes, or None for another layer."""
    import torch.nn as nn

    if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)):
        return module.in_channels
    if isinstance(module, nn.GroupNorm):
        return module.num_channels
    if isinstance(module, (nn.BatchNorm1d, nn.InstanceNorm1d)):
        return module.num_features
    return None
