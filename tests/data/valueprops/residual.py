"""Transformer blocks with and without a path that carries their input around the sublayers."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        B, T, C = x.shape
        if context is None:
            q, k, v = self.qkv(x).chunk(3, dim=-1)
        else:  # queries from x, keys and values from the context (the same weights, split)
            wq, wk, wv = self.qkv.weight.chunk(3)
            bq, bk, bv = self.qkv.bias.chunk(3)
            q, k, v = F.linear(x, wq, bq), F.linear(context, wk, bk), F.linear(context, wv, bv)
        heads = lambda t: t.reshape(B, -1, self.heads, C // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        weights = (q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5).softmax(dim=-1)
        return self.proj((weights @ v).transpose(1, 2).reshape(B, T, C))


class EinsumAttention(SelfAttention):
    def forward(self, x, context=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / (C // self.heads) ** 0.5
        out = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)
        return self.proj(out.reshape(B, T, C))


class FusedAttention(SelfAttention):
    def forward(self, x, context=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class GatedFeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class _Block(nn.Module):
    attention = SelfAttention
    feed_forward = FeedForward

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = self.attention(n_embd, n_head)
        self.ff = self.feed_forward(n_embd, 4 * n_embd)


# --- no path around the sublayers --------------------------------------------------------------

class AttentionFedOn(_Block):
    """The attention's output is what the feed-forward reads and adds to: x never gets past it."""

    def forward(self, x):
        h = self.attn(self.norm1(x))  # BUG: residual-missing (only the attention's output goes on)
        return h + self.ff(self.norm2(h))


class StreamTimesFeedForward(_Block):
    """The stream multiplied by the feed-forward's output instead of added to it."""

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x * self.ff(self.norm2(x))  # BUG: residual-missing


class FeedForwardWithoutSkip(_Block):
    """A skip around the attention only: the feed-forward's output is the block's."""

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = self.ff(self.norm2(x))  # BUG: residual-missing
        return x


class TorchAttentionFedOn(nn.Module):
    """torch's own attention, its output normalised with the feed-forward's and no skip."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.mha = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(n_embd, 2 * n_embd), nn.ReLU(), nn.Linear(2 * n_embd, n_embd))
        self.norm = nn.LayerNorm(n_embd)

    def forward(self, x):
        a, _ = self.mha(x, x, x, need_weights=False)  # BUG: residual-missing (x not carried)
        return self.norm(a + self.ff(a))


class CrossAttentionWithoutSkip(nn.Module):
    """A skip around the self-attention and the feed-forward, none around the cross-attention
    between them: its output replaces the stream."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(n_embd, 2 * n_embd), nn.GELU(), nn.Linear(2 * n_embd, n_embd))
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(n_embd) for _ in range(3))

    def forward(self, x, context):
        h = self.norm1(x)
        x = x + self.self_attn(h, h, h, need_weights=False)[0]
        x = self.cross_attn(self.norm2(x), context, context, need_weights=False)[0]  # BUG: residual-missing
        return x + self.ff(self.norm3(x))


class _Attending(nn.Module):
    """Pre-norm attention of the user's own, for self- and cross-attention alike."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.norm = nn.LayerNorm(n_embd)
        self.mha = nn.MultiheadAttention(n_embd, n_head, batch_first=True)

    def forward(self, x, context=None):
        h = self.norm(x)
        kv = h if context is None else context
        return self.mha(h, kv, kv, need_weights=False)[0]


class OwnCrossAttentionWithoutSkip(nn.Module):
    """Two layers of one class of the user's: the cross-attention's output replaces the stream."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attention = _Attending(n_embd, n_head)
        self.cross_attention = _Attending(n_embd, n_head)
        self.ff = nn.Sequential(nn.LayerNorm(n_embd), nn.Linear(n_embd, 2 * n_embd), nn.GELU(),
                                nn.Linear(2 * n_embd, n_embd))

    def forward(self, x, context):
        x = self.attention(x) + x
        x = self.cross_attention(x, context=context)  # BUG: residual-missing
        return self.ff(x) + x


# --- residual designs --------------------------------------------------------------------------

