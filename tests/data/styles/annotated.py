"""annotation-mismatch, on modules annotated with jaxtyping + beartype the ways people write them:
long dim names (``"batch seq dim"``), a variadic ``"*batch"``, an anonymous ``"_"``, a
broadcastable ``"#"`` mask, an optional mask, symbolic sizes (``"seq-1"``, ``"3*dim"``), an
``Int`` index input, checked helpers that split and merge the heads; and buggy twins whose
annotation is right and whose code is not (a split without the transpose, a merge that keeps
the heads, keys handed over transposed, the shifted targets cut on the wrong side), each
marked ``# BUG`` where the finding belongs: the ``def`` line of a function whose return value
breaks its annotation, the call line of an argument that breaks it."""

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Bool, Float, Int, jaxtyped
from torch import Tensor


@jaxtyped(typechecker=beartype)
def split_heads(x: Float[Tensor, "batch seq dim"], n_head: int) -> Float[Tensor, "batch {n_head} seq head"]:
    b, t, c = x.shape
    return x.view(b, t, n_head, c // n_head).transpose(1, 2)


@jaxtyped(typechecker=beartype)
def merge_heads(x: Float[Tensor, "batch heads seq head"]) -> Float[Tensor, "batch seq heads*head"]:
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


@jaxtyped(typechecker=beartype)
def attend(q: Float[Tensor, "*batch q d"], k: Float[Tensor, "*batch k d"],
           v: Float[Tensor, "*batch k dv"],
           mask: Optional[Bool[Tensor, "*#batch #q k"]] = None) -> Float[Tensor, "*batch q dv"]:
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(-1) @ v


class _Annotated(nn.Module):
    INIT = {"dim": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, dim, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)


# --- correct ----------------------------------------------------------------------------------------

class CheckedHelpers(_Annotated):
    """Long dim names, ``{n_head}`` from an argument, ``heads*head`` for the merged width."""

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "batch seq dim"]) -> Float[Tensor, "batch seq dim"]:
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1))
        T = x.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        return self.out(merge_heads(attend(q, k, v, causal)))


class VariadicBatchNoMask(_Annotated):
    """``attend`` called on (B, H, T, d): ``*batch`` binds (B, H); the mask left out."""

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1))
        return self.out(merge_heads(attend(q, k, v)))


class CrossAttentionTwoLengths(nn.Module):
    """Queries and keys of different lengths, a padding mask broadcast over the queries."""

    INIT = {"dim": "C"}
    INPUTS = ["x=B,T,C", "memory=B,S,C", "keep=B,1,S:bool"]

    def __init__(self, dim):
        super().__init__()
        self.q, self.kv = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"], memory: Float[Tensor, "B S C"],
                keep: Bool[Tensor, "B 1 S"]) -> Float[Tensor, "B T C"]:
        k, v = self.kv(memory).chunk(2, dim=-1)
        keep = keep.clone()
        keep[:, :, 0] = True  # every query sees at least one key
        return attend(self.q(x), k, v, keep)


class AnonymousAndSymbolic(nn.Module):
    """``_`` for an axis nobody names, ``seq-1`` for the shifted targets, ``3*dim`` for the
    fused projection; the tokens come in as ``Int``."""

    INIT = {"vocab": "V", "dim": "C"}
    INPUTS = ["idx=B,T:long:V"]

    def __init__(self, vocab, dim):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, vocab)

    @jaxtyped(typechecker=beartype)
    def fused(self, h: Float[Tensor, "_ seq dim"]) -> Float[Tensor, "_ seq 3*dim"]:
        return self.qkv(h)

    @jaxtyped(typechecker=beartype)
    def loss(self, logits: Float[Tensor, "B seq V"], idx: Int[Tensor, "B seq"]) -> Float[Tensor, ""]:
        targets: Int[Tensor, "B seq-1"] = idx[:, 1:]
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def forward(self, idx: Int[Tensor, "B T"]):
        h = self.emb(idx)
        q, k, v = self.fused(h).chunk(3, dim=-1)
        T = idx.shape[1]
        y = attend(q, k, v, torch.ones(T, T, dtype=torch.bool).tril())
        logits = self.head(y)
        return logits, self.loss(logits, idx)


class UncheckedAnnotation(_Annotated):
    """Annotations without ``@jaxtyped``: documentation only, never checked, never reported."""

    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        out: Float[Tensor, "B H T d"] = y
        return self.out(out.transpose(1, 2).reshape(B, T, C))


# --- buggy ------------------------------------------------------------------------------------------

class SplitWithoutTranspose(_Annotated):
    """The checked split returns (B, T, H, d): its return value breaks ``B {n_head} T d``."""

    BUG = "annotation-mismatch"

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]:
        q, k, v = (self.split(t) for t in self.qkv(x).chunk(3, dim=-1))
        return self.out(merge_heads(attend(q, k, v)))

    @jaxtyped(typechecker=beartype)
    def split(self, t: Float[Tensor, "B T C"]) -> Float[Tensor, "B H T d"]:  # BUG
        B, T, C = t.shape
        return t.view(B, T, self.n_head, C // self.n_head)


class MergeKeepsHeads(_Annotated):
    BUG = "annotation-mismatch"

    def forward(self, x):
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1))
        return self.out(self.merge(attend(q, k, v)))

    @jaxtyped(typechecker=beartype)
    def merge(self, y: Float[Tensor, "B H T d"]) -> Float[Tensor, "B T H*d"]:  # BUG
        return y.transpose(1, 2)


class KeysHandedTransposed(_Annotated):
    """The caller transposes the keys itself: ``attend`` wants (..., k, d)."""

    BUG = "annotation-mismatch"

    def forward(self, x):
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1))
        y = attend(q, k.transpose(-2, -1), v)  # BUG
        return self.out(merge_heads(y))


class MaskOfTheWrongLength(_Annotated):
    """A causal mask built for T + 1 positions (a start token counted twice)."""

    BUG = "annotation-mismatch"

    def forward(self, x):
        q, k, v = (split_heads(t, self.n_head) for t in self.qkv(x).chunk(3, dim=-1))
        T = x.shape[1]
        causal = torch.ones(T + 1, T + 1, dtype=torch.bool).tril()
        return self.out(merge_heads(attend(q, k, v, causal)))  # BUG
