"""attention-scale, written the ways other books and libraries write it: the query scaled before
the product, ``baddbmm``'s ``alpha``, a scale folded into the query projection's weights at
init, cosine attention with a learned per-head temperature, ``scaled_dot_product_attention``
with ``scale=``, a scale kept as a buffer, ``rsqrt`` of the head size; and buggy twins (the
width's or the heads' root, scaled twice, the fourth root applied once), each marked ``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class _Heads(nn.Module):
    INIT = {"d_model": "C", "n_head": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head, self.d_model, self.d_head = n_head, d_model, d_model // n_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.n_head, self.d_head).transpose(1, 2)

    def merge(self, t):
        B, _, T, _ = t.shape
        return self.o_proj(t.transpose(1, 2).reshape(B, T, self.d_model))


class QueryPreScaled(_Heads):
    """fairseq / Hugging Face BART: ``q = q_proj(x) * head_dim ** -0.5`` before the product."""

    def forward(self, x):
        q = self.heads(self.q_proj(x) * self.d_head ** -0.5)
        k, v = self.heads(self.k_proj(x)), self.heads(self.v_proj(x))
        return self.merge((q @ k.transpose(-2, -1)).softmax(-1) @ v)


class QueryPreScaledByWidth(_Heads):
    BUG = "attention-scale"

    def forward(self, x):
        q = self.heads(self.q_proj(x) * self.d_model ** -0.5)  # BUG
        k, v = self.heads(self.k_proj(x)), self.heads(self.v_proj(x))
        return self.merge((q @ k.transpose(-2, -1)).softmax(-1) @ v)


class BaddbmmAlpha(_Heads):
    """Bloom / Megatron: heads folded into the batch, ``torch.baddbmm(bias, q, k^T, beta, alpha)``."""

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, self.d_head
        q = self.heads(self.q_proj(x)).reshape(B * H, T, d)
        k = self.heads(self.k_proj(x)).reshape(B * H, T, d)
        v = self.heads(self.v_proj(x)).reshape(B * H, T, d)
        bias = torch.zeros(B * H, T, T, dtype=x.dtype)
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(d))
        out = torch.bmm(scores.softmax(dim=-1), v).view(B, H, T, d)
        return self.merge(out)


class BaddbmmAlphaByWidth(_Heads):
    BUG = "attention-scale"

    def forward(self, x):
        B, T, C = x.shape
        H, d = self.n_head, self.d_head
        q = self.heads(self.q_proj(x)).reshape(B * H, T, d)
        k = self.heads(self.k_proj(x)).reshape(B * H, T, d)
        v = self.heads(self.v_proj(x)).reshape(B * H, T, d)
        bias = torch.zeros(B * H, T, T, dtype=x.dtype)
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=1.0 / math.sqrt(C))  # BUG
        out = torch.bmm(scores.softmax(dim=-1), v).view(B, H, T, d)
        return self.merge(out)


class ScaleInQueryWeights(_Heads):
    """The scale folded into the query projection once, at init (T5 / Mesh-TensorFlow style):
    nothing is scaled in forward, which the rule can only warn about."""

    ALLOWED = {"attention-scale": "not scaled"}

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        with torch.no_grad():
            self.q_proj.weight.mul_(self.d_head ** -0.5)
            self.q_proj.bias.mul_(self.d_head ** -0.5)

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        return self.merge(torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v)


class CosineLearnedTemperature(_Heads):
    """Swin v2: cosine similarity times a learned per-head temperature, clamped, in log space."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(n_head, 1, 1)))

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(self.logit_scale, max=math.log(1.0 / 0.01)).exp()
        attn = attn * logit_scale
        return self.merge(attn.softmax(dim=-1) @ v)


