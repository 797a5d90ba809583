"""Grouped-query and multi-query attention, the ways they are written. The correct ones must be
clean; the ones with ``BUG = "head-grouping"`` must be flagged at their ``# BUG`` line.

6 query heads share 2 key/value heads in groups of 3 (``DIMS``: the default H=11 is prime).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange, repeat

GQA = {"H": 6}


class _GQA(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H", "n_kv_head": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = GQA

    def __init__(self, n_embd, n_head, n_kv_head):
        super().__init__()
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.n_rep = n_head // n_kv_head
        self.head_dim = n_embd // n_head
        self.q_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.k_proj = nn.Linear(n_embd, n_kv_head * self.head_dim, bias=False)
        self.v_proj = nn.Linear(n_embd, n_kv_head * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_embd, n_embd, bias=False)

    def qkv(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        return q, k, v

    def attend(self, q, k, v):
        B, H, T, d = q.shape
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return self.o_proj((att @ v).transpose(1, 2).reshape(B, T, H * d))


def repeat_kv(hidden_states, n_rep):
    """Hugging Face Llama's helper."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


# --- correct ----------------------------------------------------------------------------------------

class RepeatInterleave(_GQA):
    def forward(self, x):
        q, k, v = self.qkv(x)
        k = k.repeat_interleave(self.n_rep, dim=1)
        v = v.repeat_interleave(self.n_rep, dim=1)
        return self.attend(q, k, v)


class HFRepeatKV(_GQA):
    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.attend(q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep))


class EinopsRepeat(_GQA):
    def forward(self, x):
        q, k, v = self.qkv(x)
        k = repeat(k, "b h t d -> b (h g) t d", g=self.n_rep)
        v = repeat(v, "b h t d -> b (h g) t d", g=self.n_rep)
        return self.attend(q, k, v)


class GroupedQueryReshape(_GQA):
    """No copies: the queries are viewed as (B, Hkv, G, T, d) and the keys broadcast over G."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        q = q.view(B, self.n_kv_head, self.n_rep, T, d)
        k, v = k.unsqueeze(2), v.unsqueeze(2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        att = scores.softmax(dim=-1)
        y = (att @ v).reshape(B, H, T, d)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * d))


class GroupedQueryEinsum(_GQA):
    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        q = rearrange(q, "b (h g) t d -> b h g t d", g=self.n_rep)
        scores = torch.einsum("bhgqd,bhkd->bhgqk", q, k) / math.sqrt(d)
        att = scores.softmax(dim=-1)
        y = torch.einsum("bhgqk,bhkd->bhgqd", att, v)
        return self.o_proj(rearrange(y, "b h g t d -> b t (h g d)"))


class SDPAEnableGQA(_GQA):
    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * d))


class SDPARepeatInterleave(_GQA):
    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        k, v = (t.repeat_interleave(self.n_rep, dim=1) for t in (k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * d))


class MultiQueryRepeat(_GQA):
    """One key/value head: repeat and repeat_interleave are the same thing."""

    INIT = {"n_embd": "C", "n_head": "H", "n_kv_head": 1}
    DIMS = None

    def forward(self, x):
        q, k, v = self.qkv(x)
        return self.attend(q, k.repeat(1, self.n_head, 1, 1), v.repeat(1, self.n_head, 1, 1))


class MultiQueryBroadcast(_GQA):
    """One key/value head, (B, 1, T, d), broadcast over the H query heads by the matmuls."""

    INIT = {"n_embd": "C", "n_head": "H", "n_kv_head": 1}
    DIMS = None

    def forward(self, x):
        return self.attend(*self.qkv(x))


class SameTilingBothSides(_GQA):
    """Queries and keys/values tiled the same way: consistent with each other (a model trained
    this way), so the heads still pair up as they were trained."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        q = q.view(B, self.n_kv_head, self.n_rep, T, d).transpose(1, 2).reshape(B, H, T, d)
        return self.attend(q, k.repeat(1, self.n_rep, 1, 1), v.repeat(1, self.n_rep, 1, 1))


class BeamTiledMemory(nn.Module):
    """Encoder memory tiled over beams with ``repeat``; the decoder states are tiled the same way.
    A batch axis, not a head axis: not a grouping question."""

    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C", "memory=B,S,C"]

    def __init__(self, n_embd, n_head, beams=3):
        super().__init__()
        self.beams = beams
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)

    def forward(self, x, memory):
        memory = memory.repeat(self.beams, 1, 1)
        x = x.repeat(self.beams, 1, 1)
        return self.attn(x, memory, memory, need_weights=False)[0]


# --- buggy ------------------------------------------------------------------------------------------

class TiledRepeat(_GQA):
    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        k = k.repeat(1, self.n_rep, 1, 1)  # BUG
        v = v.repeat_interleave(self.n_rep, dim=1)
        return self.attend(q, k, v)


