"""Axes split into windows, patches and chunks, and merged back: Swin's shifted windows, ViT's
patch embedding (by hand and with einops), chunked attention, a pixel shuffle. Each correct
module has a buggy twin that merges the pieces back in the wrong order (``BUG``, ``# BUG``).

The image's height and width are the names ``Y`` and ``X`` (``H`` is the head count) at sizes
that are multiples of the literal window, patch or chunk size; the counts of windows along Y
and X differ from each other and from the window size, so no two factors share a size.
See textbook.py for INIT / INPUTS / DIMS; tests/test_style_corpus.py and tests/test_windows.py run them.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange

#: Y = 2 windows of 3, X = 4 windows of 3; L = Y*X tokens.
WINDOW_DIMS = {"Y": 6, "X": 12, "L": 72}


def window_partition(x, window_size):
    """(B, Y, X, C) -> (B*nY*nX, w, w, C)"""
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    """(B*nY*nX, w, w, C) -> (B, Y, X, C)"""
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class _WindowAttention(nn.Module):
    """Multi-head attention inside each window, with an optional additive mask per window."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C))


class SwinBlock(nn.Module):
    """Swin's block: (B, L, C) tokens of a Y x X image, shifted windows (torch.roll) and the
    mask that keeps shifted regions apart, a residual around it all."""

    INIT = {"dim": "C", "num_heads": "H", "height": "Y", "width": "X", "window_size": 3,
            "shift_size": 1}
    INPUTS = ["x=B,L,C"]
    DIMS = WINDOW_DIMS

    def __init__(self, dim, num_heads, height, width, window_size=3, shift_size=1):
        super().__init__()
        self.height, self.width = height, width
        self.window_size, self.shift_size = window_size, shift_size
        self.norm = nn.LayerNorm(dim)
        self.attn = _WindowAttention(dim, num_heads)
        img_mask = torch.zeros((1, height, width, 1))
        cnt = 0
        for h in (slice(0, -window_size), slice(-window_size, -shift_size), slice(-shift_size, None)):
            for w in (slice(0, -window_size), slice(-window_size, -shift_size),
                      slice(-shift_size, None)):
                img_mask[:, h, w, :] = cnt
                cnt += 1
        mask_windows = window_partition(img_mask, window_size).view(-1, window_size * window_size)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        H, W = self.height, self.width
        B, L, C = x.shape
        shortcut = x
        x = self.norm(x).view(B, H, W, C)
        s, ws = self.shift_size, self.window_size
        shifted = torch.roll(x, shifts=(-s, -s), dims=(1, 2))
        windows = window_partition(shifted, ws).view(-1, ws * ws, C)
        out = self.attn(windows, mask=self.attn_mask).view(-1, ws, ws, C)
        shifted = window_reverse(out, ws, H, W)
        x = torch.roll(shifted, shifts=(s, s), dims=(1, 2))
        return shortcut + x.view(B, H * W, C)


class SwinReverseWithoutPermute(nn.Module):
    """window_reverse as ``.view(B, H, W, -1)``: rows of windows read as rows of the image."""

    BUG = "reshape-jumble"
    INIT = {"dim": "C", "num_heads": "H", "height": "Y", "width": "X"}
    INPUTS = ["x=B,L,C"]
    DIMS = WINDOW_DIMS

    def __init__(self, dim, num_heads, height, width, window_size=3):
        super().__init__()
        self.height, self.width, self.window_size = height, width, window_size
        self.attn = _WindowAttention(dim, num_heads)

    def forward(self, x):
        H, W, ws = self.height, self.width, self.window_size
        B, L, C = x.shape
        windows = window_partition(x.view(B, H, W, C), ws).view(-1, ws * ws, C)
        out = self.attn(windows).view(-1, ws, ws, C)
        y = out.view(B, H, W, -1)  # BUG
        return x + y.view(B, L, C)


class SquareWindowsReverseWithoutPermute(nn.Module):
    """The same bug on a square 8 x 8 image in windows of 4: the sizes alone allow reading the
    merge as legal (2*2*2 = 8); the window factors, tied to their axes, do not."""

    BUG = "reshape-jumble"
    INIT = {"dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,8,8,C"]
    DIMS = {"T": 29}  # keep T out of the image's sizes

    def __init__(self, dim, num_heads, window_size=4):
        super().__init__()
        self.window_size = window_size
        self.attn = _WindowAttention(dim, num_heads)

    def forward(self, x):
        B, H, W, C = x.shape
        ws = self.window_size
        windows = window_partition(x, ws).view(-1, ws * ws, C)
        out = self.attn(windows).view(-1, ws, ws, C)
        return out.view(B, H, W, -1)  # BUG


class SquareWindows(nn.Module):
    """The correct twin of SquareWindowsReverseWithoutPermute."""

    INIT = {"dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,8,8,C"]
    DIMS = {"T": 29}

    def __init__(self, dim, num_heads, window_size=4):
        super().__init__()
        self.window_size = window_size
        self.attn = _WindowAttention(dim, num_heads)

    def forward(self, x):
        B, H, W, C = x.shape
        ws = self.window_size
        windows = window_partition(x, ws).view(-1, ws * ws, C)
        out = self.attn(windows).view(-1, ws, ws, C)
        return window_reverse(out, ws, H, W)


# --- ViT: patch embedding by reshape and permute, then attention over the patches ------------------

class _Encoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return x + self.out(y.transpose(1, 2).reshape(B, N, C))


