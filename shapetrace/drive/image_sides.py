"""Inputs read as images, and an image read at a side too small for the module's own
downsampling.

An input guessed from its name as vectors (B, T, C) may be an image: a forward that unpacks four
sizes from it or hands it to a 2-D convolution says so (:class:`ImageInputs`). It is read with
its channels first (B, C, H, W), the channels its first convolution takes; when no layer takes
channels first, also with them last (B, H, W, C), the grid of vectors of a block that applies
its linear layers at every position.

An input read as an image is made at a side of shapetrace's (:data:`IMAGE_SIDE`, or what the
constructor says). A module that halves it four times and then takes a 5x5 kernel, or that
flattens a grid of a fixed size into a linear layer (``nn.Linear(hidden * 13 * 13, ...)``),
cannot run on it: the size, not a bug. When the forward on the image fails, larger sides are
tried in turn; one that runs stands, with a note.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass


from ..base.names import IMAGE_SIZES, PATCH_SIZES, dim_of_word, unprefixed
from ..base.specs import InputSpec
from .config_fields import config_values
from .guess import Guess
from .signals import (first_channels, moved_refused, signal_reading, signal_refused, takes_images,
                      takes_videos)

#: the height and width of an image read from a vector guess: divisible by 2, 4 and 8 (pooling,
#: patches), and no probe size
IMAGE_SIDE = 8


def image_side(init: dict) -> int:
    """The side of an image read from a vector guess: the constructor's own image size
    (``img_size=16``, ``image_size=(32, 32)``, a block's ``input_resolution``), else a
    multiple of its patch size, else
    :data:`IMAGE_SIDE`. A config object's fields count (``cfg.vit_img_size``)."""
    init = {**{unprefixed(k) or k: v for c in init.values() for k, v in config_values(c, settings=True).items()}, **init}
    for name in (*IMAGE_SIZES, "input_resolution"):  # a block's grid of feature positions last
        value = init.get(name)
        if isinstance(value, (tuple, list)) and value and isinstance(value[0], int):
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 512:
            return value
    for name in PATCH_SIZES:
        value = init.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 64:
            return 2 * value
    return IMAGE_SIDE



#: the sides tried after the first, in order
SIDES = (32, 64)


@dataclass(frozen=True)
class ImageSide(Guess):
    """``names``: inputs read as square images at ``side``."""

    names: tuple[str, ...]
    side: int
    channels_last: bool = False  # (B, H, W, C) rather than (B, C, H, W)

    def read_by(self, failed, plan) -> bool:
        return not failed.ran

    def others(self, plan, failed) -> Iterator:
        for side in SIDES:
            if side <= self.side:
                continue
            inputs = tuple(dataclasses.replace(spec, dims=self._at(spec.dims, side))
                           if isinstance(spec, InputSpec) and spec.name in self.names else spec
                           for spec in plan.inputs)
            names = ", ".join(self.names)
            layout = "B,H,W,C" if self.channels_last else "B,C,H,W"
            note = (f"{names} read at {side}x{side}: at {self.side}x{self.side} the forward failed "
                    f"({_why(failed)}); give --input {self.names[0]}={layout} to choose")
            yield dataclasses.replace(plan, inputs=inputs, guesses=(), note=note,
                                      reading_of=self)


    def _at(self, dims: tuple, side: int) -> tuple:
        """``dims`` with its height and width made ``side``."""
        if self.channels_last:
            return (*dims[:-3], side, side, dims[-1])
        return (*dims[:-2], side, side)


def _why(failed) -> str:
    op = failed.failed_op
    return f"at {op.op}" if op is not None else type(failed.raised).__name__


#: ops that take an image batch (B, C, H, W): a (B, T, C) guess handed to one was wrong
_IMAGE_OPS = frozenset({"F.conv2d", "torch.conv2d", "F.max_pool2d", "F.avg_pool2d",
                        "F.adaptive_avg_pool2d", "F.adaptive_max_pool2d", "F.batch_norm",
                        "F.instance_norm", "F.interpolate", "F.pixel_shuffle", "F.unfold"})
#: ops that take a video or a volume (B, C, T, H, W) only
_VIDEO_OPS = frozenset({"F.conv3d", "torch.conv3d", "F.max_pool3d", "F.avg_pool3d",
                        "F.adaptive_avg_pool3d", "F.adaptive_max_pool3d", "F.conv_transpose3d"})


def _batch_elsewhere(failed) -> bool:
    """Whether the shape the forward unpacked names its batch at another place than the first
    (``num_rows, num_cols, batch_size, embed_dim = x.size()``): no image, batch first, is it."""
    words = failed.unpacked_names()
    return any(w is not None and dim_of_word(w) == "B" for w in words[1:])


@dataclass(frozen=True)
class ImageInputs(Guess):
    """Inputs guessed from their names as vectors (B, T, C) that may be images (B, C, H, W): a
    forward that unpacks four sizes from one (``B, C, H, W = x.shape``) or hands it to a 2-D
    convolution or pooling says so. The image's channels are what the module's first
    convolution (or 2-D norm) takes."""

    names: tuple[str, ...]
    after_another_input = True

    def read_by(self, failed, plan) -> bool:
        return self._video(failed) or failed.broadcast_up == 4 or failed.unpacked(4, self.names) \
            or failed.pattern_wants(4, self.names) or failed.permute_wants(4, self.names) or (
            failed.failed_op is not None and failed.failed_op.op in _IMAGE_OPS
            and failed.reads_input(failed.failed_op, self.names)) or (
            not failed.ran and takes_images(failed.model)) or signal_refused(failed, self.names) \
            or moved_refused(failed, self.names)

    def others(self, plan, failed) -> Iterator:
        if _batch_elsewhere(failed):
            return  # the code's own names put the batch elsewhere (rows, columns, batch, width)
        signal = signal_reading(plan.inputs, failed, self.names)
        if signal is not None:  # a (B, C, T) signal a 1-D convolution takes first
            yield dataclasses.replace(plan, inputs=signal[0], guesses=(), note=signal[1],
                                      reading_of=self)
            return
        video = self._video(failed)
        channels = first_channels(failed.model, video)
        side = image_side(plan.init or {})
        frames = ("T",) if video else ()  # frames (or depth) of a video: the sequence
        chosen = self.names
        if failed.permute_wants(5 if video else 4, self.names):  # the input the permute read
            chosen = tuple(n for n in self.names if failed.reads_input(failed.failed_op, (n,)))
        inputs = tuple(InputSpec(spec.name, ("B", channels or "C", *frames, side, side))
                       if isinstance(spec, InputSpec) and spec.name in chosen else spec
                       for spec in plan.inputs)
        names, many = ", ".join(chosen), len(chosen) > 1
        from torch import nn

        layer = "3-D layer" if video else "convolution" if channels and any(
            isinstance(m, nn.Conv2d) for m in failed.model.modules()) \
            else "layer after its nn.Unfold"
        source = f"the {channels} channels its first {layer} takes" if channels else "the width"
        what = ("videos" if many else "a video") if video else ("images" if many else "an image")
        note = (f"{names} read as {what} (B, {channels or 'C'}, {'T, ' if video else ''}{side}, "
                f"{side}), {source}: as (B, T, C) {'they' if many else 'it'} did not fit; give "
                f"--input {chosen[0]}={'B,C,T,H,W' if video else 'B,C,H,W'} to choose")
        yield dataclasses.replace(plan, inputs=inputs, note=note, reading_of=self,
                                  guesses=(ImageSide(chosen, side),))
        if channels is None and not video:  # no layer takes channels first: a grid of vectors
            yield self._channels_last(plan, chosen, side)

    def _channels_last(self, plan, chosen: tuple[str, ...], side: int):
        """The reading of ``chosen`` as images whose channels come last (B, H, W, C), the
        layout of a block that applies its linear layers to every position of a grid."""
        inputs = tuple(InputSpec(spec.name, ("B", side, side, "C"))
                       if isinstance(spec, InputSpec) and spec.name in chosen else spec
                       for spec in plan.inputs)
        names, many = ", ".join(chosen), len(chosen) > 1
        note = (f"{names} read as {'images' if many else 'an image'} with the channels last "
                f"(B, {side}, {side}, C): as (B, T, C) {'they' if many else 'it'} did not fit, and "
                f"no convolution takes {'them' if many else 'it'} channels first; give "
                f"--input {chosen[0]}=B,H,W,C to choose")
        return dataclasses.replace(plan, inputs=inputs, note=note, reading_of=self,
                                   guesses=(ImageSide(chosen, side, channels_last=True),))

    def settled_by(self, attempt, plan) -> bool:
        return False  # an image read at a side of ours stands only when the forward runs

    def _video(self, failed) -> bool:
        """Whether the forward wants videos (B, C, T, H, W): it unpacks five sizes, an einops
        pattern names five axes, a 3-D convolution or pooling refused the guess, the module
        holds such layers and no 2-D ones, or a scale of its own of five axes broadcast the
        guess up to five."""
        op = failed.failed_op
        return failed.unpacked(5, self.names) or failed.pattern_wants(5, self.names) \
            or failed.permute_wants(5, self.names) or (
            op is not None and op.op in _VIDEO_OPS and failed.reads_input(op, self.names)) or (
            not failed.ran and takes_videos(failed.model) and not takes_images(failed.model)) \
            or failed.broadcast_up == 5
