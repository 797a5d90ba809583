"""Weights that cannot move the output (weight-without-effect), and modules whose weights all
matter or are idle by design. Each buggy module marks the line the rule must point at with
``# BUG``."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Mlp(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.up = nn.Linear(n_embd, 2 * n_embd)
        self.down = nn.Linear(2 * n_embd, n_embd)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class MixerBlock(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.mlp = Mlp(n_embd)

    def attend(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MlpResultLost(MixerBlock):
    """The MLP's output is added to a stream that is then not the one returned."""

    def forward(self, x):
        h = x + self.attend(self.ln1(x))
        out = h + self.mlp(self.ln2(h))  # BUG
        if out.isnan().any():
            raise ValueError("non-finite")
        return h


class MlpResultUsed(MixerBlock):
    def forward(self, x):
        h = x + self.attend(self.ln1(x))
        return h + self.mlp(self.ln2(h))


class GateTimesZero(MixerBlock):
    """A gate read through `* 0` instead of `* 1`: the attention branch contributes nothing."""

    def forward(self, x):
        branch = self.attend(self.ln1(x))
        h = x + branch * torch.zeros_like(branch[..., :1])  # BUG
        return h + self.mlp(self.ln2(h))


class ZeroInitGate(MixerBlock):
    """ReZero: the branches are scaled by gates that start at zero, by design."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.alpha = nn.Parameter(torch.zeros(1))
        self.beta = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        h = x + self.alpha * self.attend(x)
        return h + self.beta * self.mlp(h)


class FrozenTeacherAndCache(MixerBlock):
    """A frozen branch, a branch only taken with a cache, and an embedding table whose rows are
    mostly not looked up: none of these weights is a finding."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.teacher = nn.Linear(n_embd, n_embd)
        self.teacher.requires_grad_(False)
        self.cache_proj = nn.Linear(n_embd, n_embd)
        self.types = nn.Embedding(50, n_embd)

    def forward(self, x, cache=None):
        h = x + self.attend(self.ln1(x)) + self.types(torch.zeros_like(x[..., 0], dtype=torch.long))
        with torch.no_grad():
            target = self.teacher(x)
        if cache is not None:
            h = h + self.cache_proj(cache)
        return h + self.mlp(self.ln2(h)), target


class AuxiliaryLossKept(MixerBlock):
    """A router computes a balance loss kept on the module: its weight reaches that, not the
    output's values."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.router = nn.Linear(n_embd, 4)

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        self.aux_loss = (probs.mean((0, 1)) ** 2).sum() * 4
        return x + self.mlp(self.ln2(x))


class LocationFromPreviousWeights(nn.Module):
    """Location-aware attention: a convolution over the previous step's weights, zeros on the
    first call (none given yet). Its weight cannot move this call's output by design."""

    def __init__(self, n_embd):
        super().__init__()
        self.location = nn.Conv1d(1, n_embd, kernel_size=3, padding=1)
        self.query = nn.Linear(n_embd, n_embd)
        self.score = nn.Linear(n_embd, 1)

    def forward(self, x, previous=None):
        B, T, C = x.shape
        if previous is None:
            previous = x.new_zeros(B, T)
        where = self.location(previous.unsqueeze(1)).transpose(1, 2)
        weights = torch.softmax(self.score(torch.tanh(self.query(x) + where)).squeeze(-1), dim=-1)
        return torch.bmm(weights.unsqueeze(1), x).squeeze(1)


class OneHeadKept(MixerBlock):
    """The attention's output cut to its first head: the other heads' rows of q, k and v are
    computed for nothing."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.proj = nn.Linear(n_embd // n_head, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        w = (q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)).softmax(-1)
        y = (w @ v)[:, 0]  # BUG
        return x + self.proj(y)


class MixingDiagonal(nn.Module):
    """A full (C, C) mixing matrix multiplied by the identity: only its diagonal is used."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.mix = nn.Parameter(torch.randn(n_embd, n_embd) / math.sqrt(n_embd))
        self.mlp = Mlp(n_embd)

    def forward(self, x):
        mixed = x @ (self.mix * torch.eye(x.shape[-1], dtype=x.dtype))  # BUG
        return x + self.mlp(mixed)


class MeanOnlyInEval(nn.Module):
    """An encoder head that makes a mean and a log-variance and, in eval, returns the mean: half
    of its rows matter only in training (a design, not a dropped head)."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.stats = nn.Linear(n_embd, 2 * n_embd)

    def forward(self, x):
        mean, log_var = self.stats(x).chunk(2, dim=-1)
        if self.training:
            return mean + torch.randn_like(mean) * (0.5 * log_var).exp()
        return mean


class CausalTokenMixing(nn.Module):
    """A learned (T, T) token-mixing matrix kept lower-triangular (causal): the upper triangle
    is masked by design."""

    def __init__(self, n_embd, n_head, length=7):
        super().__init__()
        self.mixing = nn.Parameter(torch.randn(length, length) / length)

    def forward(self, x):
        T = x.shape[1]
        weights = self.mixing[:T, :T].tril()
        return x + weights @ x


class GroupedHeadsAllUsed(MixerBlock):
    """Grouped-query attention: one key/value head shared by every query head; every row of
    every projection matters."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.kv = nn.Linear(n_embd, 2 * (n_embd // n_head))
        self.q = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        d = C // self.n_head
        q = self.q(x).view(B, T, self.n_head, d).transpose(1, 2)
        k, v = self.kv(x).view(B, T, 2, 1, d).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k.expand(B, self.n_head, T, d),
                                           v.expand(B, self.n_head, T, d))
        return x + self.proj(y.transpose(1, 2).reshape(B, T, C))


