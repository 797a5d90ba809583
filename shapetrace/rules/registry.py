"""The rule registry: the single place that lists every rule shapetrace knows.

Each rule is data (code, name, severity, summary, explanation, a wrong and a right example) plus
the function that finds it. ``python -m shapetrace --rules`` and docs/rules.md are generated from
this table, and findings are made only through ``diagnostic()`` below, which takes the code and
severity from it.

``check`` names the function of a rule read from the trace, as ``"family:function"`` in this
package (``"reshape:check_jumble"`` is ``shapetrace.rules.reshape.check_jumble``): it takes one
``shapetrace.analysis.facts.Analysis`` and yields Diagnostics. Behaviour rules (``kind="behaviour"``)
are found by running the module again (``shapetrace.behaviour``), and annotation-mismatch from
the exception a jaxtyping check raised (``shapetrace.rules.annotations``): they have no ``check``.
"""

from __future__ import annotations

from ..base.diagnostics import Diagnostic
from .later import LATER
from .rule import Rule, _r


_ALL = [
    _r("ST001", "reshape-jumble", "error",
       "a view/reshape that is not a pure split or merge of adjacent axes in their current order",
       """
       `view` and `reshape` reinterpret memory in row-major order. They can split one axis into
       adjacent axes or merge adjacent axes, nothing else. Reshaping (B, T, C) straight to (B, H, T,
       d) keeps the element count but deals the tokens of one sample out across the heads: every
       head sees a slice of the wrong positions. shapetrace tracks where each axis came from (its
       provenance) and flags any reshape that would need a transpose to be right.
       """,
       """
       q = self.q_proj(x).view(B, self.n_head, T, self.head_size)   # (B, T, C) -> (B, H, T, d)
       """,
       """
       q = self.q_proj(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)
       """, check="reshape:check_jumble"),
    _r("ST002", "reversed-transpose", "error",
       "`.T` / `.t()` / a full reversal on a tensor with more than 2 axes",
       """
       `x.T` reverses *all* axes. On a (B, T, d) key tensor it gives (d, T, B), not the (B, d, T)
       that `q @ k^T` needs; with equal sizes it silently mixes samples. Use `k.transpose(-2, -1)`
       or `k.mT` to swap the last two axes.
       """,
       """
       scores = q @ k.T
       """,
       """
       scores = q @ k.transpose(-2, -1)
       """, check="misc:check_reversed"),
    _r("ST003", "silent-broadcast", "warning",
       "both operands stretched (outer-product style), or a matmul broadcasting a size-1 batch",
       """
       Broadcasting stretches size-1 axes. When *both* operands are stretched, an elementwise op
       quietly becomes an outer product: `(B, 1) - (B,)` is (B, B), and a loss averaged over it is
       wrong but finite. shapetrace warns unless the pattern is a known idiom (masks, biases, ALiBi
       slopes, multi-query keys, rotary tables, `arange[:, None] >= arange[None, :]`), or the
       all-pairs table meets, within a few ops, one of its very shape that a matrix product made
       (`q @ k.T / (|q| * |k|.T)`: scaled cosine attention asks for the pairs). A matmul
       broadcasts its batch axes the same way: `(7, 2, 3, 4) @ (7, 1, 4, 5)` reuses one matrix for
       both of the 2. That is flagged when the size-1 axis came about by accident (a slice to one
       element such as `v[:1]`, a keepdim reduction, a factory given a 1), not when it was put there
       on purpose (`unsqueeze`, `None`, a view), is a parameter shared by every sample, or is one
       key/value head met by the query heads (multi-query attention).
       """,
       """
       loss = ((pred - target) ** 2).mean()     # pred (B, 1), target (B,) -> (B, B)
       """,
       """
       loss = ((pred.squeeze(-1) - target) ** 2).mean()
       """, check="broadcast:check_broadcast"),
    _r("ST004", "softmax-axis", "error",
       "the softmax normalises an axis other than the one the next matmul contracts",
       """
       Attention weights must sum to 1 over the keys, the axis that `weights @ v` contracts with the
       values. A softmax over the heads (dim=1 of (B, H, T, T)), over the queries (dim=-2) or over
       the batch still produces numbers in [0, 1] and trains, badly. Scores written keys first
       (`einsum('bqd,bkd->bkq', q, k)`) and normalised over the axis the values are contracted
       over still average the values, with the roles of q and k swapped: a warning ("keys-first")
       when both come from sequences of one length (self-attention), an error otherwise.
       """,
       """
       att = F.softmax(scores, dim=1)      # scores (B, H, T, T): normalises over heads
       out = att @ v
       """,
       """
       att = F.softmax(scores, dim=-1)     # over the keys
       out = att @ v
       """, reads_values=True, check="softmax:check_softmax_axis",
       variants=(("keys-first", "warning"),)),
    _r("ST005", "attention-scale", "error",
       "scores scaled by sqrt(C) or sqrt(H) instead of sqrt(head size), scaled twice, or not at all",
       """
       Scaled dot-product attention divides the scores by sqrt(d), the head size, so their variance
       does not grow with d. Dividing by sqrt(C) (the model width) flattens the softmax by a factor
       sqrt(H); scaling twice is a common refactoring slip, and so is head_size ** -0.25, the
       factor meant for q and for k each, applied once. With prime probe sizes shapetrace can
       read which factor was used. No scale at all is only a warning, and only where q and k are
       learned projections: some architectures (T5) fold it into their initialisation; it is an
       error when the module itself made the factor (an attribute equal to 1/sqrt(d), such as
       `self.scale = dim_head ** -0.5`) and no method of its class reads it again. Dot products
       of raw states (Luong attention), cosine similarities (queries and keys of unit length:
       `F.normalize`, or a tensor over its own L2 norm, rotated or not, by matmul or SDPA; not
       RMS-normalised ones, whose entries keep their unit size) and scores multiplied by a
       learned temperature owe no 1/sqrt(d) and are not judged.
       """,
       """
       scores = q @ k.transpose(-2, -1) / math.sqrt(self.n_embd)
       """,
       """
       scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
       """, variants=(("unscaled", "warning"),), check="scale:check_scale",
       explains=("attention-textbook",)),
    _r("ST006", "unnormalized-attention", "error",
       "the weights contracted with the values do not sum to 1 along the contracted axis",
       """
       After the softmax, each row of attention weights is a probability distribution. Masking after
       the softmax (zeroing future positions) or scaling after it breaks that, so the output is no
       longer an average of the values. Mask the scores before the softmax, or renormalise.
       Weights combined with another softmax's weights (differential attention takes a multiple
       of a second map from the first; two maps averaged) are a mixture the model chose, and
       are not judged.
       """,
       """
       att = F.softmax(scores, dim=-1).masked_fill(future, 0.0)
       out = att @ v
       """,
       """
       att = F.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
       out = att @ v
       """, needs_values=True, reads_values=True, check="softmax:check_unnormalized"),
    _r("ST007", "discarded-result", "error",
       "a value computed and never used: a dropped result, a projection, softmax or module "
       "output overwritten or ignored; a layer never called (warning)",
       """
       Out-of-place tensor methods return a new tensor and leave their input unchanged.
       `scores.masked_fill(mask, -inf)` alone on a line does nothing: the causal mask is dropped and
       the model can see the future. Assign the result, or use the in-place `masked_fill_`. The same
       slip hides in assignments: `q = self.to_q(x)` followed by `q = x.view(...)` throws the
       projection away, `w = scores.softmax(-1)` followed by `w = self.drop(scores)` throws the
       softmax away, and `out, cache = self.block(x)` with `out` never read throws the block away.
       shapetrace follows every value through the ops that read it: a value that reaches no output,
       no loss, no tensor kept on a module and no write into a tensor the caller can see is dead,
       and a dead layer output, product, softmax, attention or module output is reported with what
       replaced it, when the code could not have used it on any path (its variable is assigned
       again, or never read, before anything reads it; a branch that only remakes it from itself,
       `v = v.expand(...)`, is no read). The finding is placed at the line that
       made the wrong value when one did (`q = x.view(...)` reading the `x` the projection read,
       `v = k.view(...)` reading a sibling of `q, k, v = ...`: the line to fix), naming the line of
       the value left unused; else at that value's own line. A plain layer (`nn.Linear`,
       `nn.Embedding`, `nn.Conv2d`, a norm) that its module defines but never calls, with no op reading
       its weights and no other line naming it (but under a test that is never true, `if self.pos_emb
       and False:`, where the finding is placed), is a warning: its weights are trained for nothing;
       it is an error when a sibling layer of the same shapes is called on one input more than once
       (`k = self.w_q(x)` copied from the line above: the call after the first is placed, and the
       unused layer is named as the one it was built for), or at two places of the code while the
       unused one is called at none (the feed-forward's pre-norm calling the attention's norm
       again: the later call is placed). A
       placeholder never read (`out = torch.zeros_like(query)`, `torch.empty(...)` left from a
       starter file: a value made from nothing but sizes) loses no computation and is only a note; a
       dead mask, projection, scores or softmax stays an error. An argument a forward drops is one
       too: the caller's line passes a value (`layer(norm(x), x)`), and every place the forward
       reads it binds a name that nothing reads afterwards (`residual = default(residual, x)`, then
       the skip path adds `x`): the finding is placed at that line. A parameter never read (kept for
       a common signature), read anywhere else (a test other than `is None`, a call, a branch), or
       passed as None or a constant flag says nothing.
       """,
       """
       q = self.to_q(x)
       q = x.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)   # the projection is lost
       """,
       """
       q = self.to_q(x)
       q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
       """, variants=(("unused-layer", "warning"), ("placeholder", "info")),
       check="misc:check_discarded", explains=("weight-without-effect",)),
    _r("ST008", "causal-leak", "error",
       "an output position depends on a later input position in a module meant to be causal",
       """
       A decoder must not see the future: output t may depend on inputs 0..t only. shapetrace
       differentiates every output position with respect to every input position and shows the
       dependency grid. Intent comes from a triangular mask, `is_causal=True`, a true `causal` /
       `is_causal` / `autoregressive` argument or attribute, a class name that says so (`Causal...`,
       `GPT...`, `...AutoRegressive...`), a running sum over T (causal linear attention), or
       `--causal`; without it a note says that causal-leak was not checked. With two or more inputs
       along T, only those the first causally masked op depends on are judged: an encoder-decoder's
       source, as long as its target and read whole, is left out, with a note. A dependency that
       autograd cannot see (a maximum over T taken under `torch.no_grad()` or through `.detach()`)
       is found by changing the last position and watching the earlier ones. A model whose output
       has no time axis (a classifier that pools over T) is checked up to the pooling. When the
       first op that sees the future is a softmax whose scores were masked so that each query's
       earlier keys are hidden and every later key is kept (read from the values: `triu` for `tril`,
       `>=` for `<=`, an additive mask transposed), the mask is inverted: the finding is at the line
       that built the mask (at the op that applied it, for a mask built outside the forward), naming
       where it was applied and where the weights were taken. A 0/1 triangle multiplied into the
       scores (`scores * tril`) sets each query's later keys to 0, which the softmax still weighs
       (exp(0) = 1): the finding is at that product. A triangle kept for the longest sequence and
       cut with an index where a slice was meant (`tri[:, :, T, T]` for `tri[:, :, :T, :T]`) is one
       entry, the same for every query and key, and hides none: the finding is at the index.
       """,
       """
       scores.masked_fill(mask, float("-inf"))        # result dropped: no mask at all
       """,
       """
       scores = scores.masked_fill(mask, float("-inf"))
       """, kind="behaviour", needs_values=True),
    _r("ST009", "batch-leak", "error",
       "a sample's output depends on another sample, or on its position in the batch",
       """
       Samples in a batch must not talk to each other. A softmax or norm over the batch axis,
       `nn.MultiheadAttention` fed (B, T, C) without `batch_first=True`, or positions indexed by the
       batch axis all mix samples and still train. The check reorders the batch and also changes one
       sample's values (a batch mean under `torch.no_grad()` is found too). Every run starts from
       the model's state as it was (a cache kept across calls is put back); a model whose run stores
       per-sample state (a KV cache) is not reordered, and a note says so.
       """,
       """
       mha = nn.MultiheadAttention(C, H)              # expects (T, B, C)
       out, _ = mha(x, x, x)                          # x is (B, T, C)
       """,
       """
       mha = nn.MultiheadAttention(C, H, batch_first=True)
       out, _ = mha(x, x, x)
       """, kind="behaviour", needs_values=True),
    _r("ST010", "nondeterministic-eval", "error",
       "two runs in eval mode give different outputs",
       """
       In eval mode a module must be a function of its inputs. `F.dropout(x, p)` defaults to
       `training=True` whatever the module's mode, so evaluation stays random. Gaussian noise drawn
       per sample (a sampler's, a noise injection's) may be meant, and so may indices drawn at
       random (`torch.randint`, `randperm`, `multinomial`: the keys ProbSparse attention samples
       to score): a warning ("noise"); so may a
       dropout whose call itself passes `training=True` (Tacotron's prenet keeps its dropout at
       inference, Monte Carlo dropout samples with it): a warning ("asked").
       """,
       """
       att = F.dropout(att, p=self.dropout)
       """,
       """
       att = F.dropout(att, p=self.dropout, training=self.training)
       """, kind="behaviour", needs_values=True, variants=(("noise", "warning"), ("asked", "warning"))),
    _r("ST011", "non-finite", "error",
       "the first op that turns finite inputs into NaN or Inf; one the module held before it ran (warning)",
       """
       A softmax over a row that is entirely -inf (every key masked) returns NaN, and one NaN
       spreads through the whole batch. shapetrace names the first op whose inputs were finite and
       whose output is not. A NaN the module held before it ran (a table its constructor divided
       0 by 0 to make) is found by running the constructor again, every op watched: the error is
       at the constructor's line that made it; where no line is found, a warning naming the
       buffers or weights that hold it.
       """,
       """
       scores = scores.masked_fill(mask == 0, float("-inf"))   # mask has an all-zero row
       att = F.softmax(scores, dim=-1)
       """,
       """
       scores = scores.masked_fill(mask == 0, torch.finfo(scores.dtype).min)
       att = F.softmax(scores, dim=-1)
       """, variants=(("held", "warning"),), needs_values=True, reads_values=True,
       check="nonfinite:check_non_finite"),
    _r("ST012", "noncontiguous-view", "error",
       "`.view` on a non-contiguous tensor",
       """
       `.view` never copies, so it fails on a tensor whose memory is not laid out in row-major
       order, typically right after a `transpose` or `permute`. shapetrace names the op that made
       the tensor non-contiguous. An error is what happened in this run: the view raised on the real
       tensor. Under `--fake` a view can fail on the strides torch predicts for an op whose memory
       layout each backend chooses for itself (an `einsum`, a `matmul`, attention kernels): that
       finding is a warning, and says so, since on your backend the tensor may come out contiguous
       and the view run.
       """,
       """
       y = y.transpose(1, 2).view(B, T, C)
       """,
       """
       y = y.transpose(1, 2).contiguous().view(B, T, C)   # or .reshape(B, T, C)
       """, kind="runtime", variants=(("predicted", "warning"),),
       check="failures:check_noncontiguous"),
    _r("ST013", "op-failed", "error",
       "an op raised: its operands in named dims, the source line and a hint",
       """
       When an op raises, shapetrace keeps the trace up to it and shows the operands in named
       dimensions, so `(B, H, T, d) @ (B, T, H, d)` reads as the transposed key it is.
       """,
       """
       scores = q @ k.transpose(1, 2)         # q (B, H, T, d), k (B, H, T, d)
       """,
       """
       scores = q @ k.transpose(-2, -1)
       """, kind="runtime", check="failures:check_failed"),
    _r("ST014", "annotation-mismatch", "error",
       "a jaxtyping/beartype annotation was violated",
       """
       Functions annotated with jaxtyping (`Float[Tensor, "B T C"]`) are checked at run time by
       beartype. shapetrace reports which argument, which dimension, and expected vs got.
       """,
       """
       def forward(self, x: Float[Tensor, "B T C"]) -> Float[Tensor, "B T C"]: ...
       model(torch.randn(B, T, 2 * C))        # x: dim C is 286, expected 143
       """,
       """
       model(torch.randn(B, T, C))
       """, kind="runtime"),
    _r("ST015", "dim-collision", "warning",
       "two named dims have equal sizes in this run",
       """
       shapetrace tells axes apart by their sizes, which is why the probe sizes are distinct primes.
       When two names share a size (B == T), a swap of those axes cannot be seen and the rules that
       depend on it lose their power.
       """,
       """
       python -m shapetrace model.py --dims B=7      # B == T == 7
       """,
       """
       python -m shapetrace model.py --dims B=3
       """, check="misc:check_collisions"),
    _r("ST016", "input-mutated", "error",
       "forward changed a tensor the caller passed in as data (`x += pos` on the input)",
       """
       `x += self.pos`, `x.add_(...)` or `x[:, 0] = 0` inside `forward` write into the caller's
       tensor: what the caller holds after the call is not what it passed, and calling the module
       twice on the same tensor gives a different result (a training loop that reuses a batch, an
       evaluation after a check). shapetrace keeps a copy of every argument, compares after each op,
       and names the op that changed one. Tensors passed in to be filled are expected to change and
       are not reported: arguments named for a cache, a past, a state, a buffer, a memory or an
       output (`kv_cache`, `layer_past`, `state`, `out`), and any tensor written as an op's `out=`.
       """,
       """
       def forward(self, x):
           x += self.pos_emb[: x.shape[1]]            # writes into the caller's x
       """,
       """
       def forward(self, x):
           x = x + self.pos_emb[: x.shape[1]]
       """, kind="behaviour", needs_values=True),
    _r("ST017", "head-grouping", "warning",
       "grouped-query key/value heads repeated in an order that does not match the query groups",
       """
       In grouped-query attention H query heads share Hkv key/value heads in groups of G = H / Hkv:
       query heads 0..G-1 use key/value head 0, and so on. Every pretrained checkpoint (Llama,
       Mistral, Qwen) and SDPA's `enable_gqa=True` use this layout, so the key/value heads must be
       repeated in place: `repeat_interleave(G, dim=1)`, HF's `repeat_kv`, einops `b h t d -> b (h
       g) t d`. `k.repeat(1, G, 1, 1)` tiles them (kv0, kv1, kv0, kv1, ...) and pairs query heads
       with the wrong key/value heads; every shape is right and the model still trains. shapetrace
       follows each head axis back to the projection it was cut from and reads whether the copy
       index lies major or minor to the key/value head index. With one key/value head (multi-query
       attention) both orders are the same and nothing is flagged.
       """,
       """
       k = k.repeat(1, self.n_rep, 1, 1)        # (B, Hkv, T, d) -> (B, H, T, d): kv0, kv1, kv0, ...
       """,
       """
       k = k.repeat_interleave(self.n_rep, dim=1)   # kv0, kv0, kv0, kv1, kv1, kv1
       """, check="heads:check_grouping"),
    _r("ST018", "reference-mismatch", "error",
       "with the same weights, the output differs from the reference implementation's",
       """
       With a `reference` named (`reference = "solution/attention.py::MultiHeadAttention"` in the
       config, `--reference` on the command line), the module and the reference are built at the
       probe sizes, the reference gets the module's weights (by state_dict key, else by shape in
       order; a fused qkv weight against separate query/key/value weights in any layout that makes
       them agree) and both run in eval mode on the same inputs, in float64. Outputs that differ
       beyond float tolerance are a finding at the first op where the two computations part: the
       first value of yours computed from values the reference also has that matches none of its
       own, compared with the reference's value there (masked differently, a scale factor,
       transposed, reordered heads or tokens, or other values).
       """,
       """
       q = self.query(x).view(B, self.n_head, T, self.head_size)   # the reference splits heads
       """,
       """
       q = self.query(x).view(B, T, self.n_head, self.head_size).transpose(1, 2)
       """, kind="behaviour", needs_values=True),
    _r("ST019", "position-axis", "error",
       "positions counted, cut or applied along the batch, heads, head size or width, not time",
       """
       A position table (positions from `torch.arange`, looked up in an embedding, turned into
       sin/cos or rotary angles, or a sinusoid or learned table of the module's own cut to a length)
       must be counted, cut and broadcast along the time axis: T, S, the maximum length L, or a
       patch or window axis. Counted by the wrong axis it still broadcasts and nothing raises:
       `self.pe[:x.size(0)]` on a batch-first (B, T, C) input gives sample b position b and every
       token of it the same one; rotary angles for `arange(q.size(1))` on a (B, H, T, d) tensor turn
       each head by its index and the tokens not at all. shapetrace follows the position axis
       through the ops to the data it meets and reports, at the line that counted or cut the
       positions, positions that run along B, H, d or C there (a table of T rows made in forward and
       cut by `t.shape[-2]` of a (B, T, H, d) tensor, too). ALiBi, relative position biases, patch
       positions, cross-attention sources (S) and a table looked up whole by head (`arange(H)` into
       an H-row embedding) are not position tables run along the wrong axis, and are quiet.
       """,
       """
       B, T, C = x.shape
       x = x + self.pe[: x.size(0)]                  # pe (L, 1, C): cut by B
       """,
       """
       B, T, C = x.shape
       x = x + self.pe[: x.size(1)].transpose(0, 1)  # cut by T, (1, T, C)
       """, check="positions:check_positions", explains=("batch-leak", "positions-ignored")),
    _r("ST025", "attention-textbook", "error",
       "attention weights that differ from softmax(q·kᵀ/√d + the terms the code adds)",
       """
       The module is run again in float64 and every attention (a softmax whose weights are
       contracted with values) is read from its values, op by op from q and k to the softmax: a step
       whose output is a positive multiple of its input (in any order: transposes, `q *= scale`,
       `scores / math.sqrt(d)`) is a factor; an addition puts a term on the scores (a bias, a
       position table, an additive mask). The factors multiply to the scale the code applied; where
       it is not 1/√d (d the size q·k sums over), the weights are recomputed with the textbook scale
       and the same terms, and the finding says which part differs (no scale, scaled twice, the root
       of another size), at the op that applied the last factor, with the line of each factor. A
       negative factor on q or k (`scale = d * -0.5`, a typo of `d ** -0.5`; keys negated) negates
       the scores, whatever its size: the least similar keys get the most weight. The
       same non-zero term added twice on the way to one softmax is a bias added twice. A learned
       term (not made from the input) added to the scores that is the same at every position of the
       axis the softmax normalises (a key bias broadcast over the queries, `bias[:, None]`) is
       removed by the softmax: it is reported at the addition, with the line that built it. A mask
       the forward builds (from the token ids, the sizes) that fills every key of every query makes
       each row of scores one value, so every weight is 1/keys whatever q and k (a condition
       written the wrong way round: `x < 0` for `x >= 0`): it is reported at the line that built
       the mask, with the fill's line; a mask handed in is not judged. Weights taken from a
       distance between queries and keys (`torch.cdist`) that only positive factors, fills and
       moves separate from the softmax give the farthest key the most weight: attention by
       distance takes the softmax of minus the distance (reported at the distance, saying
       whether it was scaled). A term that is a slope times the distance between query and key
       (ALiBi's bias), read on the positions the softmax weighs, must fall with the distance: one
       that grows with it for every head (slopes and offsets of signs that give the farthest keys
       the largest scores) is reported at the product of slopes and offsets, naming where each was
       made; a learned table of offsets is no such line and says nothing. Nothing is said where
       the reading is not sure: a learned or tensor factor, cosine similarities, dot
       products of raw inputs, a soft cap, factors that cancel. Where attention-scale already
       reports the same line, it is one finding. And an input beside others (a decoder state
       beside the encoder's outputs) that reaches an attention's scores only as a term the same
       for every key (an additive score `v · W[h; e_j]` without its `tanh`) moves the scores and
       never the weights: by autograd, the weights' gradient with respect to it is zero to
       rounding while the scores' is not; reported at the softmax that removed it.
       """,
       """
       scores = q @ k.transpose(-2, -1) / math.sqrt(d) + self.rel_bias
       scores = scores + self.rel_bias                    # the bias added again
       """,
       """
       scores = q @ k.transpose(-2, -1) / math.sqrt(d) + self.rel_bias
       """, kind="behaviour", needs_values=True),
    _r("ST030", "constant-result", "error",
       "an op whose result is constant whatever its input: a softmax or layer norm over an axis "
       "of size 1, an einsum that takes the diagonal of query and key axes",
       """
       Some ops throw their input away because of the axis they are given. A softmax over an axis of
       size 1 returns 1 everywhere (a log-softmax 0), so does `x / x.sum(dim, keepdim=True)`, and a
       layer norm over it returns its bias: attention pooling written `F.softmax(self.score(x),
       dim=-1)` on (B, T, 1) scores gives every position the weight 1. At the probe sizes every real
       axis is larger than 1, so a size-1 axis is one the code made (a keepdim reduction, an
       unsqueeze, a projection to one score); a size declared as 1 or a `topk(k=1)` is left alone.
       An einsum that repeats an index inside one operand takes a diagonal: on scores or attention
       weights whose repeated axes are the query and the key axes of the product that made them
       (`'bhqq,bqhd->bqhd'`), each query keeps only its weight for its own position and every other
       key is dropped. The finding names the axis or the index that collapses.
       """,
       """
       w = F.softmax(self.score(x), dim=-1)        # (B, T, 1): every weight is 1
       y = torch.einsum("bhqq,bqhd->bqhd", w, v)   # the diagonal of the weights
       """,
       """
       w = F.softmax(self.score(x), dim=1)         # over the positions
       y = torch.einsum("bhqk,bkhd->bqhd", w, v)
       """, check="collapse:check_constant"),
    *LATER,
    _r("ST040", "not-implemented", "error",
       "forward is not written yet: it raises NotImplementedError, or returns a placeholder",
       """
       A starter file's forward that was never filled in: it raises `NotImplementedError`, or the
       module has layers, reads none of their weights, and returns `None` (a body of `pass`), one of
       its inputs unchanged, or a tensor made from nothing but sizes (`torch.empty(B, T, C)`,
       `torch.zeros_like(x)`). shapetrace decides it by where the output comes from, never by its
       values, so uninitialised memory gives the same verdict in every run. It is the target's one
       finding: the checks that re-run the module and the comparison with a reference are not made.
       A module without parameters (a mask maker, an identity) is never called unfinished.
       """,
       """
       def forward(self, query, key, value):
           out = torch.empty(query.shape)   # TODO
           return out
       """,
       """
       def forward(self, query, key, value):
           q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
           return self.out_proj(attention(q, k, v))
       """, kind="behaviour"),
]

RULES: dict[str, Rule] = {r.name: r for r in _ALL}


def diagnostic(rule: str, message: str, hint: str = "", *, rec=None, variant: str | None = None,
               file: str | None = None, line: int | None = None, module: str | None = None,
               op: str | None = None, record: int | None = None,
               made_at: tuple[str | None, int | None] | None = None, **data) -> Diagnostic:
    """The one way a finding is made: code and severity come from this table (``variant``
    picks a milder severity the rule declares), the place from ``rec`` (an OpRecord: its file,
    line, module path and op, and its index: ``record``) unless given explicitly (``record=-1``
    puts a finding about the whole run first). ``made_at``: ``(file, line)`` that made the wrong
    value, proven on another line: the finding goes there, the op's place to ``used_at``."""
    entry = RULES[rule]
    if rec is not None:
        record = rec.index if record is None else record
        file = file if file is not None else rec.file
        line = line if line is not None else rec.line
        module = module if module is not None else (rec.module or None)
        op = op if op is not None else rec.op
    return Diagnostic(rule=rule, severity=entry.severity_of(variant), message=message, hint=hint,
                      file=file, line=line, module=module, op=op, code=entry.code, data=data,
                      record=record).made_at(made_at)