class PreNorm(_Block):
    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class PostNorm(_Block):
    def forward(self, x):
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.ff(x))


class EinsumPreNorm(PreNorm):
    attention = EinsumAttention
    feed_forward = GatedFeedForward


class FusedPreNorm(PreNorm):
    attention = FusedAttention


class Parallel(_Block):
    """Attention and feed-forward read the same normalised input, both added to it."""

    def forward(self, x):
        h = self.norm1(x)
        return x + self.attn(h) + self.ff(h)


class HighwayGated(_Block):
    """The skip weighed by a learned gate: (1 - g) * x + g * sublayer."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.gate = nn.Parameter(torch.zeros(n_embd))

    def forward(self, x):
        g = torch.sigmoid(self.gate)
        x = (1 - g) * x + g * self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class ScaledBranches(_Block):
    """A learned scale on each branch, one of them starting at zero, and a scaled skip."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.alpha = nn.Parameter(torch.zeros(1))
        self.gamma = nn.Parameter(1e-4 * torch.ones(n_embd))

    def forward(self, x):
        x = self.norm1(2.0 * x + self.alpha * self.attn(x))
        return x + self.gamma * self.ff(self.norm2(x))


class CrossAttending(_Block):
    """A decoder block: self-attention, attention to a context, a feed-forward, each skipped."""

    def forward(self, x, context):
        x = x + self.attn(self.norm1(x))
        x = x + self.attn(self.norm2(x), context=context)
        return x + self.ff(self.norm2(x))


class Layers(nn.Module):
    """Sublayers kept in a list and applied in turn with their skips, then a final norm."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.ModuleList([nn.Sequential(nn.LayerNorm(n_embd), SelfAttention(n_embd, n_head)),
                           nn.Sequential(nn.LayerNorm(n_embd), FeedForward(n_embd, 2 * n_embd))])
            for _ in range(2))
        self.norm = nn.LayerNorm(n_embd)

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return self.norm(x)


class TorchEncoderLayer(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(n_embd, n_head, 2 * n_embd, dropout=0.0,
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


# --- not blocks: nothing to carry -------------------------------------------------------------

class AttentionAlone(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attn = SelfAttention(n_embd, n_head)

    def forward(self, x):
        return self.attn(x)


class AttentionThenRegressionHead(nn.Module):
    """Attention, a norm, and an MLP head down to the two numbers predicted per token (its
    default output width): an output of another width has no skip to carry."""

    def __init__(self, embed_dim, hidden_dim, output_dim=2):
        super().__init__()
        self.attn = SelfAttention(embed_dim, 1)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Sequential(nn.Linear(embed_dim, hidden_dim), nn.GELU(),
                                  nn.Linear(hidden_dim, output_dim))

    def forward(self, x):
        return self.head(self.norm(self.attn(x)))


class ProjectedInAndOut(nn.Module):
    """An input layer, a block, an output layer: the input is projected before any sublayer."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.embed, self.head = nn.Linear(n_embd, n_embd), nn.Linear(n_embd, n_embd)
        self.block = PreNorm(n_embd, n_head)

    def forward(self, x):
        return self.head(self.block(self.embed(x)))


class ProjectedSkip(_Block):
    """A skip that goes through a projection of its own."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.skip = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        x = self.skip(x) + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class GatedOutputAttention(nn.Module):
    """An attention whose output is gated per head by a sigmoid of a projection of its input
    before the output projection: no feed-forward, no block."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.heads = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.gates = nn.Linear(n_embd, n_head)
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        g = torch.sigmoid(self.gates(x)).transpose(1, 2)[..., None]
        return self.out((out * g).transpose(1, 2).reshape(B, T, C))


class ScoreBiasNetwork(nn.Module):
    """A small network of the queries (linear, activation, linear) that makes a bias for each
    score: it steers where the attention looks and makes no output itself."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.heads = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.bias_in = nn.Linear(n_embd // n_head, 16)
        self.bias_out = nn.Linear(16, 1)
        self.out = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        bias = self.bias_out(F.gelu(self.bias_in(q)))  # (B, H, T, 1): one bias per query row
        scores = q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5 + bias * k.mean(-1)[:, :, None]
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
