"""Padding masks that say one thing and do another (mask-ignored), and ones that work.
Each buggy module marks the line the rule must point at with ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PaddedSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.out = nn.Linear(n_embd, n_embd)

    def heads(self, x):
        B, T, C = x.shape
        return (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                for t in self.qkv(x).split(C, dim=2))

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        scores = scores.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PaddingMaskOneIsPadding(PaddedSelfAttention):
    """Reads 1 as padding: another convention than a tokenizer's, so not judged undeclared."""

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        scores = scores.masked_fill(attention_mask[:, None, None, :] == 1, -1e9)
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PaddingMaskUnused(PaddedSelfAttention):
    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        keep = attention_mask[:, None, None, :].bool()
        y = F.scaled_dot_product_attention(q, k, v)  # BUG
        return self.out(y.transpose(1, 2).reshape(B, T, C)) * keep.any()


class PaddingMaskSdpa(PaddedSelfAttention):
    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        keep = attention_mask[:, None, None, :].bool()
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PaddingMaskAdditive(PaddedSelfAttention):
    """The mask turned into an additive bias of the dtype's lowest value, as libraries do."""

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head) + bias
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PaddingThenConv(PaddedSelfAttention):
    """Masked attention, then a depthwise convolution over positions (a design choice: the
    convolution, not the mask, mixes the padded positions in)."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.conv = nn.Conv1d(n_embd, n_embd, 3, padding=1, groups=n_embd)

    def forward(self, x, attention_mask):
        y = super().forward(x, attention_mask)
        return y + self.conv(y.transpose(1, 2)).transpose(1, 2)


class PaddingMaskOnQueries(PaddedSelfAttention):
    """Read as 1 = keep (``== 0`` filled), but applied to the queries' rows: real queries still
    weigh the padded keys."""

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        scores = scores.masked_fill(attention_mask[:, None, :, None] == 0, -1e9)  # BUG
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class KeyPadding(PaddedSelfAttention):
    """A boolean key-padding mask, True = padding, as nn.MultiheadAttention reads one."""

    def forward(self, x, key_padding_mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask.unsqueeze(1).unsqueeze(2), float("-inf"))
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class KeyPaddingOnQueries(PaddedSelfAttention):
    def forward(self, x, key_padding_mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        if key_padding_mask is not None:
            hidden = key_padding_mask.unsqueeze(1).unsqueeze(-1)
            scores = scores.masked_fill(hidden, -1e4)  # BUG
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class SdpaMaskOnQueries(PaddedSelfAttention):
    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        rows = mask[:, None, :, None] if mask is not None else None
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=rows)  # BUG
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class SdpaMaskOnKeys(PaddedSelfAttention):
    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        keys = mask[:, None, None, :] if mask is not None else None
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keys)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class OutputsMaskedOnly(PaddedSelfAttention):
    """The mask zeroes the padded positions of the output only: what it hides is the output,
    not the keys, so it is not judged as a key mask."""

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        y = self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
        return y.masked_fill(attention_mask[..., None] == 0, 0.0)


class KeyMaskOnFastPathOnly(PaddedSelfAttention):
    """Hands the key mask (True = attend) to a fast path that applies it; the path that runs by
    default accepts the mask and never applies it."""

    def __init__(self, n_embd, n_head, fast=False):
        super().__init__(n_embd, n_head)
        self.fast = fast

    def fast_path(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        if self.fast:
            y = self.fast_path(q, k, v, mask)
        else:
            weights = (q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)).softmax(-1)  # BUG
            y = weights @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class KeyMaskHandedToMethod(PaddedSelfAttention):
    """Forward reads nothing of the mask: the method it hands it to hides the masked keys
    (True = attend)."""

    def attend(self, q, k, v, keep):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        return scores.softmax(-1) @ v

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        y = self.attend(q, k, v, mask)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class KeyMaskHandedToSubmodule(nn.Module):
    """The mask (True = masked out) handed to a submodule whose forward applies it."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attn = KeyPadding(n_embd, n_head)
        self.norm = nn.LayerNorm(n_embd)

    def forward(self, x, pad_mask=None):
        return x + self.attn(self.norm(x), key_padding_mask=pad_mask)


