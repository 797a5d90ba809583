"""One buggy and one correct module for each rule that no example in examples/ covers.

Each buggy module marks the line a rule must point at with ``# BUG: <rule>``.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _heads(x, n_head):
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)


class MaskAfterSoftmax(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(k.size(-1)), dim=-1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(future, 0.0)  # BUG: unnormalized-attention
        y = att @ v
        return y.transpose(1, 2).reshape(B, T, C)


class MaskBeforeSoftmax(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = F.softmax(att.masked_fill(future, float("-inf")), dim=-1)
        y = att @ v
        return y.transpose(1, 2).reshape(B, T, C)


class TinyFillValue(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        att = att.masked_fill(future, -1e-9)  # BUG: causal-leak (a fill too small to hide the future)
        att = F.softmax(att, dim=-1)
        y = att @ v  # the first op whose output mixes in later positions
        return y.transpose(1, 2).reshape(B, T, C)


class SeqFirstMHA(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads)  # BUG: batch-leak (no batch_first)

    def forward(self, x):
        out, _ = self.mha(x, x, x)  # used here, as (T, B, C)
        return out


class BatchFirstMHA(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        out, _ = self.mha(x, x, x)
        return out


class DropoutAlwaysOn(nn.Module):
    def __init__(self, n_embd, dropout=0.1):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.p = dropout

    def forward(self, x):
        return F.dropout(self.proj(x), p=self.p)  # BUG: nondeterministic-eval


class DropoutFollowsMode(nn.Module):
    def __init__(self, n_embd, dropout=0.1):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.p = dropout

    def forward(self, x):
        return F.dropout(self.proj(x), p=self.p, training=self.training)


class FullyMaskedRow(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.q = nn.Linear(n_embd, n_embd)
        self.k = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        T = x.shape[1]
        att = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.shape[-1])
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)  # row 0 keeps nothing
        att = F.softmax(att.masked_fill(~keep, float("-inf")), dim=-1)  # BUG: non-finite
        return att @ x


class FiniteMaskedRow(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.q = nn.Linear(n_embd, n_embd)
        self.k = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        T = x.shape[1]
        att = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(x.shape[-1])
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~keep, float("-inf")), dim=-1)
        return att @ x


class KeyNotTransposed(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(1, 2)  # BUG: op-failed
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class PositionsAddedInPlace(nn.Module):
    def __init__(self, n_embd, block_size):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(block_size, n_embd) * 0.02)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        x += self.pos[: x.shape[1]]  # BUG: input-mutated
        return self.proj(x)


class PositionsAdded(nn.Module):
    def __init__(self, n_embd, block_size):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(block_size, n_embd) * 0.02)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        x = x + self.pos[: x.shape[1]]
        return self.proj(x)


class TiledKVHeads(nn.Module):
    """Grouped-query attention with its key/value heads tiled instead of repeated in place."""

    def __init__(self, n_embd, n_head, n_kv_head=2):
        super().__init__()
        self.n_head, self.n_kv_head, self.d = n_head, n_kv_head, n_embd // n_head
        self.q = nn.Linear(n_embd, n_embd)
        self.kv = nn.Linear(n_embd, 2 * n_kv_head * self.d)

    def heads(self, x):
        B, T, C = x.shape
        q = _heads(self.q(x), self.n_head)
        k, v = self.kv(x).view(B, T, 2, self.n_kv_head, self.d).permute(2, 0, 3, 1, 4)
        return q, k, v, self.n_head // self.n_kv_head

    def forward(self, x):
        q, k, v, G = self.heads(x)
        k = k.repeat(1, G, 1, 1)  # BUG: head-grouping
        v = v.repeat_interleave(G, dim=1)
        y = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1) @ v
        return y.transpose(1, 2).flatten(2)


class InterleavedKVHeads(TiledKVHeads):
    def forward(self, x):
        q, k, v, G = self.heads(x)
        k = k.repeat_interleave(G, dim=1)
        v = v.repeat_interleave(G, dim=1)
        y = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1) @ v
        return y.transpose(1, 2).flatten(2)


class StarterPlaceholder(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        return torch.empty(x.shape)  # BUG: not-implemented
class PositionBiasTwice(nn.Module):
    """A learned bias per head and key position on the scores, added a second time."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.bias = nn.Parameter(torch.randn(n_head, 1, 64))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        bias = self.bias[..., :T]
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1)) + bias
        att = att + bias  # BUG: attention-textbook
        y = F.softmax(att, dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)


class PositionBiasOnce(PositionBiasTwice):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1)) + self.bias[..., :T]
        y = F.softmax(att, dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)


class PoolingOverScoreAxis(nn.Module):
    """Attention pooling whose softmax runs over the (B, T, 1) scores' size-1 axis."""

    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, 1)

    def forward(self, x):
        w = F.softmax(self.score(x), dim=-1)  # BUG: constant-result
        return (w * x).sum(dim=1)


