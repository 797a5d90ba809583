"""Forward arguments that are sizes of the data: a table of positions for L of them, a
depthwise convolution over tokens laid out as an H x W image, Fourier positions of a batch of
H x W images, and one named as a length that is a tensor of lengths."""

import math

import torch
import torch.nn as nn


class PositionTable(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        self.table = nn.Embedding(max_len, d_model)

    def forward(self, L):
        return self.table(torch.arange(L))[None]


class TokensAsImage(nn.Module):
    """Mixes each token with its neighbours on the H x W grid the tokens came from."""

    def __init__(self, dim):
        super().__init__()
        self.mix = nn.Conv2d(dim, dim, 3, padding=1, groups=dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, H, W):
        B, N, C = x.shape
        grid = x.transpose(1, 2).reshape(B, C, H, W)
        return self.out(x + self.mix(grid).flatten(2).transpose(1, 2))


class FourierPositions(nn.Module):
    def __init__(self, dim, bands=8):
        super().__init__()
        self.bands = bands
        self.proj = nn.Conv2d(4 * bands, dim, 1)

    def forward(self, B, H, W):
        ys = torch.linspace(0, 1, H)[:, None].expand(H, W)
        xs = torch.linspace(0, 1, W)[None, :].expand(H, W)
        freqs = 2 ** torch.arange(self.bands) * math.pi
        angles = torch.stack([ys, xs])[:, None] * freqs[None, :, None, None]
        feats = torch.cat([angles.sin(), angles.cos()]).flatten(0, 1)
        return self.proj(feats[None]).expand(B, -1, -1, -1)


class LengthsMask(nn.Module):
    """``length`` is a tensor of lengths per sample here, never a size."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, length):
        keep = torch.arange(x.shape[1])[None] < length.view(-1, 1)
        return self.proj(x) * keep[..., None]


class FixedGridClassifier(nn.Module):
    """Three halvings, then a linear layer over the 8 x 8 grid left: it takes 64 x 64 images."""

    def __init__(self, in_channels, hidden, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, hidden, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(hidden, hidden, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(hidden, hidden, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Linear(hidden * 8 * 8, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class PaddedConvText(nn.Module):
    """Token ids embedded, then convolved along time with the padded positions zeroed by a mask
    per sample that the forward moves itself (``m.unsqueeze(1)`` on (B, C, T))."""

    def __init__(self, channels, n_symbols):
        super().__init__()
        self.embed = nn.Embedding(n_symbols, channels)
        self.conv = nn.Conv1d(channels, channels, 3, padding=1)

    def forward(self, x, m):
        h = self.embed(x).transpose(1, 2)
        m = m.unsqueeze(1)
        h = h.masked_fill(m, 0.0)
        return self.conv(h).masked_fill(m, 0.0)


class CachedTable(nn.Module):
    """A table of positions grown when a longer sequence comes: its callers always pass the
    length, though its default is None."""

    def __init__(self, dim, max_len=16):
        super().__init__()
        self.cached = max_len
        self.table = torch.randn(max_len, dim)

    def forward(self, x, seq_len=None):
        if seq_len > self.cached:
            self.cached = seq_len
            self.table = torch.randn(seq_len, x.shape[-1])
        return x + self.table[:seq_len]


class CutByCaller(nn.Module):
    """Keeps the positions before a limit its callers always pass, though its default is None."""

    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, max_len=None):
        return self.proj(x)[:, : max_len - 1]


class StyleModulatedNorm(nn.Module):
    """``h`` and ``w``: hidden states and a style vector, not a height and a width. The style
    goes through a layer the module holds, so it is a tensor."""

    def __init__(self, style_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.to_gain_bias = nn.Linear(style_size, 2 * hidden_size)

    def forward(self, h, w):
        normed = (h - h.mean(-1, keepdim=True)) / (h.std(-1, keepdim=True) + 1e-5)
        gain, bias = torch.split(self.to_gain_bias(w), self.hidden_size, dim=-1)
        return gain * normed + bias


class MixWithImage(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.gate = nn.Linear(embed_dim, embed_dim)

    def forward(self, tgt, memory):
        return tgt + self.gate(memory)


class CaptionScorer(nn.Module):
    """Captions whose name says nothing of tokens, unpacked into (N, T), embedded and handed
    on under the same name as the target sequence of a layer beside an image's features."""

    def __init__(self, input_dim, wordvec_dim, vocab_size):
        super().__init__()
        self.visual_projection = nn.Linear(input_dim, wordvec_dim)
        self.embedding = nn.Embedding(vocab_size, wordvec_dim)
        self.mix = MixWithImage(wordvec_dim)
        self.output = nn.Linear(wordvec_dim, vocab_size)

    def forward(self, features, captions):
        """
        Inputs:
         - features: image features, of shape (N, D)
         - captions: ground truth captions, of shape (N, T)
        """
        N, T = captions.shape
        captions = self.embedding(captions)
        features = self.visual_projection(features)[:, None, :]
        return self.output(self.mix(captions, features)).reshape(N, T, -1)