class LearnedPerHeadTemperature(_Heads):
    """A per-head temperature that starts at 1/sqrt(head size) and is learned from there."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.temperature = nn.Parameter(torch.full((n_head, 1, 1), self.d_head ** -0.5))

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.temperature
        return self.merge(torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v))


class SdpaExplicitScale(_Heads):
    """``F.scaled_dot_product_attention(..., scale=head_dim ** -0.5)``, said out loud."""

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.d_head ** -0.5)
        return self.merge(out)


class SdpaScaledTwice(_Heads):
    """q divided by sqrt(d) by hand, and SDPA's default scale on top."""

    BUG = "attention-scale"

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        q = q / math.sqrt(self.d_head)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # BUG
        return self.merge(out)


class ScaleBuffer(_Heads):
    """The scale kept as a buffer tensor and multiplied into the keys (lucidrains' ``self.scale``)."""

    def __init__(self, d_model, n_head):
        super().__init__(d_model, n_head)
        self.register_buffer("scale", torch.tensor(self.d_head ** -0.5))

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        sim = torch.einsum("bhid,bhjd->bhij", q, k * self.scale)
        return self.merge(torch.einsum("bhij,bhjd->bhid", sim.softmax(dim=-1), v))


class RsqrtOfDepth(_Heads):
    """Flax / Trax: ``query / sqrt(depth)`` with the depth as a tensor, here ``rsqrt``."""

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        depth = torch.tensor(q.shape[-1], dtype=q.dtype)
        logits = torch.matmul(q * torch.rsqrt(depth), k.transpose(-1, -2))
        return self.merge(torch.matmul(F.softmax(logits, dim=-1), v))


class DivideInPlace(_Heads):
    """``scores.div_(sqrt(d))`` in place, then ``masked_fill_`` with a causal mask."""

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = torch.matmul(q, k.transpose(2, 3))
        scores.div_(math.sqrt(self.d_head))
        scores.masked_fill_(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        return self.merge(scores.softmax(-1) @ v)


class DivideByHeads(_Heads):
    BUG = "attention-scale"

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.n_head)  # BUG
        return self.merge(scores.softmax(-1) @ v)


class ScaledBeforeAndAfter(_Heads):
    """The query pre-scaled by a helper, and the scores divided again."""

    BUG = "attention-scale"

    def forward(self, x):
        q = self.heads(self.q_proj(x)) * self.d_head ** -0.5
        k, v = self.heads(self.k_proj(x)), self.heads(self.v_proj(x))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_head)  # BUG
        return self.merge(scores.softmax(-1) @ v)


class RootByPower(_Heads):
    """The head size's root taken as a power, ``d_head ** 0.5``."""

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        energy = torch.einsum("bhqd,bhkd->bhqk", q, k)
        return self.merge(torch.softmax(energy / (self.d_head ** 0.5), dim=-1) @ v)


class RootByPowerWithoutParentheses(_Heads):
    """``d_head ** 1/2`` is ``(d_head ** 1) / 2``: half the head size, not its root."""

    BUG = "attention-scale"

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        energy = torch.einsum("bhqd,bhkd->bhqk", q, k)
        return self.merge(torch.softmax(energy / (self.d_head ** 1 / 2), dim=-1) @ v)  # BUG


class FourthRootOnBoth(_Heads):
    """``head_dim ** -0.25`` on q and on k (kept small in half precision): 1/sqrt(d) in all."""

    def forward(self, x):
        factor = self.d_head ** -0.25
        q = self.heads(self.q_proj(x)) * factor
        k, v = self.heads(self.k_proj(x)) * factor, self.heads(self.v_proj(x))
        return self.merge((q @ k.transpose(-2, -1)).softmax(-1) @ v)


class FourthRootOnce(_Heads):
    """The fourth root meant for q and k, applied once to the scores."""

    BUG = "attention-scale"

    def forward(self, x):
        q, k, v = (self.heads(p(x)) for p in (self.q_proj, self.k_proj, self.v_proj))
        scores = (q @ k.transpose(-2, -1)) * self.d_head ** -0.25  # BUG
        return self.merge(scores.softmax(-1) @ v)
