"""Parts of modern models written by hand: RMSNorm and LayerNorm, a SwiGLU MLP, a top-k
Mixture-of-Experts FFN (gather / index_add / scatter), a ModuleDict of heads, activation
checkpointing, and position tricks (F.pad, torch.gather, bucketize, boolean indexing, einsum
with an ellipsis, outer products written with None-indexing)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class RMSNorm(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


class HandLayerNorm(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))
        self.beta = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        mu = x.mean(dim=-1, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
        return self.gamma * (x - mu) / torch.sqrt(var + self.eps) + self.beta


class SwiGLU(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, hidden_dim=None, multiple_of=8):
        super().__init__()
        hidden_dim = hidden_dim or int(2 * (4 * dim) / 3)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TopKMoE(nn.Module):
    """Each token goes to its top-2 experts, weighted by the renormalised router softmax."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_experts=4, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.num_experts = num_experts
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                                    nn.Linear(2 * dim, dim)) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        probs = F.softmax(self.router(flat), dim=-1)
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(chosen == e)
            if token_idx.numel() == 0:
                continue
            y = expert(flat[token_idx]) * weights[token_idx, slot].unsqueeze(-1)
            out.index_add_(0, token_idx, y)
        return out.view(B, T, C)


class SwitchMoEDense(nn.Module):
    """Top-1 routing computed densely: every expert runs, a one-hot gate picks; the gate is
    gathered with torch.gather and the result scattered back with scatter_add."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_experts=3):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts)
        self.w_in = nn.Parameter(torch.randn(num_experts, dim, 2 * dim) / math.sqrt(dim))
        self.w_out = nn.Parameter(torch.randn(num_experts, 2 * dim, dim) / math.sqrt(2 * dim))

    def forward(self, x):
        logits = self.gate(x)
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1, keepdim=True)
        gate = torch.gather(probs, -1, top)
        h = torch.einsum("...c,ech->...eh", x, self.w_in).relu()
        y = torch.einsum("...eh,ehc->...ec", h, self.w_out)
        onehot = torch.zeros_like(probs).scatter_(-1, top, 1.0)
        return (y * onehot.unsqueeze(-1)).sum(dim=-2) * gate


class MultiTaskHeads(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.heads = nn.ModuleDict({"sentiment": nn.Linear(dim, 3), "topic": nn.Linear(dim, 5),
                                    "tokens": nn.Linear(dim, 2)})

    def forward(self, x):
        h = self.trunk(x)
        pooled = h.mean(dim=1)
        return {name: head(h if name == "tokens" else pooled) for name, head in self.heads.items()}


class CheckpointedBlocks(nn.Module):
    INIT = {"dim": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, n_head, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(dim, n_head, 2 * dim, dropout=0.0,
                                                                batch_first=True, norm_first=True)
                                     for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False)
        return x


class RelativeBucketsBias(nn.Module):
    """T5-like relative positions bucketed with torch.bucketize, a (T, 1) - (1, T) grid."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, num_buckets=8):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.bias = nn.Embedding(num_buckets, heads)
        self.register_buffer("boundaries", torch.tensor([-8, -4, -2, -1, 0, 1, 2, 4]), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T)
        rel = pos[None, :] - pos[:, None]
        buckets = torch.bucketize(rel, self.boundaries).clamp(max=self.bias.num_embeddings - 1)
        bias = self.bias(buckets).permute(2, 0, 1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1)) + bias
        attn = scores.softmax(-1)
        return self.out((attn @ v).transpose(1, 2).reshape(B, T, C))


class PaddedConvPositions(nn.Module):
    """A causal depthwise convolution made with a left F.pad, then a learned position table
    looked up with torch.gather."""

    INIT = {"dim": "C", "max_len": 16}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, max_len, kernel=3):
        super().__init__()
        self.kernel = kernel
        self.conv = nn.Conv1d(dim, dim, kernel, groups=dim)
        self.table = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, x):
        B, T, C = x.shape
        h = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))
        h = self.conv(h).transpose(1, 2)
        idx = torch.arange(T).view(1, T, 1).expand(B, T, C)
        pos = torch.gather(self.table.unsqueeze(0).expand(B, -1, -1), 1, idx)
        return h + pos


class MaskedTokenMean(nn.Module):
    """Boolean indexing: the mean over the non-padding tokens of each sequence."""

    INIT = {"vocab_size": "V", "dim": "C"}
    INPUTS = ["input_ids=B,T:long:V"]

    def __init__(self, vocab_size, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, input_ids):
        keep = input_ids != 0
        h = self.proj(self.emb(input_ids))
        h = h * keep.unsqueeze(-1)
        total = h.sum(dim=1)
        count = keep.sum(dim=1, keepdim=True).clamp(min=1)
        pooled = total / count
        selected = h[keep]
        return pooled, selected.norm(dim=-1).mean()


class PerHeadScalars(nn.Module):
    """Per-head temperatures (H, 1, 1) and an outer product of gates written with None."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.temperature = nn.Parameter(torch.ones(heads, 1, 1))
        self.row_gate = nn.Linear(dim, 1)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * self.temperature
        attn = attn.softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, T, C)
        g = torch.sigmoid(self.row_gate(x)).squeeze(-1)
        pair = g[:, :, None] * g[:, None, :]
        mixed = torch.einsum("bij,bjc->bic", pair / pair.sum(-1, keepdim=True), y)
        return self.out(mixed)


class ContrastiveLogits(nn.Module):
    """CLIP's logits returned as the output, (B, B): row i scores sample i against every
    other sample of the batch, which is the point of in-batch negatives."""

    INIT = {"dim": "C"}
    INPUTS = ["image=B,C", "text=B,C"]

    def __init__(self, dim):
        super().__init__()
        self.img = nn.Linear(dim, dim)
        self.txt = nn.Linear(dim, dim)

    def forward(self, image, text):
        a = F.normalize(self.img(image), dim=-1)
        b = F.normalize(self.txt(text), dim=-1)
        return a @ b.T * 10.0
