"""Arguments a forward receives: dropped after the one line that reads them (a residual the
caller passes, bound and never read; a key mask converted and never applied), and the ways of
not using an argument that are right: a parameter kept for a common signature and never read,
one read on a branch another run takes, one the caller leaves out or passes as a flag."""

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class GatedMixer(nn.Module):
    """A gated update whose skip path should carry the residual the caller passes."""

    def __init__(self, width):
        super().__init__()
        self.mix = nn.Linear(width, width)
        self.gate = nn.Sequential(nn.Linear(width, width), nn.Sigmoid())

    def forward(self, x, residual=None):
        residual = x if residual is None else residual  # DROPPED
        h = F.silu(self.mix(x))
        g = self.gate(x)
        return g * h + (1 - g) * x


class GatedMixerUsed(GatedMixer):
    def forward(self, x, residual=None):
        residual = x if residual is None else residual
        h = F.silu(self.mix(x))
        g = self.gate(x)
        return g * h + (1 - g) * residual


class PreNormStack(nn.Module):
    """Pre-norm: the layer gets the normalised stream and the stream itself."""

    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]
    LAYER = GatedMixer

    def __init__(self, width, depth=2):
        super().__init__()
        self.layers = nn.ModuleList(self.LAYER(width) for _ in range(depth))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(depth))

    def forward(self, x):
        for layer, norm in zip(self.layers, self.norms):
            x = layer(norm(x), x)
        return x


class PreNormStackFixed(PreNormStack):
    LAYER = GatedMixerUsed


class KeyMaskedAttention(nn.Module):
    """Self-attention over keys a padding mask marks (True: a real token)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x, mask=None):
        B, T, C = x.shape
        if mask is not None:
            keep = mask.bool()[:, None, None, :]  # DROPPED
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class KeyMaskedAttentionUsed(KeyMaskedAttention):
    def forward(self, x, mask=None):
        B, T, C = x.shape
        keep = None
        if mask is not None:
            keep = mask.bool()[:, None, None, :]
        q, k, v = self.qkv(x).split(C, dim=-1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class PaddedEncoder(nn.Module):
    """Embeds token ids and attends over the real tokens only."""

    INIT = {"vocab": "V", "width": "C", "heads": "H"}
    INPUTS = ["ids=B,T:long:V"]
    ATTENTION = KeyMaskedAttention

    def __init__(self, vocab, width, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.attn = self.ATTENTION(width, heads)

    def forward(self, ids):
        real = ids != 0
        real[:, 0] = True
        return self.attn(self.embed(ids), mask=real)


class PaddedEncoderFixed(PaddedEncoder):
    ATTENTION = KeyMaskedAttentionUsed


class Blend(nn.Module):
    """The same drop as GatedMixer's under other names, the stream passed by keyword."""

    def __init__(self, width):
        super().__init__()
        self.f = nn.Linear(width, width)

    def forward(self, a, b=None):
        c = a if b is None else b  # DROPPED
        return a + self.f(a)


class BlendStack(nn.Module):
    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.blend = Blend(width)

    def forward(self, x):
        return self.blend(self.norm(x), b=x)


# --- right: nothing to say ----------------------------------------------------------------------

class SignatureOnly(nn.Module):
    """Takes a mask for a common signature with its siblings, and has no use for it."""

    def __init__(self, width):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x, mask=None):
        return x + self.ff(x)


class OptionalResidual(nn.Module):
    """Adds the residual on one configuration only: read in a branch this run does not take."""

    def __init__(self, width, add=False):
        super().__init__()
        self.add = add
        self.ff = nn.Linear(width, width)

    def forward(self, x, residual=None):
        out = self.ff(x)
        if self.add:
            out = out + residual
        return out


class Flagged(nn.Module):
    """Told by a constant flag; the flag is folded and not needed on this path."""

    def __init__(self, width):
        super().__init__()
        self.ff = nn.Linear(width, width)

    def forward(self, x, need_weights=False, residual=None):
        need = need_weights and not self.training
        h = x if residual is None else residual
        return self.ff(x)


class RightStack(nn.Module):
    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.same = SignatureOnly(width)
        self.optional = OptionalResidual(width)
        self.flagged = Flagged(width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x, mask=None):
        x = self.same(x, mask=x.sum(-1) > 0)
        x = self.optional(self.norm(x), x)
        x = self.flagged(x, True, None)
        return x


class ResolvedFlags(nn.Module):
    """Resolves the flags its caller passes against its own defaults, and has no use for them
    on this path: switches, not values computed for nothing."""

    def __init__(self, width, attentions=False):
        super().__init__()
        self.attentions = attentions
        self.ff = nn.Linear(width, width)

    def forward(self, x, output_attentions: Optional[bool] = None, use_cache=False):
        output_attentions = output_attentions if output_attentions is not None else self.attentions
        use_cache = use_cache and not self.training
        return x + self.ff(x)


class FlagStack(nn.Module):
    INIT = {"width": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width):
        super().__init__()
        self.layer = ResolvedFlags(width)
        self.want = True

    def forward(self, x):
        return self.layer(x, output_attentions=self.want, use_cache=self.want)
