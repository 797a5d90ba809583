"""reshape-jumble, noncontiguous-view and op-failed on the ways heads are split and merged
elsewhere: reshape (not view) after a permute, ``.contiguous().view``, einops ``rearrange``
with the heads minor or major, ``flatten``/``unflatten``, ``movedim``, a fused qkv reshaped to
five axes, linear attention with no softmax at all (no consumer graph is built for it), an
MLP-Mixer token mix; and the slips: ``view`` after ``permute``, a merge without moving the
heads back, a split straight into (B, H, T, d), keys not transposed, a jumbled token mix."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_model // n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def attend(self, q, k, v):
        return (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1) @ v


class ReshapeAfterPermute(_Heads):
    """timm's Attention: a fused qkv reshaped to (B, T, 3, H, d), permuted, and the output
    merged back with ``reshape`` (which copies when it must)."""

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        out = self.attend(q, k, v)
        return self.proj(out.permute(0, 2, 1, 3).reshape(B, T, C))


class ViewAfterPermute(_Heads):
    BUG = "noncontiguous-view"

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x).reshape(B, T, 3, self.n_head, self.d_head).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        out = self.attend(q, k, v)
        return self.proj(out.permute(0, 2, 1, 3).view(B, T, C))  # BUG


class ContiguousView(_Heads):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_head, self.d_head).transpose(1, 2) for t in (q, k, v))
        out = self.attend(q, k, v)
        return self.proj(out.transpose(1, 2).contiguous().view(B, T, C))


class MergeWithoutTranspose(_Heads):
    BUG = "reshape-jumble"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.n_head, self.d_head).transpose(1, 2) for t in (q, k, v))
        out = self.attend(q, k, v)
        return self.proj(out.contiguous().view(B, T, C))  # BUG


class SplitStraightToHeads(_Heads):
    BUG = "reshape-jumble"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(B, self.n_head, T, self.d_head)  # BUG
        k = k.reshape(B, T, self.n_head, self.d_head).transpose(1, 2)
        v = v.reshape(B, T, self.n_head, self.d_head).transpose(1, 2)
        out = self.attend(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class EinopsHeadsMajor(_Heads):
    def forward(self, x):
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.n_head)
                   for t in self.qkv(x).chunk(3, dim=-1))
        return self.proj(rearrange(self.attend(q, k, v), "b h n d -> b n (h d)"))


class EinopsHeadsMinor(_Heads):
    """Heads as the minor factor of the channels, ``(d h)``, split and merged the same way
    (the output projection does not care which order the channels are in)."""

    def forward(self, x):
        q, k, v = (rearrange(t, "b n (d h) -> b h n d", h=self.n_head)
                   for t in self.qkv(x).chunk(3, dim=-1))
        return self.proj(rearrange(self.attend(q, k, v), "b h n d -> b n (d h)"))


class EinopsFusedQkv(_Heads):
    def forward(self, x):
        q, k, v = rearrange(self.qkv(x), "b n (three h d) -> three b h n d",
                            three=3, h=self.n_head)
        return self.proj(rearrange(self.attend(q, k, v), "b h n d -> b n (h d)"))


class UnflattenMovedim(_Heads):
    def forward(self, x):
        q, k, v = (t.unflatten(-1, (self.n_head, self.d_head)).movedim(2, 1)
                   for t in self.qkv(x).chunk(3, dim=-1))
        out = self.attend(q, k, v)
        return self.proj(torch.flatten(out.movedim(1, 2), start_dim=2))


class FlattenWithoutMovingHeads(_Heads):
    BUG = "reshape-jumble"

    def forward(self, x):
        q, k, v = (t.unflatten(-1, (self.n_head, self.d_head)).movedim(2, 1)
                   for t in self.qkv(x).chunk(3, dim=-1))
        out = self.attend(q, k, v)
        return self.proj(out.reshape(out.shape[0], out.shape[2], -1))  # BUG


class KeysNotTransposed(_Heads):
    BUG = "op-failed"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=-1))
        scores = q @ k / math.sqrt(self.d_head)  # BUG
        out = scores.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class LinearAttention(_Heads):
    """Katharopoulos et al.: elu + 1 feature maps, (phi(K)^T V) first, normalised by hand; there
    is no softmax in the trace."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=-1))
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("bhnd,bhne->bhde", k, v)
        z = 1 / (torch.einsum("bhnd,bhd->bhn", q, k.sum(dim=2)) + 1e-6)
        out = torch.einsum("bhnd,bhde,bhn->bhne", q, kv, z)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class LinearAttentionViewMerge(_Heads):
    """The same, with the heads merged by a view that skips the transpose."""

    BUG = "reshape-jumble"

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, self.d_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=-1))
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("bhnd,bhne->bhde", k, v)
        z = 1 / (torch.einsum("bhnd,bhd->bhn", q, k.sum(dim=2)) + 1e-6)
        out = torch.einsum("bhnd,bhde,bhn->bhne", q, kv, z)
        return self.proj(out.reshape(B, T, C))  # BUG


class MixerTokenMixing(nn.Module):
    """MLP-Mixer: mix over the tokens with the channels moved out of the way and back."""

    INIT = {"dim": "C", "num_tokens": "T"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_tokens):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.token_mix = nn.Sequential(nn.Linear(num_tokens, 2 * num_tokens), nn.GELU(),
                                       nn.Linear(2 * num_tokens, num_tokens))

    def forward(self, x):
        y = self.norm(x).transpose(1, 2)
        return x + self.token_mix(y).transpose(1, 2)


class MixerTokenMixingByView(nn.Module):
    """The tokens put last with a view instead of a transpose: every row mixes channels."""

    BUG = "reshape-jumble"
    INIT = {"dim": "C", "num_tokens": "T"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_tokens):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.token_mix = nn.Sequential(nn.Linear(num_tokens, 2 * num_tokens), nn.GELU(),
                                       nn.Linear(2 * num_tokens, num_tokens))

    def forward(self, x):
        B, T, C = x.shape
        y = self.norm(x).view(B, C, T)  # BUG
        return x + self.token_mix(y).transpose(1, 2)