class ConditionWidthZero(MixerBlock):
    """A conditioning projection whose input width defaults to 0 (no conditioning given): its
    weight has no elements, only its bias shifts the stream."""

    def __init__(self, n_embd, n_head, cond_dim=0):
        super().__init__(n_embd, n_head)
        self.cond = nn.Linear(cond_dim, n_embd)

    def forward(self, x, c):
        return x + self.attend(x) + self.cond(c)[:, None, :]


class GreedyFlatDecoder(nn.Module):
    """Decodes greedily in eval, each step's output detached before it is fed back (no gradient
    reaches the query); the keys of the last step are kept on the module. The scores are
    flattened by a temperature, so the query moves the output only a little: a little is not
    nothing."""

    def __init__(self, n_embd, n_head):
        super().__init__()
        self.query = nn.Linear(n_embd, n_embd)
        self.key = nn.Linear(n_embd, n_embd)
        self.temperature = 1e7

    def forward(self, x):
        seq = x[:, :2]
        for _ in range(3):
            self.keys = self.key(seq)
            scores = self.query(seq[:, -1:]) @ self.keys.transpose(1, 2) / self.temperature
            step = torch.softmax(scores, dim=-1) @ seq
            seq = torch.cat([seq, step], dim=1).detach()
        return seq[:, 2:]


class PixelAttentionAfterDownsampling(nn.Module):
    """An image encoder whose attention runs over the pixels left after two stride-2
    convolutions: an image of 4 x 4 pixels leaves one, and attention over one key weighs it 1
    whatever the queries and keys say: not a weight without effect in the code."""

    def __init__(self, channels):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, channels, 3, stride=2, padding=1),
                                  nn.Conv2d(channels, channels, 3, stride=2, padding=1))
        self.q = nn.Conv2d(channels, channels, 1)
        self.k = nn.Conv2d(channels, channels, 1)
        self.v = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        h = self.down(x)
        b, c, hh, ww = h.shape
        q, k, v = (p(h).flatten(2).transpose(1, 2)[:, None] for p in (self.q, self.k, self.v))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return h + out[:, 0].transpose(1, 2).reshape(b, c, hh, ww)


class FinalNormLost(MixerBlock):
    """The final norm is taken into its own name and the head reads the stream before it: only
    a vector (the norm's scale and shift) goes unused, and nothing after it removes it by
    design, so it is judged."""

    def __init__(self, n_embd, n_head, vocab=13):
        super().__init__(n_embd, n_head)
        self.norm = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, x, return_embeddings=False):
        h = x + self.attend(self.ln1(x))
        h = h + self.mlp(self.ln2(h))
        embeddings = self.norm(h)  # BUG
        if return_embeddings:
            return embeddings
        return self.head(h)