PATCH_DIMS = {"Y": 6, "X": 10, "N": 15, "P": 12}  # N = 3 x 5 patches of P = 2*2*3 numbers


class ViTPatchReshape(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["img=B,3,Y,X"]
    DIMS = PATCH_DIMS

    def __init__(self, dim, heads, patch=2, channels=3):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(patch * patch * channels, dim)
        self.encoder = _Encoder(dim, heads)

    def forward(self, img):
        B, c, H, W = img.shape
        p = self.patch
        N = (H // p) * (W // p)
        x = img.reshape(B, c, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1).reshape(B, N, p * p * c)
        return self.encoder(self.embed(x))


class ViTPatchWithoutPermute(nn.Module):
    BUG = "reshape-jumble"
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["img=B,3,Y,X"]
    DIMS = PATCH_DIMS

    def __init__(self, dim, heads, patch=2, channels=3):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(patch * patch * channels, dim)
        self.encoder = _Encoder(dim, heads)

    def forward(self, img):
        B, c, H, W = img.shape
        p = self.patch
        N = (H // p) * (W // p)
        x = img.reshape(B, N, p * p * c)  # BUG
        return self.encoder(self.embed(x))


class ViTPatchEinops(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["img=B,3,Y,X"]
    DIMS = PATCH_DIMS

    def __init__(self, dim, heads, patch=2, channels=3):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(patch * patch * channels, dim)
        self.encoder = _Encoder(dim, heads)

    def forward(self, img):
        x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=self.patch, p2=self.patch)
        return self.encoder(self.embed(x))


class ViTPatchUnfold(nn.Module):
    """Patches cut with Tensor.unfold, as some ViT ports do."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["img=B,3,Y,X"]
    DIMS = PATCH_DIMS

    def __init__(self, dim, heads, patch=2, channels=3):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(patch * patch * channels, dim)
        self.encoder = _Encoder(dim, heads)

    def forward(self, img):
        B, c, H, W = img.shape
        p = self.patch
        patches = img.unfold(2, p, p).unfold(3, p, p)  # (B, c, H/p, W/p, p, p)
        x = patches.permute(0, 2, 3, 4, 5, 1).reshape(B, -1, p * p * c)
        return self.encoder(self.embed(x))


# --- chunked (blocked) attention: T -> (T/n, n) and back -------------------------------------------

CHUNK_DIMS = {"T": 12}  # chunks of 4: 3 of them


class ChunkedAttention(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = CHUNK_DIMS

    def __init__(self, n_embd, n_head, chunk=4):
        super().__init__()
        self.n_head, self.chunk = n_head, chunk
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        n, hs = self.chunk, C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T // n, n, self.n_head, hs).permute(0, 1, 3, 2, 4) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1) / math.sqrt(hs)).softmax(dim=-1)  # (B, T/n, H, n, n)
        y = (att @ v).permute(0, 1, 3, 2, 4).reshape(B, T, C)
        return y


class ChunkedMergeWithoutPermute(nn.Module):
    BUG = "reshape-jumble"
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = CHUNK_DIMS

    def __init__(self, n_embd, n_head, chunk=4):
        super().__init__()
        self.n_head, self.chunk = n_head, chunk
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        n, hs = self.chunk, C // self.n_head
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T // n, n, self.n_head, hs).permute(0, 1, 3, 2, 4) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1) / math.sqrt(hs)).softmax(dim=-1)
        y = (att @ v).reshape(B, T, C)  # BUG
        return y


class ChunkedEinsum(nn.Module):
    """Blocks by unflatten, attention by einsum, the blocks flattened back."""

    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = CHUNK_DIMS

    def __init__(self, n_embd, n_head, chunk=4):
        super().__init__()
        self.n_head, self.chunk = n_head, chunk
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.unflatten(1, (-1, self.chunk)).unflatten(-1, (self.n_head, -1))
                   for t in self.qkv(x).chunk(3, dim=-1))  # (B, T/n, n, H, d)
        att = torch.einsum("bcqhd,bckhd->bchqk", q, k) / math.sqrt(q.shape[-1])
        y = torch.einsum("bchqk,bckhd->bcqhd", att.softmax(-1), v)
        return y.flatten(3).flatten(1, 2)


# --- a pixel shuffle written out: (B, Y, X, r*r*C) -> (B, r*Y, r*X, C) ------------------------------

SHUFFLE_DIMS = {"Y": 6, "X": 9}


class PixelShuffleUpsample(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,Y,X,C"]
    DIMS = SHUFFLE_DIMS

    def __init__(self, dim, r=2):
        super().__init__()
        self.r = r
        self.expand = nn.Linear(dim, r * r * dim)

    def forward(self, x):
        B, H, W, C = x.shape
        r = self.r
        y = self.expand(x).view(B, H, W, r, r, C).permute(0, 1, 3, 2, 4, 5)
        return y.reshape(B, H * r, W * r, C)


class PixelShuffleWithoutPermute(nn.Module):
    BUG = "reshape-jumble"
    INIT = {"dim": "C"}
    INPUTS = ["x=B,Y,X,C"]
    DIMS = SHUFFLE_DIMS

    def __init__(self, dim, r=2):
        super().__init__()
        self.r = r
        self.expand = nn.Linear(dim, r * r * dim)

    def forward(self, x):
        B, H, W, C = x.shape
        r = self.r
        y = self.expand(x).view(B, H, W, r, r, C)
        return y.reshape(B, H * r, W * r, C)  # BUG
