"""More correct styles: Meta's Llama reference (complex rotary, repeat_kv on (B, T, Hkv, d)),
Slot Attention, BLOOM's baddbmm with ALiBi, Falcon's multi-query expand, chunked local
attention, axial attention over a grid."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- Meta's Llama reference implementation -----------------------------------------------------------

def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim)
            .reshape(bs, slen, n_kv_heads * n_rep, head_dim))


class MetaLlamaAttention(nn.Module):
    INIT = {"dim": "C", "n_heads": "H", "n_kv_heads": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = {"H": 6, "d": 8}

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.n_rep = n_heads // n_kv_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, precompute_freqs_cis(self.head_dim, seqlen))
        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        mask = torch.full((seqlen, seqlen), float("-inf")).triu(1)
        scores = F.softmax((scores + mask).float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)
        return self.wo(output.transpose(1, 2).contiguous().view(bsz, seqlen, -1))


# --- Slot Attention (Locatello et al.): softmax over the slots, then a weighted mean -----------------

class SlotAttention(nn.Module):
    INIT = {"dim": "C", "num_slots": 29}
    INPUTS = ["inputs=B,T,C"]
    DIMS = {"K": 29}

    def __init__(self, dim, num_slots, iters=2, eps=1e-8):
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim ** -0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.gru = nn.GRUCell(dim, dim)
        self.norm_input = nn.LayerNorm(dim)
        self.norm_slots = nn.LayerNorm(dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        slots = self.slots_mu.expand(b, self.num_slots, -1)
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            slots_prev = slots
            q = self.to_q(self.norm_slots(slots))
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d)).reshape(b, -1, d)
        return slots


# --- BLOOM: ALiBi added through baddbmm on (B*H, T, d) ----------------------------------------------

def alibi_slopes(n_head):
    start = 2 ** (-(2 ** -(math.log2(n_head) - 3)))
    return torch.tensor([start * (start ** i) for i in range(n_head)])


class BloomAttention(nn.Module):
    INIT = {"hidden_size": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, hidden_size, n_head):
        super().__init__()
        self.n_head, self.head_dim = n_head, hidden_size // n_head
        self.query_key_value = nn.Linear(hidden_size, 3 * hidden_size)
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        B, T, C = x.shape
        fused = self.query_key_value(x).view(B, T, self.n_head, 3, self.head_dim)
        q, k, v = fused[..., 0, :], fused[..., 1, :], fused[..., 2, :]
        q = q.transpose(1, 2).reshape(B * self.n_head, T, self.head_dim)
        k = k.permute(0, 2, 3, 1).reshape(B * self.n_head, self.head_dim, T)
        v = v.transpose(1, 2).reshape(B * self.n_head, T, self.head_dim)
        positions = torch.arange(T)[None, None, :].float()
        alibi = (alibi_slopes(self.n_head)[:, None, None] * positions).repeat(B, 1, 1)
        scores = alibi.baddbmm(batch1=q, batch2=k, beta=1.0, alpha=1.0 / math.sqrt(self.head_dim))
        scores = scores.view(B, self.n_head, T, T)
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)
        probs = F.softmax(scores.masked_fill(causal, torch.finfo(scores.dtype).min), dim=-1)
        ctx = torch.bmm(probs.view(B * self.n_head, T, T), v)
        ctx = ctx.view(B, self.n_head, T, self.head_dim).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.dense(ctx)


# --- Falcon-style multi-query: one key/value head expanded -----------------------------------------

class FalconMultiQuery(nn.Module):
    INIT = {"hidden_size": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.query_key_value = nn.Linear(hidden_size, hidden_size + 2 * self.head_dim)
        self.dense = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        B, T, C = x.shape
        fused = self.query_key_value(x).view(B, T, self.num_heads + 2, self.head_dim)
        q, k, v = fused[..., :-2, :], fused[..., [-2], :], fused[..., [-1], :]
        q = q.transpose(1, 2)
        k = k.transpose(1, 2).expand(-1, self.num_heads, -1, -1)
        v = v.transpose(1, 2).expand(-1, self.num_heads, -1, -1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.dense(y.transpose(1, 2).reshape(B, T, C))


# --- local attention in chunks of the sequence -----------------------------------------------------

class ChunkedLocalAttention(nn.Module):
    """Tokens attend within chunks of 3: (B, T, C) with T = 2*3 split into (B, 2, 3, C)."""

    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,6,C"]

    def __init__(self, n_embd, n_head, chunk=3):
        super().__init__()
        self.n_head, self.chunk = n_head, chunk
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        n = T // self.chunk
        q, k, v = self.qkv(x).view(B, n, self.chunk, 3, self.n_head, C // self.n_head).unbind(3)
        q, k, v = (t.permute(0, 1, 3, 2, 4) for t in (q, k, v))  # (B, n, H, chunk, d)
        att = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(dim=-1)
        y = (att @ v).permute(0, 1, 3, 2, 4).reshape(B, T, C)
        return y


# --- axial attention: rows, then columns of a grid -------------------------------------------------

class AxialAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,S,C"]

    def __init__(self, dim, heads):
        super().__init__()
        self.row = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.col = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        B, R, W, C = x.shape
        rows = x.reshape(B * R, W, C)
        x = x + self.row(rows, rows, rows, need_weights=False)[0].reshape(B, R, W, C)
        cols = x.transpose(1, 2).reshape(B * W, R, C)
        out = self.col(cols, cols, cols, need_weights=False)[0]
        return x + out.reshape(B, W, R, C).transpose(1, 2)
