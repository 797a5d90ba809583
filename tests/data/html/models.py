"""Models for the HTML report's tests: a clean attention, a buggy one whose names and source
carry markup, and a 96-layer stack whose trace folds."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """Correct causal multi-head attention."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(B, T, C))


class Jumbled(nn.Module):
    """Buggy: heads split straight from (B, T, C)."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.reshape(B, self.n_head, T, C // self.n_head)  # </code><script>__pwned=2</script>
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(B, T, C)


NASTY = "<img src=x onerror=__pwned=1>"  # no dots: a module name cannot hold one


class Markup(nn.Module):
    """A module named with markup around the buggy attention."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.layers = nn.ModuleDict({NASTY: Jumbled(n_embd, n_head)})

    def forward(self, x):
        return self.layers[NASTY](x)


class Block(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.attn = Attention(n_embd, n_head)

    def forward(self, x):
        return x + self.attn(self.ln(x))


class Deep(nn.Module):
    """96 identical blocks: the trace prints one and folds the other 95."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(96))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


QUOTED = "q\"uo'te"  # a ModuleDict key with both quotes


class Stack(nn.Module):
    """Twelve jumbled attentions, one under a key with quotes: the finding at the one buggy
    line is merged across the twelve modules (``merge_repeats``)."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.blocks = nn.ModuleList(Jumbled(n_embd, n_head) for _ in range(11))
        self.extra = nn.ModuleDict({QUOTED: Jumbled(n_embd, n_head)})

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.extra[QUOTED](x)


RAISED = "<script>__pwned=3</script> \"double\" 'single' & <b>bold</b>"


class Raises(nn.Module):
    """A forward that raises with markup and quotes in its message."""

    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        y = self.proj(x)
        raise ValueError(RAISED)


class Tiny(nn.Module):
    """Three layers run in a loop, for a traced training loop."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def train(steps: int = 8):
    model = Tiny()
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(steps):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
