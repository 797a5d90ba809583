"""Modules that work on videos or volumes (B, C, T, H, W), on images cut by a starred
unpacking, and on token ids whose annotation names an axis of its own: none says so in a
name shapetrace knows, and each is correct."""

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import nn


class ChannelNorm(nn.Module):
    """A norm over the channels of a video, with a scale of shape (1, C, 1, 1, 1)."""

    def __init__(self, dim):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(1, dim, 1, 1, 1))

    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, unbiased=False, keepdim=True)
        return (x - mean) * (var + 1e-5).rsqrt() * self.gain


class FrameBlock(nn.Module):
    """A 3-D convolution, a group norm and an activation."""

    def __init__(self, dim, dim_out, groups=1):
        super().__init__()
        self.conv = nn.Conv3d(dim, dim_out, kernel_size=(1, 3, 3), padding=(0, 1, 1))
        self.norm = nn.GroupNorm(groups, dim_out)

    def forward(self, x):
        return F.silu(self.norm(self.conv(x)))


class VolumeAttention(nn.Module):
    """Self-attention over every position of a video (frames x height x width), queries, keys
    and values from one 1x1x1 convolution: its norm's scale (1, C, 1, 1, 1) broadcasts a
    (B, T, C) guess up to five axes, where it would attend over B x T x C positions."""

    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        self.heads, self.scale = heads, dim_head ** -0.5
        self.norm = ChannelNorm(dim)
        self.qkv = nn.Conv3d(dim, 3 * heads * dim_head, 1, bias=False)
        self.out = nn.Conv3d(heads * dim_head, dim, 1)

    def forward(self, x):
        frames, height, width = x.shape[-3:]
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=1)
        b = x.shape[0]
        q, k, v = (t.reshape(b, self.heads, -1, frames * height * width).transpose(-1, -2)
                   for t in (q, k, v))
        weights = (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1)
        mixed = (weights @ v).transpose(-1, -2).reshape(b, -1, frames, height, width)
        return self.out(mixed) + x


class FramePatches(nn.Module):
    """Unpacks a video's five sizes (its input's name says nothing), then cuts each frame into
    patches with a 3-D convolution of one frame's depth."""

    def __init__(self, channels=3, dim=16, patch=2):
        super().__init__()
        self.patch = patch
        self.proj = nn.Conv3d(channels, dim, (1, patch, patch), stride=(1, patch, patch))

    def forward(self, clip):
        b, c, t, h, w = clip.shape
        tokens = self.proj(clip).reshape(b, -1, t * (h // self.patch) * (w // self.patch))
        return tokens.transpose(1, 2)


class StarredPatches(nn.Module):
    """Reads an image's sizes beside its own patch size in one starred unpacking: four sizes
    come from the image, one from the module."""

    def __init__(self, dim=16, patch_size=4):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(3, dim, patch_size, stride=patch_size)

    def forward(self, x):
        b, _, h, w, p = *x.shape, self.patch_size
        tokens = self.proj(x).reshape(b, -1, (h // p) * (w // p))
        return tokens.transpose(1, 2)


class CharacterEmbed(nn.Module):
    """Character ids of a text of its own length (``nt``), embedded."""

    def __init__(self, dim=16, num_chars=40):
        super().__init__()
        self.embed = nn.Embedding(num_chars + 1, dim)

    def forward(self, text: Int[torch.Tensor, "b nt"]) -> Float[torch.Tensor, "b nt d"]:
        return self.embed(text.clamp(min=-1) + 1)


class SharedPositions(nn.Module):
    """Cuts an image into patch tokens, then adds positions in place to a table expanded over
    the batch: every sample's row is one memory location, which torch refuses to write to."""

    def __init__(self, dim=16, patch_size=2, image_size=8):
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(3, dim, patch_size, stride=patch_size)
        self.tokens = nn.Parameter(torch.zeros((image_size // patch_size) ** 2, dim))
        self.positions = nn.Parameter(torch.randn((image_size // patch_size) ** 2, dim))

    def forward(self, x):
        b, _, h, w, p = *x.shape, self.patch_size
        tokens = self.tokens.expand(b, -1, -1)
        tokens += self.positions
        return tokens + self.proj(x).flatten(2).transpose(1, 2)


def divisible_by(num, den):
    return (num % den) == 0


class FourierFeatures(nn.Module):
    """Random Fourier features of a scalar per sample: sines and cosines in equal halves, the
    width's evenness checked through a helper of the file's own."""

    def __init__(self, dim):
        super().__init__()
        assert divisible_by(dim, 2)
        self.register_buffer("weights", torch.randn(dim // 2))

    def forward(self, x: Float[torch.Tensor, "b"]) -> Float[torch.Tensor, "b d"]:
        freqs = x[:, None] * self.weights[None, :] * 2 * torch.pi
        return torch.cat((freqs.sin(), freqs.cos()), dim=-1)


class TextToAudio(nn.Module):
    """Text features of their own width, which the annotation names only (``dt``): it must be
    the constructor's ``dim_text``."""

    def __init__(self, dim, dim_text=24):
        super().__init__()
        self.mix = nn.Linear(dim + dim_text, dim)

    def forward(self, audio: Float[torch.Tensor, "b n d"], text: Float[torch.Tensor, "b n dt"]):
        return audio + self.mix(torch.cat((audio, text), dim=-1))


class StandardizedConv3d(nn.Conv3d):
    """torch's own 3-D convolution, its weights standardised in forward: no constructor of its
    own, so its arguments are the layer's."""

    def forward(self, x):
        w = self.weight
        mean = w.mean(dim=(1, 2, 3, 4), keepdim=True)
        var = w.var(dim=(1, 2, 3, 4), unbiased=False, keepdim=True)
        return F.conv3d(x, (w - mean) * (var + 1e-5).rsqrt(), self.bias, self.stride, self.padding)
