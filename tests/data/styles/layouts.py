"""Correct attention in the layouts of well-known codebases: time-first, 5-D qkv, windows,
latents, caches, linear attention. See textbook.py for INIT / INPUTS / DIMS."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange


# --- fairseq: time-first (T, B, C), heads folded into the batch for bmm ----------------------------

class FairseqMultiheadAttention(nn.Module):
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["query=T,B,C", "key=S,B,C", "value=S,B,C"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value, key_padding_mask=None):
        tgt_len, bsz, embed_dim = query.size()
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(key)
        v = self.v_proj(value)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        src_len = k.size(1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        if key_padding_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len)
            attn_weights = attn_weights.masked_fill(
                key_padding_mask.unsqueeze(1).unsqueeze(2).to(torch.bool), float("-inf"))
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_probs = F.softmax(attn_weights, dim=-1)
        attn = torch.bmm(attn_probs, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        return self.out_proj(attn)


# --- timm ViT: fused qkv as a 5-D reshape and permute ---------------------------------------------

class TimmAttention(nn.Module):
    INIT = {"dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class TimmIndexedQKV(TimmAttention):
    """Older timm: ``q, k, v = qkv[0], qkv[1], qkv[2]``."""

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


# --- Swin: attention inside windows, relative position bias ----------------------------------------

def window_partition(x, window_size):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size, H, W):
    B = int(windows.shape[0] / (H * W / window_size / window_size))
    x = windows.view(B, H // window_size, W // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class SwinWindowAttention(nn.Module):
    """Windows of 3 x 3 patches on a (B, 2*3, 2*3, C) image; heads H, per-head bias table."""

    INIT = {"dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,6,6,C"]
    DIMS = {"T": 29}  # keep 7 out of the way: sizes 2, 3, 6, 9 are the image's

    def __init__(self, dim, num_heads, window_size=3):
        super().__init__()
        self.ws, self.num_heads = window_size, num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.relative_position_bias_table = nn.Parameter(
            torch.randn((2 * window_size - 1) * (2 * window_size - 1), num_heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window_size), torch.arange(window_size),
                                            indexing="ij"))
        coords_flatten = torch.flatten(coords, 1)
        relative_coords = coords_flatten[:, :, None] - coords_flatten[:, None, :]
        relative_coords = relative_coords.permute(1, 2, 0).contiguous()
        relative_coords[:, :, 0] += window_size - 1
        relative_coords[:, :, 1] += window_size - 1
        relative_coords[:, :, 0] *= 2 * window_size - 1
        self.register_buffer("relative_position_index", relative_coords.sum(-1))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def attend(self, x):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(
            self.ws * self.ws, self.ws * self.ws, -1)
        bias = bias.permute(2, 0, 1).contiguous()
        attn = attn + bias.unsqueeze(0)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return self.proj(x)

    def forward(self, x):
        B, H, W, C = x.shape
        windows = window_partition(x, self.ws).view(-1, self.ws * self.ws, C)
        out = self.attend(windows).view(-1, self.ws, self.ws, C)
        return window_reverse(out, self.ws, H, W)


# --- Perceiver: a learned latent array cross-attends to the input ----------------------------------

class PerceiverCrossAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H", "num_latents": 29}
    INPUTS = ["data=B,T,C"]
    DIMS = {"K": 29}

    def __init__(self, dim, heads, num_latents):
        super().__init__()
        self.heads = heads
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, data):
        b = data.shape[0]
        x = self.latents.unsqueeze(0).expand(b, -1, -1)
        q = self.to_q(x)
        k, v = self.to_kv(data).chunk(2, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> (b h) n d", h=self.heads) for t in (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * q.shape[-1] ** -0.5
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        out = rearrange(out, "(b h) n d -> b n (h d)", h=self.heads)
        return self.to_out(out)


class SharedLatentQueries(nn.Module):
    """Latent queries kept at batch 1, (1, H, K, d), broadcast over the batch by the matmul."""

    INIT = {"dim": "C", "heads": "H", "num_latents": 29}
    INPUTS = ["data=B,T,C"]
    DIMS = {"K": 29}

    def __init__(self, dim, heads, num_latents):
        super().__init__()
        self.heads, self.d = heads, dim // heads
        self.latents = nn.Parameter(torch.randn(1, num_latents, dim))
        self.to_q = nn.Linear(dim, dim)
        self.to_kv = nn.Linear(dim, 2 * dim)

    def forward(self, data):
        B, T, C = data.shape
        q = self.to_q(self.latents).view(1, -1, self.heads, self.d).transpose(1, 2)
        k, v = self.to_kv(data).view(B, T, 2, self.heads, self.d).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1) / math.sqrt(self.d)).softmax(-1)
        return (att @ v).transpose(1, 2).reshape(B, -1, C)


# --- KV-cache decoding: one new token attends to the cache and itself ------------------------------

class KVCacheStep(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,1,C", "k_cache=B,H,T,d", "v_cache=B,H,T,d"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head, self.d = n_head, n_embd // n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x, k_cache, v_cache):
        B, one, C = x.shape
        q, k, v = self.qkv(x).view(B, one, 3, self.n_head, self.d).permute(2, 0, 3, 1, 4)
        k = torch.cat([k_cache, k], dim=2)
        v = torch.cat([v_cache, v], dim=2)
        att = F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, one, C)
        return self.proj(y)


# --- causal linear attention (Katharopoulos et al.): prefix sums instead of a mask -----------------

class CausalLinearAttention(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.einsum("bhtd,bhte->bhtde", k, v).cumsum(dim=2)
        num = torch.einsum("bhtd,bhtde->bhte", q, kv)
        den = torch.einsum("bhtd,bhtd->bht", q, k.cumsum(dim=2)).unsqueeze(-1)
        y = (num / (den + 1e-6)).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class LinearAttentionMatmul(nn.Module):
    """Non-causal linear attention written with matmuls and a keepdim sum over the keys."""

    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, -1).permute(2, 0, 3, 1, 4)
        q, k = q.softmax(dim=-1), k.softmax(dim=-2)
        context = k.transpose(-2, -1) @ v
        z = 1.0 / (q @ k.sum(dim=-2, keepdim=True).transpose(-2, -1))
        return ((q @ context) * z).transpose(1, 2).reshape(B, T, C)


# --- library attention ----------------------------------------------------------------------------

class TorchMHA(nn.Module):
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C", "memory=B,S,C"]

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x, memory):
        T = x.shape[1]
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        x = x + self.self_attn(x, x, x, attn_mask=causal, need_weights=False)[0]
        return x + self.cross_attn(x, memory, memory)[0]


class SDPACrossAttention(nn.Module):
    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C", "context=B,S,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.q = nn.Linear(n_embd, n_embd)
        self.kv = nn.Linear(n_embd, 2 * n_embd)

    def forward(self, x, context):
        q = rearrange(self.q(x), "b t (h d) -> b h t d", h=self.n_head)
        k, v = rearrange(self.kv(context), "b s (two h d) -> two b h s d", two=2, h=self.n_head)
        y = F.scaled_dot_product_attention(q, k, v)
        return rearrange(y, "b h t d -> b t (h d)")


class EinsumHeadsLast(nn.Module):
    """(B, T, H, d) kept throughout; einsum picks the axes."""

    INIT = {"n_embd": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, self.n_head, 3 * C // self.n_head).chunk(3, dim=-1)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B, T, C)


class T5StyleRelativeBias(nn.Module):
    """Unscaled scores plus a learned bias per head and relative distance, clipped."""

    INIT = {"d_model": "C", "n_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_heads, max_distance=4):
        super().__init__()
        self.n_heads, self.max_distance = n_heads, max_distance
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.rel = nn.Embedding(2 * max_distance + 1, n_heads)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, -1).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T)
        distance = (pos[None, :] - pos[:, None]).clamp(-self.max_distance, self.max_distance)
        bias = self.rel(distance + self.max_distance).permute(2, 0, 1).unsqueeze(0)
        att = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5 + bias, dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)


class AttentionPoolingQuery(nn.Module):
    """One learned query, (1, 1, C), pooling the tokens of each sample (CLIP-style pooling)."""

    INIT = {"dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, num_heads):
        super().__init__()
        self.query = nn.Parameter(torch.randn(1, 1, dim))
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)

    def forward(self, x):
        q = self.query.expand(x.shape[0], -1, -1)
        return self.attn(q, x, x, need_weights=False)[0].squeeze(1)
