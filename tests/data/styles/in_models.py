"""Correct attention inside larger models: Transformer-XL's relative shift, a seq2seq decoder
with Luong attention, ViT with a class token, gated attention with a pair bias, memory-compressed
keys, local attention with unfold, a shifted-window mask, a tiny GPT with generation. Every module
here must check clean (no error, no warning). See textbook.py for INIT / INPUTS / DIMS."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- Transformer-XL: relative positions with the _rel_shift trick ------------------------------------

class TransformerXLRelative(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["w=T,B,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_head = n_head, d_model // n_head
        self.scale = 1 / (self.d_head ** 0.5)
        self.qkv_net = nn.Linear(d_model, 3 * d_model, bias=False)
        self.r_net = nn.Linear(d_model, d_model, bias=False)
        self.r_w_bias = nn.Parameter(torch.zeros(n_head, self.d_head))
        self.r_r_bias = nn.Parameter(torch.zeros(n_head, self.d_head))
        self.o_net = nn.Linear(d_model, d_model, bias=False)

    @staticmethod
    def _rel_shift(x):
        zero_pad = torch.zeros((x.size(0), 1, *x.size()[2:]), dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=1)
        x_padded = x_padded.view(x.size(1) + 1, x.size(0), *x.size()[2:])
        return x_padded[1:].view_as(x)

    def forward(self, w):
        qlen, bsz, d_model = w.shape
        pos = torch.arange(qlen - 1, -1, -1.0)
        inv_freq = 1 / (10000 ** (torch.arange(0.0, d_model, 2.0) / d_model))
        sinusoid = torch.outer(pos, inv_freq)
        pos_emb = torch.cat([sinusoid.sin(), sinusoid.cos()], dim=-1)[:, :d_model]
        r_head_k = self.r_net(pos_emb).view(qlen, self.n_head, self.d_head)
        q, k, v = torch.chunk(self.qkv_net(w), 3, dim=-1)
        q = q.view(qlen, bsz, self.n_head, self.d_head)
        k = k.view(qlen, bsz, self.n_head, self.d_head)
        v = v.view(qlen, bsz, self.n_head, self.d_head)
        AC = torch.einsum("ibnd,jbnd->ijbn", q + self.r_w_bias, k)
        BD = self._rel_shift(torch.einsum("ibnd,jnd->ijbn", q + self.r_r_bias, r_head_k))
        score = (AC + BD) * self.scale
        mask = torch.triu(torch.ones(qlen, qlen, dtype=torch.bool), diagonal=1)[:, :, None, None]
        score = score.masked_fill(mask, -float("inf"))
        prob = F.softmax(score, dim=1)
        vec = torch.einsum("ijbn,jbnd->ibnd", prob, v)
        return self.o_net(vec.contiguous().view(qlen, bsz, d_model))


# --- seq2seq: a GRU decoder with Luong (dot) attention over the encoder outputs ------------------------

class LuongAttentionDecoder(nn.Module):
    INIT = {"hidden": "C"}
    INPUTS = ["targets=B,T,C", "encoder_outputs=B,S,C"]

    def __init__(self, hidden):
        super().__init__()
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.concat = nn.Linear(2 * hidden, hidden)

    def forward(self, targets, encoder_outputs):
        h = encoder_outputs.mean(dim=1).unsqueeze(0)
        outs = []
        for t in range(targets.size(1)):
            step, h = self.gru(targets[:, t:t + 1], h)                    # (B, 1, C)
            energies = torch.bmm(step, encoder_outputs.transpose(1, 2))    # (B, 1, S)
            weights = F.softmax(energies, dim=2)
            context = torch.bmm(weights, encoder_outputs)                  # (B, 1, C)
            outs.append(torch.tanh(self.concat(torch.cat((step, context), dim=2))))
        return torch.cat(outs, dim=1)


# --- ViT: a class token, position embeddings, timm-style blocks ---------------------------------------

class TinyViT(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["img=B,3,6,6"]

    def __init__(self, dim, heads, patch=3, channels=3):
        super().__init__()
        self.patch, self.heads = patch, heads
        self.to_patch = nn.Linear(channels * patch * patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, 5, dim) * 0.02)
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, img):
        B, c, hh, ww = img.shape
        p = self.patch
        x = img.unfold(2, p, p).unfold(3, p, p)                     # (B, c, 2, 2, p, p)
        x = x.permute(0, 2, 3, 1, 4, 5).reshape(B, (hh // p) * (ww // p), c * p * p)
        x = self.to_patch(x)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1) + self.pos_embed
        N, C = x.shape[1], x.shape[2]
        qkv = self.qkv(self.norm(x)).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5
        x = x + self.proj((attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C))
        return self.head(x[:, 0])


# --- AlphaFold-style gated attention with a pair bias ------------------------------------------------------

class GatedAttentionPairBias(nn.Module):
    INIT = {"c_m": "C", "c_z": "d", "heads": "H"}
    INPUTS = ["m=B,T,C", "z=B,T,T,d"]

    def __init__(self, c_m, c_z, heads):
        super().__init__()
        self.heads, self.c = heads, c_m // heads
        self.q = nn.Linear(c_m, c_m, bias=False)
        self.k = nn.Linear(c_m, c_m, bias=False)
        self.v = nn.Linear(c_m, c_m, bias=False)
        self.g = nn.Linear(c_m, c_m)
        self.b = nn.Linear(c_z, heads, bias=False)
        self.o = nn.Linear(c_m, c_m)

    def forward(self, m, z):
        B, T, _ = m.shape
        q = self.q(m).view(B, T, self.heads, self.c) * self.c ** -0.5
        k = self.k(m).view(B, T, self.heads, self.c)
        v = self.v(m).view(B, T, self.heads, self.c)
        bias = self.b(z).permute(0, 3, 1, 2)                         # (B, H, T, T)
        logits = torch.einsum("bqhc,bkhc->bhqk", q, k) + bias
        a = torch.softmax(logits, dim=-1)
        o = torch.einsum("bhqk,bkhc->bqhc", a, v)
        o = torch.sigmoid(self.g(m)).view(B, T, self.heads, self.c) * o
        return self.o(o.reshape(B, T, -1))


# --- memory-compressed attention: keys and values pooled by a strided convolution --------------------

class MemoryCompressedAttention(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]
    DIMS = {"T": 9}

    def __init__(self, dim, heads, ratio=3):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.compress = nn.Conv1d(dim, dim, ratio, stride=ratio)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        k = self.compress(k.transpose(1, 2)).transpose(1, 2)
        v = self.compress(v.transpose(1, 2)).transpose(1, 2)
        q, k, v = (t.reshape(B, -1, h, C // h).transpose(1, 2) for t in (q, k, v))
        attn = (q @ k.transpose(-2, -1) / math.sqrt(C // h)).softmax(dim=-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(B, T, C))


# --- local attention with unfold: each query sees a window of keys around it ---------------------------

class UnfoldLocalAttention(nn.Module):
    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, window=3):
        super().__init__()
        self.window = window
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        pad = self.window // 2
        k = F.pad(k, (0, 0, pad, pad)).unfold(1, self.window, 1)            # (B, T, C, w)
        v = F.pad(v, (0, 0, pad, pad)).unfold(1, self.window, 1)
        scores = torch.einsum("btc,btcw->btw", q, k) / math.sqrt(C)
        w = scores.softmax(dim=-1)
        return torch.einsum("btw,btcw->btc", w, v)


# --- Swin's shifted windows: a roll and a -100 mask between regions ---------------------------------------

class ShiftedWindowMask(nn.Module):
    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["x=B,6,6,C"]
    DIMS = {"T": 29}

    def __init__(self, dim, heads, ws=3, shift=1):
        super().__init__()
        self.ws, self.shift, self.heads = ws, shift, heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        img_mask = torch.zeros((1, 6, 6, 1))
        cnt = 0
        for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                img_mask[:, hs, wsl, :] = cnt
                cnt += 1
        mw = img_mask.view(1, 2, ws, 2, ws, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws)
        attn_mask = mw.unsqueeze(1) - mw.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        B, Hh, Ww, C = x.shape
        ws = self.ws
        x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = x.view(B, Hh // ws, ws, Ww // ws, ws, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, C)
        Bw, N, _ = win.shape
        q, k, v = self.qkv(win).reshape(Bw, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        nW = self.attn_mask.shape[0]
        attn = attn.view(Bw // nW, nW, self.heads, N, N) + self.attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, self.heads, N, N).softmax(dim=-1)
        out = self.proj((attn @ v).transpose(1, 2).reshape(Bw, N, C))
        out = out.view(B, Hh // ws, Ww // ws, ws, ws, C).permute(0, 1, 3, 2, 4, 5).reshape(B, Hh, Ww, C)
        return torch.roll(out, shifts=(self.shift, self.shift), dims=(1, 2))


# --- a tiny GPT: embeddings, a causal block, the LM head, and a loss ----------------------------------------

class TinyGPT(nn.Module):
    INIT = {"vocab_size": "V", "n_embd": "C", "n_head": "H", "block_size": "L"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab_size, n_embd, n_head, block_size):
        super().__init__()
        self.n_head, self.block_size = n_head, block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.ln = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size))
                             .view(1, 1, block_size, block_size))

    def forward(self, idx, targets=None):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, dtype=torch.long))
        q, k, v = self.c_attn(self.ln(x)).split(x.size(-1), dim=2)
        C = x.size(-1)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
        logits = self.lm_head(x)
        if targets is None:
            return logits
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# --- Music Transformer: relative logits skewed with a pad and a reshape ------------------------------------

class MusicTransformerSkew(nn.Module):
    INIT = {"dim": "C", "heads": "H", "max_len": "L"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, heads, max_len):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.Er = nn.Parameter(torch.randn(max_len, self.hd))
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)).unsqueeze(0).unsqueeze(0))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        Er_t = self.Er[self.Er.shape[0] - T:, :].transpose(0, 1)             # (d, T)
        QEr = torch.matmul(q, Er_t)                                         # (B, H, T, T)
        padded = F.pad(QEr, (1, 0))                                         # (B, H, T, T + 1)
        Srel = padded.reshape(B, self.heads, T + 1, T)[:, :, 1:, :]         # (B, H, T, T)
        attn = (torch.matmul(q, k.transpose(-1, -2)) + Srel) / math.sqrt(self.hd)
        attn = attn.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        out = torch.matmul(F.softmax(attn, dim=-1), v)
        return out.transpose(1, 2).reshape(B, T, C)
