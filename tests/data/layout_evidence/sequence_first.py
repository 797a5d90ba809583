"""Modules that take their sequences first, (T, B, C), with and without saying so, beside
batch-first ones: fixtures for layout evidence (checked with nothing declared)."""

import torch
from torch import nn


class LibraryAttentionBlock(nn.Module):
    """nn.MultiheadAttention at its default layout, the input handed to it as it comes: the
    block is time-first, though nothing in its own words says so."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, src, pos=None):
        query = src if pos is None else src + pos
        out, _ = self.attn(query, query, value=src, need_weights=False)
        return self.norm(src + out)


class BatchFirstIntoLibraryAttention(nn.Module):
    """Says batch-first (B, T, C) and hands that to nn.MultiheadAttention built time-first:
    it attends across the batch, a real bug."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead)

    def forward(self, x):
        B, T, C = x.shape
        out, _ = self.attn(x, x, x, need_weights=False)
        return out


class FoldedHeadsAttention(nn.Module):
    """Its own attention over (T, B, C), the batch size read from the second axis."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        tgt_len = x.size(0)
        bsz = x.size(1)
        width = x.size(2)
        head_dim = width // self.num_heads
        q, k, v = self.in_proj(x).chunk(3, dim=-1)
        q, k, v = (t.contiguous().view(tgt_len, bsz * self.num_heads, head_dim).transpose(0, 1)
                   for t in (q, k, v))
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * head_dim ** -0.5, dim=-1)
        out = torch.bmm(weights, v).transpose(0, 1).contiguous().view(tgt_len, bsz, width)
        return self.out_proj(out)


class MixesFirstAxis(nn.Module):
    """Normalises over the first axis and says nothing of its layout: over (B, T, C) that
    mixes samples, over (T, B, C) it is a pooling over time. Which one is a guess."""

    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return torch.softmax(self.score(x), dim=0) * x


class MixesBatchSaysBatchFirst(nn.Module):
    """The same normalisation, in a forward that unpacks (B, T, C): samples are mixed."""

    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        return torch.softmax(self.score(x), dim=0) * x


class PatternSaysBatchFirst(nn.Module):
    """An einops-style pattern names the axes (read, not run): batch first."""

    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, n_embd)
        self.layout = "b n d -> b n d"

    def forward(self, x):
        pattern = "b n d -> b n d"  # noqa: F841 - the author's words for the layout
        return torch.softmax(self.score(x), dim=0) * x


class UnpacksOnlyTheLength(nn.Module):
    """The same normalisation, in a forward that names only the length, second:
    ``_, seq_len, _ = x.size()`` says batch first as well."""

    def __init__(self, n_embd):
        super().__init__()
        self.score = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        _, seq_len, _ = x.size()
        return torch.softmax(self.score(x), dim=0) * x


class TriangleAddedInBatchFirstAttention(nn.Module):
    """A 0/1 float triangle handed to nn.MultiheadAttention is added to the scores, not used to
    mask them: every token sees the later ones. ``batch_first=True`` states the layout."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.register_buffer("tri", torch.tril(torch.ones(block_size, block_size)))
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, attn_mask=self.tri[:x.size(1), :x.size(1)])[0]


class BlockAroundBatchFirstAttention(nn.Module):
    """A block that says nothing of its layout; the attention inside it does."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.norm = nn.LayerNorm(n_embd)
        self.attn = TriangleAddedInBatchFirstAttention(n_embd, n_head, block_size)

    def forward(self, x):
        return x + self.attn(self.norm(x))


class TableCutByLengthAfterN(nn.Module):
    """``N, S, D = x.shape``, N the batch as some courses name it: positions cut to S."""

    def __init__(self, n_embd, max_len=64):
        super().__init__()
        self.register_buffer("pe", torch.randn(1, max_len, n_embd))

    def forward(self, x):
        N, S, D = x.shape
        return x + self.pe[:, :S, :]


class PaddedTimeFirstAttention(nn.Module):
    """Its own projections handed to the functional multi-head attention, time-first as its
    unpacking says, with a padding mask its docstring gives batch-first (as torch's is)."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.in_proj_weight = nn.Parameter(torch.randn(3 * embed_dim, embed_dim) * embed_dim ** -0.5)
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, key_padding_mask=None):
        """Input shape: Time x Batch x Channel

        Args:
            key_padding_mask: of shape `(batch, src_len)`, True at the padding.
        """
        tgt_len, bsz, embed_dim = query.size()
        out, _ = nn.functional.multi_head_attention_forward(
            query, key, value, embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            None, None, False, 0.0, self.out_proj.weight, self.out_proj.bias,
            key_padding_mask=key_padding_mask, need_weights=False)
        return out