class SummaryOnRequest(MixerBlock):
    """A summary of the tokens through a layer of its own, handed back only when the caller
    asks (``return_summary``): in the default call it reaches nothing, by design. Nothing after
    it reads what it was made from, unlike FinalNormLost's head."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.summary = nn.Linear(n_embd, n_embd)

    def forward(self, x, return_summary=False):
        h = x + self.attend(self.ln1(x))
        pooled = h.mean(dim=1)
        out = h + self.mlp(self.ln2(h))
        summary = self.summary(pooled)
        if not return_summary:
            return out
        return out, summary


class SummaryNeverReturned(SummaryOnRequest):
    """The same summary, read by a check and never handed back on any path."""

    def forward(self, x, return_summary=False):
        h = x + self.attend(self.ln1(x))
        pooled = h.mean(dim=1)
        out = h + self.mlp(self.ln2(h))
        summary = self.summary(pooled)  # BUG
        if return_summary and summary.isnan().any():
            raise ValueError("non-finite summary")
        return out


class NearestCode(nn.Module):
    """A codebook quantizer with a straight-through estimator: the codes' values go on, the
    gradient goes round them. Returns the codes, their indices and a commitment term."""

    def __init__(self, n_embd, n_codes=11):
        super().__init__()
        self.codes = nn.Parameter(torch.randn(n_codes, n_embd))

    def forward(self, z):
        distance = (z.unsqueeze(-2) - self.codes).pow(2).sum(-1)
        index = distance.argmin(dim=-1)
        chosen = self.codes[index]
        return z + (chosen - z).detach(), index, (chosen.detach() - z).pow(2).mean()


class CodesLeftUnused(MixerBlock):
    """The latents are quantized and the unquantized ones decoded: the codebook's values never
    reach the output (its gradient never did, by design of the estimator)."""

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.quantize = NearestCode(n_embd)

    def forward(self, x):
        h = x + self.attend(self.ln1(x))
        codes, index, _ = self.quantize(h)  # BUG
        return h + self.mlp(self.ln2(h))


class CodesUsed(CodesLeftUnused):
    def forward(self, x):
        h = x + self.attend(self.ln1(x))
        codes, index, _ = self.quantize(h)
        return codes + self.mlp(self.ln2(codes))


class FinalNormUsed(FinalNormLost):
    def forward(self, x, return_embeddings=False):
        h = x + self.attend(self.ln1(x))
        h = h + self.mlp(self.ln2(h))
        embeddings = self.norm(h)
        if return_embeddings:
            return embeddings
        return self.head(embeddings)


class KeyBiasRemovedBySoftmax(nn.Module):
    """A vector added along the queries, which the softmax over the keys removes: a choice of
    the model (attention-textbook's to judge), not a dropped result."""

    def __init__(self, n_embd):
        super().__init__()
        self.qk = nn.Linear(n_embd, 2 * n_embd)
        self.query_bias = nn.Parameter(torch.randn(n_embd))

    def forward(self, x):
        q, k = self.qk(x).chunk(2, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
        shift = (self.query_bias @ q.transpose(-2, -1)).unsqueeze(-1)  # the same for every key
        return (scores + shift).softmax(dim=-1) @ x


class LearnedDistanceBias(nn.Module):
    """a learned slope per head times the token distance, kept in a buffer for the next call"""
    def __init__(self, heads):
        super().__init__()
        self.slopes = nn.Parameter(torch.linspace(0.5, 0.05, heads).view(heads, 1, 1))
        self.register_buffer("table", None, persistent=False)

    def forward(self, scores):
        n = scores.shape[-1]
        if self.table is not None and self.table.shape[-1] >= n:
            return scores + self.table[..., :n, :n]
        steps = torch.arange(n)
        table = -(steps[None, :] - steps[:, None]).abs().float() * self.slopes
        self.register_buffer("table", table, persistent=False)
        return scores + table


class DistanceBiasCachedAndDropped(nn.Module):
    """the biased scores are computed (and the bias cached for later calls), then the softmax
    reads the scores without it"""
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.distance = LearnedDistanceBias(n_head)

    def attend(self, scores):
        return scores.softmax(dim=-1)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        biased = self.distance(scores)  # BUG
        weights = self.attend(scores)
        return self.proj((weights @ v).transpose(1, 2).reshape(B, T, C))


class DistanceBiasCachedAndUsed(DistanceBiasCachedAndDropped):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, C // self.n_head).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // self.n_head)
        weights = self.attend(self.distance(scores))
        return self.proj((weights @ v).transpose(1, 2).reshape(B, T, C))


class SummaryForNextCall(nn.Module):
    """keeps a learned summary of this call's tokens in a buffer: only the next call reads it"""
    def __init__(self, n_embd):
        super().__init__()
        self.summarise = nn.Linear(n_embd, n_embd)
        self.mix = nn.Linear(n_embd, n_embd)
        self.register_buffer("summary", None, persistent=False)

    def forward(self, x):
        out = x if self.summary is None else x + self.mix(self.summary).mean(dim=1, keepdim=True)
        self.register_buffer("summary", self.summarise(x), persistent=False)
        return out


def _rotate_pairs(t, angles):
    """Each pair (2i, 2i + 1) of the features turned by its angle."""
    even, odd = t[..., 0::2], t[..., 1::2]
    cos, sin = angles.cos(), angles.sin()
    return torch.stack((even * cos - odd * sin, even * cos + odd * sin), dim=-1).flatten(-2)


class PartialRotaryKeepsTheEnd(MixerBlock):
    """A partial rotation of the first r features of each head, the rest passed through; the
    rest is cut as the last r features, so the features between never reach the scores. The
    rotation is held as a staticmethod attribute (a module the checks must still copy)."""

    rest = "end"

    def __init__(self, n_embd, n_head):
        super().__init__(n_embd, n_head)
        self.rotate = staticmethod(_rotate_pairs)
        self.r = 4
        self.register_buffer("freqs", 1.0 / 10000 ** (torch.arange(0, self.r, 2) / self.r))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in self.qkv(x).split(C, dim=2))
        angles = torch.arange(T)[:, None] * self.freqs
        turned = []
        for t in (q, k):
            if self.rest == "end":
                rot, rest = t[..., :self.r], t[..., -self.r:]  # BUG
            else:
                rot, rest = t[..., :self.r], t[..., self.r:]
            turned.append(torch.cat((self.rotate.__func__(rot, angles), rest), dim=-1))
        q, k = turned
        w = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1)
        return x + (w @ v).transpose(1, 2).reshape(B, T, -1)


class PartialRotaryKeepsTheRest(PartialRotaryKeepsTheEnd):
    rest = "rest"
