"""Modules whose sizes only their own code states: no annotation, no dataclass, no flags."""

import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class NamespaceAttention(nn.Module):
    """Reads its sizes from a config object by attribute; the config type is never named."""

    def __init__(self, settings):
        super().__init__()
        self.heads = settings.n_head
        self.qkv = nn.Linear(settings.n_embd, 3 * settings.n_embd)
        self.proj = nn.Linear(settings.n_embd, settings.n_embd)
        self.drop = nn.Dropout(settings.attn_pdrop)
        if settings.tag is not None:  # an optional field: None is a fine value
            self.tag = settings.tag

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))


class NamespaceBlock(nn.Module):
    """Hands its config on to the attention: the fields are read there."""

    def __init__(self, settings):
        super().__init__()
        self.norm = nn.LayerNorm(settings.n_embd)
        self.attn = NamespaceAttention(settings)

    def forward(self, x):
        return x + self.attn(self.norm(x))


class DictModel(nn.Module):
    """Reads its sizes from a dict by key."""

    def __init__(self, table):
        super().__init__()
        self.embed = nn.Embedding(table["vocab_size"], table["emb_dim"])
        self.attn = nn.MultiheadAttention(table["emb_dim"], table["n_heads"], batch_first=True)
        self.head = nn.Linear(table["emb_dim"], table["vocab_size"], bias=table.get("bias", False))

    def forward(self, idx):
        x = self.embed(idx)
        y, _ = self.attn(x, x, x, need_weights=False)
        return self.head(y)


class StateAttention(nn.Module):
    """``n_state`` says nothing by its name; the layers it is handed to say it is the width."""

    def __init__(self, n_state: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)
        self.out = nn.Linear(n_state, n_state)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (f(x).view(B, T, self.n_head, -1).transpose(1, 2)
                   for f in (self.query, self.key, self.value))
        w = (q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)).softmax(-1)
        return self.out((w @ v).transpose(1, 2).reshape(B, T, C))


class StateStack(nn.Module):
    """``n_vocab`` sizes an embedding, ``n_state`` a width, ``n_block`` a count of layers."""

    def __init__(self, n_vocab, n_state, n_head, n_block):
        super().__init__()
        self.embed = nn.Embedding(n_vocab, n_state)
        self.blocks = nn.ModuleList(StateAttention(n_state, n_head) for _ in range(n_block))

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = x + block(x)
        return x


class LayersBase(nn.Module):
    def __init__(self, dim, heads=4, causal=False, depth=None):
        super().__init__()
        assert depth is not None, "depth is required"
        self.causal = causal
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
            for _ in range(depth))

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1)) if self.causal else None
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=self.causal)
        return x


class KeywordsOnward(LayersBase):
    """Takes only ``**kwargs`` and hands them to its base class."""

    def __init__(self, **kwargs):
        super().__init__(causal=False, **kwargs)


class OptionalPathsConfig(nn.Module):
    """Arguments that name where weights come from, typed to allow None, without a default."""

    def __init__(self, dim, from_pretrained: str | None, cache_dir: "Optional[str]"):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        if from_pretrained is not None:
            self.load_state_dict(torch.load(from_pretrained))

    def forward(self, x):
        return self.proj(x)


class ChunkedApply(nn.Module):
    """Applies a module to chunks of its input along an axis that only its caller names."""

    def __init__(self, chunks, fn, along_dim=-1):
        super().__init__()
        self.chunks, self.fn, self.dim = chunks, fn, along_dim

    def forward(self, x):
        return torch.cat([self.fn(c) for c in x.chunk(self.chunks, dim=self.dim)], dim=self.dim)


class WideFeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        return self.net(x)


class ChunkedFeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = ChunkedApply(10, WideFeedForward(dim), along_dim=-2)

    def forward(self, x):
        return x + self.ff(x)


class ActivatedConv(nn.Module):
    """Builds the layer class it is handed; only its caller says which."""

    def __init__(self, channels, ratio, activation):
        super().__init__()
        self.inner = nn.Conv1d(channels, channels * ratio, 1)
        self.act = activation()
        self.outer = nn.Conv1d(channels * ratio, channels, 1)

    def forward(self, x):
        return x + self.outer(self.act(self.inner(x)))