class PaddedLibraryBlock(nn.Module):
    """nn.MultiheadAttention at its default layout with a padding mask handed on as
    ``key_padding_mask``: one flag per key for each sample, (B, T), in either layout."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, nhead)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, pad_mask):
        out, _ = self.attn(x, x, x, key_padding_mask=pad_mask, need_weights=False)
        out = out * (~pad_mask).transpose(0, 1)[..., None]
        return self.norm(x + out)


def attend_time_first(query, in_proj, out_proj, num_heads):
    """A functional attention over (T, B, C), as torch's own is written."""
    tgt_len, bsz, embed_dim = query.size()
    head_dim = embed_dim // num_heads
    q, k, v = in_proj(query).chunk(3, dim=-1)
    q, k, v = (t.contiguous().view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
               for t in (q, k, v))
    weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * head_dim ** -0.5, dim=-1)
    out = torch.bmm(weights, v).transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
    return out_proj(out)


class HelperReadsTimeFirst(nn.Module):
    """Says nothing of the layout itself: the helper it hands its input to unpacks it."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query):
        return attend_time_first(query, self.in_proj, self.out_proj, self.num_heads)


class LayerAroundHelperAttention(nn.Module):
    """A post-norm layer around it, which says nothing either: its attention does."""

    def __init__(self, d_model, nhead):
        super().__init__()
        self.self_attn = HelperReadsTimeFirst(d_model, nhead)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, src):
        return self.norm(src + self.self_attn(src))



class SinusoidTable(nn.Module):
    """A sinusoidal table of (max_len, 1, C), time-first as the PyTorch tutorial keeps it."""

    def __init__(self, d_model=16, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        rates = torch.exp(torch.arange(0, d_model, 2) * (-9.21 / d_model))
        table = torch.zeros(max_len, 1, d_model)
        table[:, 0, 0::2] = torch.sin(position * rates)
        table[:, 0, 1::2] = torch.cos(position * rates)
        self.register_buffer("pe", table)


class TableAfterSwap(SinusoidTable):
    """The table added to a batch-first input swapped to time-first first: cut by
    ``x.size(0)`` after ``x = x.transpose(0, 1)``, it says the input comes batch-first,
    whatever the docstring left from a time-first version says."""

    def forward(self, x):
        """x: Tensor, shape [seq_len, batch_size, embedding_dim]"""
        x = x.transpose(0, 1)
        x = x + self.pe[:x.size(0)]
        return x.transpose(0, 1)


class TableCutByBatch(SinusoidTable):
    """The table cut by the batch: no swap before the cut, ``x.size(0)`` of the batch-first
    input its unpacking states."""

    def forward(self, x):
        """x: (batch, seq_len, d_model)"""
        B, T, C = x.shape
        return x + self.pe[:x.size(0)]


class TiledMaskEncoder(nn.Module):
    """Time-first layers; a pairwise mask (B, N, N) tiled over the heads: its batch-first
    unpacking says nothing of how the sequences come."""

    def __init__(self, d_model, nhead, num_layers=2):
        super().__init__()
        self.nhead = nhead
        self.layers = nn.ModuleList(nn.MultiheadAttention(d_model, nhead)
                                    for _ in range(num_layers))

    def forward(self, src, mask=None):
        if mask is not None:
            bsz, n, n = mask.shape
            mask = mask.unsqueeze(1).repeat(1, self.nhead, 1, 1).view(bsz * self.nhead, n, n)
        for layer in self.layers:
            src = src + layer(src, src, src, attn_mask=mask)[0]
        return src