class PoolingOverPositions(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, 1)

    def forward(self, x):
        w = F.softmax(self.score(x), dim=1)
        return (w * x).sum(dim=1)


class ScaleFoldedIntoWeight(nn.Module):
    """Folds a learned gain into the projection's weight in place: again on every call."""

    def __init__(self, n_embd):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.gain = nn.Parameter(torch.full((n_embd,), 0.05))

    def forward(self, x):
        self.proj.weight.data.add_(torch.diag(self.gain.data))  # BUG: stateful-forward
        return self.proj(x)


class ScaleAppliedToOutput(ScaleFoldedIntoWeight):
    def forward(self, x):
        return self.proj(x) + x * self.gain


class BranchGatedByZeros(nn.Module):
    """The feed-forward branch is gated by a buffer made of zeros where ones were meant."""

    def __init__(self, n_embd):
        super().__init__()
        self.norm = nn.LayerNorm(n_embd)
        self.ff = nn.Sequential(nn.Linear(n_embd, 2 * n_embd), nn.GELU(), nn.Linear(2 * n_embd, n_embd))
        self.register_buffer("keep", torch.zeros(n_embd))

    def forward(self, x):
        return x + self.ff(self.norm(x)) * self.keep  # BUG: weight-without-effect


class BranchAdded(BranchGatedByZeros):
    def forward(self, x):
        return x + self.ff(self.norm(x))


class SpareLayerTouched(BranchAdded):
    """A layer kept for later, touched with `0 * weight.sum()` so a distributed wrapper sees it
    used: no effect, on purpose."""

    def __init__(self, n_embd):
        super().__init__(n_embd)
        self.spare = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return x + self.ff(self.norm(x)) + 0.0 * self.spare.weight.sum()


class PaddingMaskNeverApplied(nn.Module):
    """Takes the padding mask and never applies it."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        y = F.softmax(att, dim=-1) @ v  # BUG: mask-ignored
        return y.transpose(1, 2).reshape(B, T, C)


class PaddingMaskApplied(PaddingMaskNeverApplied):
    def forward(self, x, attention_mask):
        B, T, C = x.shape
        q, k, v = (_heads(t, self.n_head) for t in self.qkv(x).split(C, dim=2))
        att = q @ k.transpose(-2, -1) / math.sqrt(k.size(-1))
        att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)


class BlockInputOverwritten(nn.Module):
    """The feed-forward output is written over ``x`` before the skip connection."""

    def __init__(self, n_embd):
        super().__init__()
        self.norm = nn.LayerNorm(n_embd)
        self.ff = nn.Sequential(nn.Linear(n_embd, 2 * n_embd), nn.GELU(), nn.Linear(2 * n_embd, n_embd))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.ff(self.norm(x))
        return x + self.drop(x)  # BUG: residual-of-itself


class BlockInputKept(BlockInputOverwritten):
    def forward(self, x):
        h = self.ff(self.norm(x))
        return x + self.drop(h)


def _rotate_halves(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryNeighboursTable(nn.Module):
    """Rotates the halves of each head with a table that repeats each angle for neighbours."""

    interleaved = True

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).permute(2, 0, 3, 1, 4)
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        freqs = torch.outer(torch.arange(T).float(), inv)
        if self.interleaved:
            emb = freqs.repeat_interleave(2, dim=-1)  # BUG: rotary-pairing
        else:
            emb = torch.cat((freqs, freqs), -1)
        q = q * emb.cos() + _rotate_halves(q) * emb.sin()
        k = k * emb.cos() + _rotate_halves(k) * emb.sin()
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


class RotaryHalvesTable(RotaryNeighboursTable):
    interleaved = False

def _rotate_time_first(x, cos, sin):
    """Rotary positions for (T, B, H, d) tensors: one row of the tables per position."""
    n = x.shape[0]
    return x * cos[:n, None, None] + _rotate_halves(x) * sin[:n, None, None]  # BUG: positions-ignored


class RotaryTableCutToBatch(nn.Module):
    """q and k are (B, T, H, d), handed to a rotary helper written for time-first tensors: the
    tables are cut to B rows and spread along the batch."""

    time_first = False

    def __init__(self, n_embd, n_head, max_len=64):
        super().__init__()
        self.n_head, self.max_len = n_head, max_len
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, d).unbind(2)
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        freqs = torch.outer(torch.arange(self.max_len).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        if self.time_first:
            q, k = (_rotate_time_first(t.transpose(0, 1), cos, sin).transpose(0, 1) for t in (q, k))
        else:
            q, k = (_rotate_time_first(t, cos, sin) for t in (q, k))
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                           is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


class RotaryTableCutToTokens(RotaryTableCutToBatch):
    time_first = True


class _AddsItsInput(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class SkipAddedTwice(nn.Module):
    """Blocks wrapped in a residual that adds its input, and the skip added again."""

    again = True

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.blocks = nn.ModuleList(
            _AddsItsInput(nn.Sequential(nn.LayerNorm(n_embd), nn.Linear(n_embd, n_embd)))
            for _ in range(2))

    def forward(self, x):
        for block in self.blocks:
            if self.again:
                x = block(x) + x  # BUG: residual-twice
            else:
                x = block(x)
        return x


class SkipAddedOnce(SkipAddedTwice):
    again = False


class TableExponentPrecedence(nn.Module):
    """A position table whose frequencies lost the exponent's parentheses."""

    grouped = False

    def __init__(self, n_embd, max_len=64):
        super().__init__()
        steps = torch.arange(0, n_embd, 2).float()
        if self.grouped:
            inv = 1.0 / (10000 ** (steps / n_embd))
        else:
            inv = 1.0 / (10000 ** steps / n_embd)  # BUG: position-frequencies
        angles = torch.outer(torch.arange(max_len).float(), inv)
        self.register_buffer("table", torch.cat((angles.sin(), angles.cos()), -1)[:, :n_embd])

    def forward(self, x):
        return x + self.table[: x.shape[1]]