class TiledValuesOnly(_GQA):
    """Keys right, values tiled: found where the weights meet the values."""

    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        k = k.repeat_interleave(self.n_rep, dim=1)
        v = v.repeat(1, self.n_rep, 1, 1)  # BUG
        return self.attend(q, k, v)


class TiledCat(_GQA):
    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        k = torch.cat([k] * self.n_rep, dim=1)  # BUG
        v = repeat_kv(v, self.n_rep)
        return self.attend(q, k, v)


class TiledExpand(_GQA):
    """repeat_kv with the new axis on the wrong side of the key/value heads."""

    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        B, Hkv, T, d = k.shape
        k = k[:, None].expand(B, self.n_rep, Hkv, T, d).reshape(B, Hkv * self.n_rep, T, d)  # BUG
        v = repeat_kv(v, self.n_rep)
        return self.attend(q, k, v)


class TiledEinops(_GQA):
    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        k = repeat(k, "b h t d -> b (g h) t d", g=self.n_rep)  # BUG
        v = repeat(v, "b h t d -> b (h g) t d", g=self.n_rep)
        return self.attend(q, k, v)


class TiledIntoSDPA(_GQA):
    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        k = k.repeat(1, self.n_rep, 1, 1)  # BUG
        v = v.repeat_interleave(self.n_rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * d))


class TiledFusedKV(nn.Module):
    """Fused key/value projection, time-first bmm layout (B*H, T, d) after tiling."""

    INIT = {"n_embd": "C", "n_head": "H", "n_kv_head": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = GQA
    BUG = "head-grouping"

    def __init__(self, n_embd, n_head, n_kv_head):
        super().__init__()
        self.n_head, self.n_kv_head, self.d = n_head, n_kv_head, n_embd // n_head
        self.q = nn.Linear(n_embd, n_embd)
        self.kv = nn.Linear(n_embd, 2 * n_kv_head * self.d)

    def forward(self, x):
        B, T, C = x.shape
        G = self.n_head // self.n_kv_head
        q = self.q(x).view(B, T, self.n_head, self.d).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, self.n_kv_head, self.d).permute(2, 0, 3, 1, 4)
        k = k.repeat(1, G, 1, 1)  # BUG
        v = v.repeat_interleave(G, dim=1)
        q, k, v = (t.reshape(B * self.n_head, T, self.d) for t in (q, k, v))
        att = torch.bmm(q, k.transpose(1, 2)).div(math.sqrt(self.d)).softmax(-1)
        return torch.bmm(att, v).view(B, self.n_head, T, self.d).transpose(1, 2).reshape(B, T, C)


class MetaTiledKV(nn.Module):
    """Meta's Llama layout, (B, T, Hkv, d), with the heads tiled along axis 2 after a complex
    rotary embedding."""

    INIT = {"dim": "C", "n_heads": "H", "n_kv_heads": 2}
    INPUTS = ["x=B,T,C"]
    DIMS = {"H": 6, "d": 8}
    BUG = "head-grouping"

    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wkv = nn.Linear(dim, 2 * n_kv_heads * self.d, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        n_rep = self.n_heads // self.n_kv_heads
        xq = self.wq(x).view(B, T, self.n_heads, self.d)
        xk, xv = self.wkv(x).view(B, T, 2 * self.n_kv_heads, self.d).chunk(2, dim=2)
        angles = torch.outer(torch.arange(T).float(), torch.ones(self.d // 2))
        rot = torch.polar(torch.ones_like(angles), angles).view(1, T, 1, self.d // 2)
        xk = torch.view_as_real(torch.view_as_complex(xk.reshape(B, T, -1, self.d // 2, 2)) * rot).flatten(3)
        keys = xk.repeat(1, 1, n_rep, 1)  # BUG
        values = xv[:, :, :, None].expand(B, T, self.n_kv_heads, n_rep, self.d).flatten(2, 3)
        q, k, v = (t.transpose(1, 2) for t in (xq, keys, values))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2)


class FeatureMapGQA(_GQA):
    """Grouped-query linear attention: elu + 1 feature maps, keys and values repeated in place."""

    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        q, k = F.elu(q) + 1, F.elu(k) + 1
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        kv = torch.einsum("bhtd,bhte->bhde", k, v)
        z = torch.einsum("bhtd,bhd->bht", q, k.sum(dim=2)).unsqueeze(-1)
        y = torch.einsum("bhtd,bhde->bhte", q, kv) / z
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * d))


class FeatureMapTiled(_GQA):
    BUG = "head-grouping"

    def forward(self, x):
        q, k, v = self.qkv(x)
        B, H, T, d = q.shape
        q, k = F.elu(q) + 1, F.elu(k) + 1
        k = k.repeat(1, self.n_rep, 1, 1)  # BUG
        v = repeat_kv(v, self.n_rep)
        kv = torch.einsum("bhtd,bhte->bhde", k, v)
        y = torch.einsum("bhtd,bhde->bhte", q, kv)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, H * d))
