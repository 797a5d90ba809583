"""Modules whose guessed inputs must follow what the code shows: weights kept in bfloat16, a
memory mask read per sample, attention weights returned beside the output that a dropout draws."""

import typing

import torch
import torch.nn as nn
import torch.nn.functional as F


class HalfPrecisionBlock(nn.Module):
    """Weights kept in bfloat16 (its norm's scale in float32): its callers feed bfloat16."""

    def __init__(self, n_embd):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n_embd, dtype=torch.float32))
        self.up = nn.Linear(n_embd, 2 * n_embd, dtype=torch.bfloat16)
        self.down = nn.Linear(2 * n_embd, n_embd, dtype=torch.bfloat16)

    def forward(self, x):
        t = x.float()
        t = (t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * self.scale).to(x.dtype)
        return x + self.down(F.gelu(self.up(t)))


class MemoryMaskPerSample(nn.Module):
    """Cross-attention whose memory_mask is one row per sample (B, S), moved by the code."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.n_head = n_head
        self.q = nn.Linear(n_embd, n_embd)

    def forward(self, tgt, memory, memory_mask):
        q = self.q(tgt)
        scores = q @ memory.transpose(1, 2) / q.shape[-1] ** 0.5
        scores = scores.masked_fill(~memory_mask.unsqueeze(1).bool(), float("-inf"))
        return scores.softmax(-1) @ memory


class WeightsReturnedAfterDropout(nn.Module):
    """Returns its attention weights after a dropout that ignores eval (a real finding:
    nondeterministic-eval), and a padding mask that never mixes samples."""

    def __init__(self, n_embd):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(1, 2) / q.shape[-1] ** 0.5
        scores = scores.masked_fill(~mask[:, None, :].bool(), -1e9)
        weights = F.dropout(scores.softmax(-1), p=0.1)
        return weights @ v, weights


class ChannelScale(nn.Module):
    """A learned value per channel, its count named by nothing shapetrace knows."""

    def __init__(self, chans: int, init: float = 0.1):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(chans) * init)

    def forward(self, x):
        return self.scale * x


class GroupNormTimeLast(nn.GroupNorm):
    """A group norm over (B, T, C), its arguments handed on to torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

    def forward(self, x):
        return super().forward(x.transpose(1, 2)).transpose(1, 2)


class LeakyScores(nn.Module):
    """A slope nothing names, handed to torch's LeakyReLU."""

    def __init__(self, n_embd, slope):
        super().__init__()
        self.slope = slope
        self.proj = nn.Linear(n_embd, n_embd)
        self.act = nn.LeakyReLU(self.slope)

    def forward(self, x):
        return self.act(self.proj(x))


class LayerOfRoundHeads(nn.Module):
    """A layer whose own check asks for a head size divisible by 8."""

    def __init__(self, d_model: int, nhead: int):
        super().__init__()
        head_dim = d_model // nhead
        if head_dim % 8:
            raise ValueError(f"head_dim (d_model / nhead = {head_dim}) must be divisible by 8")
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        return x + self.attn(x, x, x, need_weights=False)[0]