class KeyMaskHandedToSubmoduleOnQueries(KeyMaskHandedToSubmodule):
    """The submodule (defined below) applies the mask to the queries' rows."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.attn = RowsMasked(n_embd, n_head)


class RowsMasked(PaddedSelfAttention):
    def forward(self, x, key_padding_mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        scores = scores.masked_fill(key_padding_mask[:, None, :, None], -1e4)  # BUG
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MaskedPooling(nn.Module):
    """Attention pooling of a bag of instances into one vector per sample: a learned score per
    instance, the padded ones filled with -inf before the softmax."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.encode = nn.Linear(n_embd, n_embd)
        self.score = nn.Sequential(nn.Linear(n_embd, n_embd // 2), nn.Tanh(), nn.Linear(n_embd // 2, 1))
        self.head = nn.Linear(n_embd, 3)

    def forward(self, x, mask):
        h = torch.relu(self.encode(x))
        scores = self.score(h).squeeze(-1).masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.head((h * weights.unsqueeze(-1)).sum(dim=1))


class MaskedPoolingScoresMultiplied(MaskedPooling):
    """The mask multiplied into the scores: a padded instance's score is 0, not -inf, so it
    still takes weight after the softmax."""

    def forward(self, x, mask):
        h = torch.relu(self.encode(x))
        scores = self.score(h).squeeze(-1) * mask  # BUG
        weights = scores.softmax(dim=-1)
        return self.head((h * weights.unsqueeze(-1)).sum(dim=1))


class MaskedPoolingWeightsMultiplied(MaskedPooling):
    """The mask multiplied into the weights after the softmax and renormalised: the padded
    instances take no weight."""

    def forward(self, x, mask):
        h = torch.relu(self.encode(x))
        weights = self.score(h).squeeze(-1).softmax(dim=-1) * mask
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return self.head((h * weights.unsqueeze(-1)).sum(dim=1))


class PoolingWithCoordinates(nn.Module):
    """Attention pooling over instances whose forward takes coordinates it does not use; the
    mask multiplied into the scores (a padded instance's score 0, still weighted)."""

    def __init__(self, n_embd):
        super().__init__()
        self.encode = nn.Linear(n_embd, n_embd)
        self.score = nn.Linear(n_embd, 1)
        self.head = nn.Linear(n_embd, 3)

    def forward(self, x, coords, mask):
        h = torch.relu(self.encode(x))
        scores = self.score(h).squeeze(-1) * mask  # BUG
        return self.head((h * scores.softmax(dim=-1).unsqueeze(-1)).sum(dim=1))


class PoolingWithCoordinatesWrapped(PoolingWithCoordinates):
    """Hands its mask to the base class's forward by place, with no coordinates."""

    def forward(self, x, mask):
        return super().forward(x, None, mask)


class PoolingWithCoordinatesFilled(PoolingWithCoordinates):
    def forward(self, x, coords, mask):
        h = torch.relu(self.encode(x))
        scores = self.score(h).squeeze(-1).masked_fill(~mask.bool(), float("-inf"))
        return self.head((h * scores.softmax(dim=-1).unsqueeze(-1)).sum(dim=1))


class PoolingWithCoordinatesFilledWrapped(PoolingWithCoordinatesFilled):
    def forward(self, x, mask):
        return super().forward(x, None, mask)


class MeanPooledEncoder(nn.Module):
    """A sentence embedder: a self-attention encoder given the padding, then the mean of the
    real tokens (the mask cast to floats and multiplied in)."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.n_head = n_head

    def encode(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        keys = None if mask is None else mask[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keys).transpose(1, 2).reshape(B, T, C)

    def forward(self, x, mask):
        h = self.encode(x, mask)
        weights = mask.float().unsqueeze(-1)
        return (h * weights).sum(dim=1) / weights.sum(dim=1)


class MeanPooledEncoderMaskOnlyPooled(MeanPooledEncoder):
    """The encoder is called without the mask: real tokens attend to the padding, and only the
    pooling leaves it out."""

    def forward(self, x, mask):
        h = self.encode(x)
        weights = mask.float().unsqueeze(-1)
        return (h * weights).sum(dim=1) / weights.sum(dim=1)  # BUG


class _NullKeyAttend(nn.Module):
    """Softmax attention over keys that start with a learned null key; an optional mask of the
    keys (True: may attend) hides the rest."""

    def forward(self, q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return scores.softmax(-1) @ v


class PreparedMaskNeverPassed(nn.Module):
    """A key mask reshaped and padded for the null key, then the attention called without it."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.null_kv = nn.Parameter(torch.randn(2, n_head, 1, n_embd // n_head))
        self.attend = _NullKeyAttend()
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        k = torch.cat((self.null_kv[0].expand(B, -1, -1, -1), k), dim=2)
        v = torch.cat((self.null_kv[1].expand(B, -1, -1, -1), v), dim=2)
        if mask is not None:
            mask = mask[:, None, None, :]
            mask = F.pad(mask, (1, 0), value=True)
        y = self.attend(q, k, v)  # BUG
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PreparedMaskPassed(PreparedMaskNeverPassed):
    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        k = torch.cat((self.null_kv[0].expand(B, -1, -1, -1), k), dim=2)
        v = torch.cat((self.null_kv[1].expand(B, -1, -1, -1), v), dim=2)
        if mask is not None:
            mask = F.pad(mask[:, None, None, :], (1, 0), value=True)
        y = self.attend(q, k, v, mask)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PreparedMaskLeftBeside(PaddedSelfAttention):
    """The mask turned into an additive bias in forward, and the softmax taken of the scores
    without it."""

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        bias = (~mask)[:, None, None, :].float() * -1e9
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        y = scores.softmax(-1) @ v  # BUG
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PaddingMarkedTrue(PaddedSelfAttention):
    """A mask whose True marks padding (its own convention), applied: not judged."""

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        scores = scores + mask[:, None, None, :].float() * -1e9
        y = scores.softmax(-1) @ v
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MaskTakenAndLeft(PaddedSelfAttention):
    """A signature that takes a mask and never reads it (an encoder that has no padding):
    nothing was made from it, so nothing was dropped."""

    def forward(self, x, mask=None):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MaskOnlyCounted(PaddedSelfAttention):
    """The mask read for the lengths that scale the output: it moves the output, its own way."""

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.heads(x)
        lengths = mask.sum(-1, keepdim=True).float()
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C)) / lengths[:, :, None]