class ActivatedStack(nn.Module):
    def __init__(self, channels, depth=2):
        super().__init__()
        activation = nn.GELU
        kwargs = dict(ratio=3, activation=activation)
        self.blocks = nn.ModuleList([ActivatedConv(channels, **kwargs) for _ in range(depth)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class KeywordsToBlocks(nn.Module):
    """Hands its ``**block_args`` on to each block it builds, with a width of its own by place."""

    def __init__(self, width, num_layers, **block_args):
        super().__init__()
        self.blocks = nn.ModuleList([HeadsBlock(width, **block_args) for _ in range(num_layers)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class HeadsBlock(nn.Module):
    def __init__(self, input_dim, num_heads, dim_feedforward, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(input_dim, num_heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(input_dim, dim_feedforward), nn.ReLU(),
                                nn.Linear(dim_feedforward, input_dim))

    def forward(self, x):
        x = x + self.attn(x, x, x, need_weights=False)[0]
        return x + self.ff(x)


class Wrapper(nn.Module):
    """Takes a module built elsewhere; its annotation says which."""

    def __init__(self, num_tokens, layers: LayersBase):
        super().__init__()
        self.embed = nn.Embedding(num_tokens, layers.layers[0].linear1.in_features)
        self.layers = layers

    def forward(self, x):
        return self.layers(self.embed(x.long()))


class GpuCache(nn.Module):
    """Makes its cache on the GPU, as code written for one does."""

    def __init__(self, dim, n_heads, max_len=32):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.cache = torch.zeros(2, max_len, dim).cuda()

    def forward(self, x, start_pos: int):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        self.cache[0, start_pos:start_pos + T] = k[0].detach()
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v)
        return y.transpose(1, 2).reshape(B, T, C)


class GpuDeviceCache(GpuCache):
    """Asks for its cache on the GPU by name (a literal device, as code written for one has)."""

    def __init__(self, dim, n_heads, max_len=32):
        super().__init__(dim, n_heads, max_len)
        device = "cuda"
        self.cache = torch.zeros(2, max_len, dim, device=device)
        self.steps = torch.arange(max_len).to(device)


class GroupedKV(nn.Module):
    """Key/value groups shared by the query heads: the groups must divide the heads."""

    def __init__(self, d_model, num_heads, num_kv_groups=4):
        super().__init__()
        assert num_heads % num_kv_groups == 0
        self.h, self.g, self.hd = num_heads, num_kv_groups, d_model // num_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * num_kv_groups * self.hd)
        self.o = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.g, self.hd).permute(2, 0, 3, 1, 4)
        k = k.repeat_interleave(self.h // self.g, dim=1)
        v = v.repeat_interleave(self.h // self.g, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(B, T, C))


class OptionalPrevious(nn.Module):
    """``previous`` says nothing by its name; forward makes it when it is None."""

    def __init__(self, dim):
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, queries, keys, values, previous: torch.Tensor):
        if previous is None:  # annotated as a tensor, tested for None all the same
            previous = keys.new_zeros(keys.size(0), keys.size(1))
        scores = self.score(torch.tanh(keys)).squeeze(-1) + previous
        weights = scores.softmax(-1).unsqueeze(1)
        return torch.bmm(weights, values) + queries.mean(1, keepdim=True)


class RotaryPairs(nn.Module):
    """Rotary positions over pairs of a head's features: the head size must be even."""

    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.wq = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.n_heads, -1)
        pairs = q.reshape(B, T, self.n_heads, -1, 2)
        angle = torch.arange(T)[:, None, None] * 0.1
        rotated = torch.stack((pairs[..., 0] * angle.cos() - pairs[..., 1] * angle.sin(),
                               pairs[..., 0] * angle.sin() + pairs[..., 1] * angle.cos()), -1)
        return rotated.flatten(-2).reshape(B, T, C)


class GridMixer(nn.Module):
    """Tokens of a 6x6 grid folded back into it: the sequence must be 36 long."""

    def __init__(self, d_model, side=6):
        super().__init__()
        self.side = side
        self.mix = nn.Conv2d(d_model, d_model, 3, padding=1, groups=d_model)

    def forward(self, x):
        B, N, C = x.shape
        grid = x.transpose(1, 2).reshape(B, C, self.side, self.side)
        return self.mix(grid).flatten(2).transpose(1, 2)


class EvenTable(nn.Module):
    """A sinusoidal table that fills even and odd features in pairs."""

    def __init__(self, embed_dim, max_len=64):
        super().__init__()
        assert embed_dim % 2 == 0, "the table pairs features"
        pe = torch.zeros(max_len, embed_dim)
        position = torch.arange(max_len).unsqueeze(1)
        step = torch.exp(torch.arange(0, embed_dim, 2) * (-math.log(10000.0) / embed_dim))
        pe[:, 0::2] = torch.sin(position * step)
        pe[:, 1::2] = torch.cos(position * step)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class NamespaceAttentionJumbled(NamespaceAttention):
    """The same, splitting its heads straight from (B, T, C) to (B, H, T, d)."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.reshape(B, self.heads, T, C // self.heads) for t in (q, k, v))  # BUG
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.drop(self.proj(y.transpose(1, 2).reshape(B, T, C)))


class PaddedTranslator(nn.Module):
    """Token ids with a padding id and a device, masks made from them: a padded query row is
    masked whole, as such code does (its output is never read)."""

    def __init__(self, src_pad_idx, trg_pad_idx, enc_voc_size, dec_voc_size, d_model, n_head,
                 device):
        super().__init__()
        self.src_pad_idx, self.trg_pad_idx, self.device = src_pad_idx, trg_pad_idx, device
        self.n_head = n_head
        self.src_embed = nn.Embedding(enc_voc_size, d_model, padding_idx=src_pad_idx)
        self.trg_embed = nn.Embedding(dec_voc_size, d_model, padding_idx=trg_pad_idx)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.cross = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, dec_voc_size)

    def attend(self, q, k, v, mask):
        B, T, C = q.shape
        q, k, v = (t.view(B, t.size(1), self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(mask == 0, -10000.0)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)

    def forward(self, src, trg):
        src_mask = (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)
        trg_rows = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(3)
        T = trg.shape[1]
        trg_mask = trg_rows & torch.tril(torch.ones(T, T, device=self.device)).bool()
        memory = self.src_embed(src)
        x = self.trg_embed(trg)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        x = x + self.attend(q, k, v, trg_mask)
        x = x + self.attend(self.cross(x), memory, memory, src_mask)
        return self.out(x)


class AdditiveScores(nn.Module):
    """Bahdanau-style scores: its ``hidden_dim`` is the width of the states, not a feed-forward
    width, and its queries and keys are added, so they must be as long."""

    def __init__(self, hidden_dim):
        super().__init__()
        self.wq = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.wk = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.v = nn.Linear(hidden_dim, 1)

    def forward(self, query, key, value):
        scores = self.v(torch.tanh(self.wq(query) + self.wk(key))).squeeze(-1)
        return torch.bmm(scores.softmax(-1).unsqueeze(1), value)


@dataclasses.dataclass
class StageArgs:
    dim: int = 64
    n_head: int = 4


@dataclasses.dataclass
class PlainStageArgs(StageArgs):
    kind: str = "plain"


@dataclasses.dataclass
class TwoStageArgs(StageArgs):
    kind: str = "two"
    fast_dim: int = 32


class TwoStageModel(nn.Module):
    """Annotated with the plain arguments, but reads a field only its sibling has."""

    def __init__(self, config: PlainStageArgs):
        super().__init__()
        self.slow = nn.Linear(config.dim, config.dim)
        self.to_fast = nn.Linear(config.dim, config.fast_dim)

    def forward(self, x):
        return self.to_fast(self.slow(x))


class NormedStack(nn.Module):
    """Pre-norm residual feed-forward layers whose width is called ``hidden_dim`` and whose
    inner size is ``ffn_size``: the norm over ``hidden_dim`` features says it is the width."""

    def __init__(self, layers, hidden_dim, ffn_size):
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(hidden_dim) for _ in range(layers))
        self.ffns = nn.ModuleList(
            nn.Sequential(nn.Linear(hidden_dim, ffn_size), nn.GELU(), nn.Linear(ffn_size, hidden_dim))
            for _ in range(layers))

    def forward(self, X):
        for norm, ffn in zip(self.norms, self.ffns):
            X = X + ffn(norm(X))
        return X