class TableExponentGrouped(TableExponentPrecedence):
    grouped = True


class NormTimesItsRms(nn.Module):
    """A root-mean-square norm that multiplies by the RMS it should divide by."""

    def __init__(self, n_embd, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))

    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x / torch.rsqrt(ms + self.eps))  # BUG: inverted-norm


class NormOverItsRms(NormTimesItsRms):
    def forward(self, x):
        ms = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(ms + self.eps))


class _AttentionAndFeedForward(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(n_embd, 2 * n_embd), nn.GELU(), nn.Linear(2 * n_embd, n_embd))
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)


class BlockWithoutSkip(_AttentionAndFeedForward):
    """The attention's output handed on with no skip around it or the feed-forward."""

    def forward(self, x):
        h = self.ln1(x)
        h = self.attn(h, h, h, need_weights=False)[0]  # BUG: residual-missing
        return h + self.ff(self.ln2(h))


class BlockWithSkips(_AttentionAndFeedForward):
    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class NormWithFlagForEps(nn.Module):
    """A LayerNorm handed a bias flag where its epsilon goes."""

    def __init__(self, n_embd, use_bias=True):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln = nn.LayerNorm(n_embd, use_bias)  # BUG: norm-epsilon

    def forward(self, x):
        return self.ln(self.proj(x))


class NormWithFlagByName(NormWithFlagForEps):
    def __init__(self, n_embd, use_bias=True):
        super().__init__(n_embd, use_bias)
        self.ln = nn.LayerNorm(n_embd, bias=use_bias)


class _SummaryBlock(nn.Module):
    def __init__(self, n_embd, n_head, causal):
        super().__init__()
        self.n_head, self.causal = n_head, causal
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (z.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for z in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return x + self.proj(y.transpose(1, 2).reshape(B, T, C))


class SummaryOfCausalEncoder(nn.Module):
    """A summary token put first, then causal attention: it sees only itself."""

    def __init__(self, n_embd, n_head, causal=True):
        super().__init__()
        self.summary = nn.Parameter(torch.randn(1, 1, n_embd))
        self.block = _SummaryBlock(n_embd, n_head, causal)

    def forward(self, x):
        x = self.block(torch.cat([self.summary.expand(len(x), 1, -1), x], dim=1))
        return x[:, 0]  # BUG: input-ignored


class SummaryOfEncoder(SummaryOfCausalEncoder):
    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head, causal=False)


class ContextBeforeNorm(nn.Module):
    """Pre-norm attention over a context that defaults to the block's own input: the default is
    taken before the norm, so keys and values read the stream the queries see normalised."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.norm = nn.LayerNorm(n_embd)
        self.to_q = nn.Linear(n_embd, n_embd, bias=False)
        self.to_kv = nn.Linear(n_embd, 2 * n_embd, bias=False)
        self.to_out = nn.Linear(n_embd, n_embd)

    def forward(self, x, context=None):
        context = x if context is None else context  # BUG: norm-bypassed
        x = self.norm(x)
        q = _heads(self.to_q(x), self.n_head)
        k, v = (_heads(t, self.n_head) for t in self.to_kv(context).chunk(2, dim=-1))
        y = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v
        return self.to_out(y.transpose(1, 2).reshape(x.shape))


class ContextAfterNorm(ContextBeforeNorm):
    def forward(self, x, context=None):
        x = self.norm(x)
        context = x if context is None else context
        q = _heads(self.to_q(x), self.n_head)
        k, v = (_heads(t, self.n_head) for t in self.to_kv(context).chunk(2, dim=-1))
        y = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v
        return self.to_out(y.transpose(1, 2).reshape(x.shape))


class FeedForwardWithoutActivation(nn.Module):
    """A feed-forward whose activation was left out: one linear map through a wider middle."""

    def __init__(self, n_embd):
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return x + self.proj(self.fc(x))  # BUG: linear-collapse


class FeedForwardWithActivation(FeedForwardWithoutActivation):
    def forward(self, x):
        return x + self.proj(F.gelu(self.fc(x)))