class StackOfLayers(nn.Module):
    """Copies of a layer handed in built."""

    def __init__(self, layer: LayerOfRoundHeads, num_layers: int = 2):
        super().__init__()
        import copy

        self.layers = nn.ModuleList(copy.deepcopy(layer) for _ in range(num_layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class BlockWithPositions(nn.Module):
    """A block fed a padding mask and a table of relative positions its encoder makes."""

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.pos_proj = nn.Linear(d_model, n_head, bias=False)

    def forward(self, x, mask, pos):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / (C // self.n_head) ** 0.5
        offsets = self.pos_proj(pos[:, T - 1: 2 * T - 1])  # (1, T, H): one per key
        scores = scores + offsets.permute(0, 2, 1)[:, :, None, :]
        scores = scores.masked_fill(~mask[:, None, None, :], -1e9)
        return x + (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)


class EncoderWithPositions(nn.Module):
    def __init__(self, d_model, n_head, n_layers=2):
        super().__init__()
        self.d_model = d_model
        self.blocks = nn.ModuleList(BlockWithPositions(d_model, n_head) for _ in range(n_layers))

    def forward(self, x, mask):
        T = x.size(1)
        steps = torch.arange(-(T - 1), T).float()[:, None]
        freqs = torch.exp(torch.arange(0, self.d_model, 2).float() * (-9.2 / self.d_model))
        pos = torch.cat((torch.sin(steps * freqs), torch.cos(steps * freqs)), -1)[None, :, : self.d_model]
        for block in self.blocks:
            x = block(x, mask, pos)
        return x


class WidthsPerLevel(nn.Module):
    """Convolutions whose widths double per level: at the probe width, too many parameters."""

    def __init__(self, base_channels, mults=(1, 2, 4, 8, 16, 32)):
        super().__init__()
        self.stem = nn.Conv2d(3, base_channels, 3, padding=1)
        widths = [base_channels * m for m in mults]
        self.levels = nn.ModuleList(
            nn.Sequential(nn.Conv2d(a, b, 3, padding=1), nn.ReLU(), nn.Conv2d(b, b, 3, padding=1))
            for a, b in zip([base_channels, *widths[:-1]], widths))

    def forward(self, x):
        x = self.stem(x)
        for level in self.levels:
            x = level(x)
        return x


class _SplitByDefault(nn.Module):
    """Heads counted by a parameter no table names (``head``), kept at its default of 8: the
    width shapetrace chooses must split into 8."""

    def __init__(self, feats: int, head: int = 8):
        super().__init__()
        self.head, self.feats = head, feats
        self.qkv = nn.Linear(feats, 3 * feats)
        self.o = nn.Linear(feats, feats)

    def forward(self, x):
        b, n, f = x.size()
        q, k, v = (t.view(b, n, self.head, f // self.head).transpose(1, 2)
                   for t in self.qkv(x).chunk(3, dim=-1))
        w = torch.softmax(q @ k.transpose(-2, -1) / (f // self.head) ** 0.5, dim=-1)
        return self.o((w @ v).transpose(1, 2).flatten(2))


class EncoderHandingOnItsHeads(nn.Module):
    """A block that hands its own default head count on to its attention."""

    def __init__(self, feats: int, hidden: int, head: int = 8):
        super().__init__()
        self.norm = nn.LayerNorm(feats)
        self.attn = _SplitByDefault(feats, head=head)
        self.mlp = nn.Sequential(nn.Linear(feats, hidden), nn.GELU(), nn.Linear(hidden, feats))

    def forward(self, x):
        x = x + self.attn(self.norm(x))
        return x + self.mlp(x)


class EdgesOrAdjacency(nn.Module):
    """Node features attend with a bias from edge features, given as edges or as an adjacency
    matrix: both optional, each standing in as the number 0 when left out, and one of them
    needed (the caller's to pass)."""

    def __init__(self, dim):
        super().__init__()
        self.to_qk = nn.Linear(dim, 2 * dim)
        self.edge_bias = nn.Linear(dim, 1)
        self.adj_emb = nn.Embedding(2, dim)

    def forward(self, nodes, edges=None, adj=None):
        edges_in = (edges if edges is not None else 0) + \
            (self.adj_emb(adj.long()) if adj is not None else 0)
        q, k = self.to_qk(nodes).chunk(2, dim=-1)
        scores = q @ k.transpose(-2, -1) + self.edge_bias(edges_in).squeeze(-1)
        return scores.softmax(-1) @ nodes


class EdgeFeatureAttention(nn.Module):
    """Graph attention whose keys and values take one edge feature per pair of nodes, which
    only the way the edges meet the keys says (heads folded into the batch, whatever the axes
    before the features); nothing else gives their shape."""

    def __init__(self, dim, heads=2, edge_dim=None):
        super().__init__()
        self.heads = heads
        self.to_q, self.to_kv = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim)
        edge_dim = edge_dim if edge_dim is not None else dim
        self.edges_to_kv = nn.Linear(edge_dim, dim)
        self.to_out = nn.Linear(dim, dim)

    def split(self, t):
        *lead, c = t.shape
        t = t.reshape(*lead, self.heads, c // self.heads).movedim(-2, 1)
        return t.reshape(-1, *t.shape[2:])  # (b h) ... d

    def forward(self, nodes, edges, mask=None):
        b, n, c = nodes.shape
        q = self.split(self.to_q(nodes))
        k, v = map(self.split, self.to_kv(nodes).chunk(2, -1))
        e = self.split(self.edges_to_kv(edges))
        k, v = k[:, None] + e, v[:, None] + e
        w = torch.einsum("bid,bijd->bij", q, k).mul(q.shape[-1] ** -0.5).softmax(-1)
        out = torch.einsum("bij,bijd->bid", w, v)
        out = out.reshape(b, self.heads, n, -1).transpose(1, 2).reshape(b, n, c)
        return self.to_out(out)


class TwoHeadSmoother(nn.Module):
    """torch's attention with two heads written in: its own check asks the width to divide
    by 2, in words without the number."""

    def __init__(self, d_model):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, 2, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        return self.norm(x + self.attn(x, x, x, need_weights=False)[0])


class _OldStyleLayer(nn.Module):
    """An encoder layer written for a torch whose encoder passed no is_causal."""

    def __init__(self, d_model):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, 1, batch_first=True)
        self.ff = nn.Linear(d_model, d_model)

    def forward(self, src, src_mask=None, src_key_padding_mask=None):
        src = src + self.self_attn(src, src, src, attn_mask=src_mask,
                                   key_padding_mask=src_key_padding_mask, need_weights=False)[0]
        return src + self.ff(src)


class StackOfOldStyleLayers(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.stack = nn.TransformerEncoder(_OldStyleLayer(d_model), num_layers=2,
                                           enable_nested_tensor=False)

    def forward(self, x):
        return self.stack(x)


class GatedSkip(nn.Module):
    """A gate between a block's output and the stream it skipped: ``res`` is named for nothing,
    and is the stream's shape because forward sets it beside ``x``."""

    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Linear(3 * dim, 1)

    def forward(self, x, res):
        g = self.gate(torch.cat((x, res, x - res), dim=-1)).sigmoid()
        return x * g + res * (1 - g)


class NamedActivationMlp(nn.Module):
    """An activation given by its name in torch.nn, and a chunk size typed as an optional
    number that forward falls back from when it is None."""

    def __init__(self, dim, mult, activation: str):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, mult * dim), getattr(nn, activation)(),
                                 nn.Linear(mult * dim, dim))

    def forward(self, x, chunk: typing.Optional[int]):
        chunk = chunk or x.shape[0]
        return torch.cat([self.net(part) for part in x.split(chunk, dim=0)], dim=0)


class TemperedAttention(nn.Module):
    """Attention scaled by a temperature its caller chooses."""

    def __init__(self, dim, temperature):
        super().__init__()
        self.temperature = temperature
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(-2, -1) / self.temperature, dim=-1) @ v


class CaptionDecoder(nn.Module):
    """A caption model given its vocabulary as a dict: its size and its padding word's id are
    read from it."""

    def __init__(self, word_to_id, feature_dim, dim):
        super().__init__()
        self.pad = word_to_id["<PAD>"]
        self.embed = nn.Embedding(len(word_to_id), dim, padding_idx=self.pad)
        self.visual = nn.Linear(feature_dim, dim)
        self.out = nn.Linear(dim, len(word_to_id))

    def forward(self, features, captions):
        h = self.embed(captions) + self.visual(features).unsqueeze(1)
        return self.out(h)


class KeepsACountItNeverReads(nn.Module):
    """A count stored for the training script (``self.n_users``) that no code of the module
    reads: any value builds it."""

    def __init__(self, n_users, dim):
        super().__init__()
        self.n_users = n_users
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class PairedFeaturesTable(nn.Module):
    """A constructor that refuses an odd width in words of its own ("a multiple of 2")."""

    def __init__(self, dim):
        super().__init__()
        if dim % 2:
            raise ValueError(f"Input dimension must be a multiple of 2, but got {dim}")
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class HandRolledHeads(nn.Module):
    """Weights made axis by axis, each head's features sized by ``c`` (no name says it)."""

    def __init__(self, dim, n_head, c, gated: bool):
        super().__init__()
        self.c, self.gated = c, gated
        self.qkv = nn.Parameter(torch.randn(dim, n_head, 3 * c) * dim ** -0.5)
        self.gate = nn.Parameter(torch.zeros(n_head, (gated + 1) * c))
        self.out = nn.Parameter(torch.randn(n_head, c, dim) * (n_head * c) ** -0.5)

    def forward(self, x):
        q, k, v = torch.einsum("btc,chf->bhtf", x, self.qkv).split(self.c, dim=-1)
        w = torch.softmax(q @ k.transpose(-2, -1) * self.c ** -0.5, dim=-1)
        return torch.einsum("bhtf,hfc->btc", w @ v, self.out)


class SharedPositionTable(nn.Module):
    """Relative attention handed a position table beside the data, one for every sample
    (``table[:, :T]`` of a (1, L, C) buffer its caller keeps): the table's rows are folded into
    positions per head (``view(-1, heads, d)``), which only a table of one row per position
    fits; nothing else gives its shape."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.pos = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, rel_table):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, self.head_dim).transpose(1, 2)
                   for z in self.qkv(x).chunk(3, dim=-1))
        p = self.pos(rel_table).view(-1, self.heads, self.head_dim).transpose(0, 1)
        content = torch.einsum("bhqd,bhkd->bhqk", q, k)
        position = torch.einsum("bhqd,hkd->bhqk", q, p)
        w = ((content + position) / self.head_dim ** 0.5).softmax(dim=-1)
        y = torch.einsum("bhqk,bhkd->bhqd", w, v)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class RewardConditioned(nn.Module):
    """A causal sequence model conditioned on one scalar per step (a reward still to come,
    embedded by ``nn.Linear(1, C)``) beside the step's features; its mask is a square of a
    length the constructor takes under a name of its own (``horizon``)."""

    def __init__(self, feat_dim, n_embd, n_head, horizon):
        super().__init__()
        self.n_head = n_head
        self.features = nn.Linear(feat_dim, n_embd)
        self.reward = nn.Linear(1, n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.register_buffer("mask", torch.tril(torch.ones(horizon, horizon)))

    def forward(self, steps, reward_to_go):
        B, T, _ = steps.shape
        h = self.features(steps) + self.reward(reward_to_go)
        q, k, v = (t.view(B, T, self.n_head, -1).transpose(1, 2)
                   for t in self.qkv(h).chunk(3, dim=-1))
        scores = (q @ k.transpose(-2, -1)) / q.shape[-1] ** 0.5
        scores = scores.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        return h + (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, -1)


class LearnedRowsAdded(nn.Module):
    """A learned table of one row per patch, added uncut: the count of rows, taken under a
    name of its own (``n_rows``), is read as the length by the table it shapes."""

    def __init__(self, patch_len, width, n_rows):
        super().__init__()
        self.embed = nn.Linear(patch_len, width)
        self.rows = nn.Parameter(torch.randn(1, n_rows, width) * 0.02)

    def forward(self, patches):
        return self.embed(patches) + self.rows


class Features(dict):
    """A graph's tensors by name, read as attributes."""

    def __getattr__(self, key):
        return self[key]


class TakesAFeatureDict(nn.Module):
    """Its input is a dict of a graph's tensors (nodes, edges), copied into a record of its own
    first; nothing in the code says so but that copy."""

    def __init__(self, width):
        super().__init__()
        self.nodes = nn.Linear(width, width)

    def forward(self, inputs):
        g = Features(inputs)
        return self.nodes(g.node_features)


class ProjectedPooler(nn.Module):
    """A width that also sizes a projection matrix held as a parameter, ``(width, out_dim)``:
    the matrix is no table of positions."""

    def __init__(self, width, out_dim):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.proj = nn.Parameter(width ** -0.5 * torch.randn(width, out_dim))

    def forward(self, x):
        return self.norm(x).mean(dim=1) @ self.proj
