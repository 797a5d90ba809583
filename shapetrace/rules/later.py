"""The registry's rows for the properties checked by running the module again (a second call,
the weights' reach, a padding mask, a rotary turn) and for a residual of itself: kept apart from
``registry`` for length; ``registry.RULES`` lists them in this order after constant-result."""

from __future__ import annotations

from .rule import _r

LATER = [
    _r("ST031", "stateful-forward", "error",
       "a forward that writes state the next call reads: the same call answers differently "
       "after a first one",
       """
       In eval, calling a module twice on the same inputs must give the same output. A forward that
       writes its own state breaks that from the second call on: a position table cached from the
       first call's length and reused for a shorter input, a bias added to a parameter in place, a
       tensor attribute updated each call. shapetrace calls the module once, then again without
       putting its state back, on the same inputs and on inputs two positions shorter, and compares
       each with the same call on the module as built (before any forward: a bias a first call
       caches counts); when they differ the finding is at the op that made the value the first call
       left behind that alone makes the difference (not a mask cached beside it), naming where the
       next call reads it; a second call that raises where the first does not is a finding too.
       State with a batch axis (a KV cache or recurrent memory kept for the next call), a second
       call whose outputs have other shapes (an incremental decode), and a table built lazily that
       is the same on the second call are not findings.
       """,
       """
       if self.angles is None:                      # built once, scaled by the first length
           self.angles = torch.arange(x.size(1))[:, None] * self.freq / x.size(1)
       return x + torch.sin(self.angles[: x.size(1)])
       """,
       """
       angles = torch.arange(x.size(1))[:, None] * self.freq / x.size(1)   # every call
       return x + torch.sin(angles)
       """, kind="behaviour", needs_values=True),
    _r("ST032", "weight-without-effect", "error",
       "a weight the forward computes with that cannot move the output: a layer whose result is "
       "dropped, a contribution removed on the way",
       """
       Every weight a forward reads should be able to change what it returns. A block computed and
       then not added to the stream, a branch whose result is overwritten, a weight whose
       contribution is multiplied away: its gradient is zero and it is trained for nothing.
       shapetrace re-runs the module in float64 with every parameter changed a little (so that a
       gate or an output layer initialised to zero, by design, hides nothing), takes the gradient of
       a random projection of the outputs (and of tensors the forward keeps on the module, such as
       an auxiliary loss), and reports each weight matrix that an op read with its gradient on,
       whose gradient is exactly zero, and whose values can be changed without changing any output
       (beyond rounding: a weight that moves the outputs at all, however weakly, is not reported).
       The finding is at the line where the weight's value path ends: the call whose result was
       dropped (for a layer called inside a helper function that hands its result back, `return
       fn(x)`, the caller's line that drops what the helper returns), or the op that removed its
       contribution; its values are followed through `detach`
       (a codebook behind a straight-through estimator), and a later op that reads what the dropped
       call took (`self.head(h)` beside `embeddings = self.norm(h)`) is named as where its result
       may have been meant. A result the code hands back only when asked (`return out, extra`
       after `if not return_extra: return out`, nothing after it reading what it was made from)
       is a side output of this call, not a dropped one; of several results a module call
       returns, one is dropped when the caller binds it to a name never read again (not `_`).
       Weights not read in this call (a branch not
       taken, a cache path), read under `torch.no_grad()`, and frozen are not judged; vectors
       (biases, norm scales, which a softmax or a norm after them may remove by design) only where
       their value path is dropped (a final norm taken into a name the head does not read); an
       embedding table is judged as a whole. Four parts of a weight are judged too: a square
       weight of which only the diagonal has a gradient (`w * torch.eye(n)`), a projection whose
       rows are parts of H heads of size d with the same heads dropped in every part (`y[:, 0]`
       keeping one head of a fused qkv), and one whose heads all drop the same features (`q[...,
       -r:]` where `q[..., r:]` was meant, for the rest of a partial rotation), and the rows of a
       table read only through an index kept on the module, whole, that is a window's table of
       relative offsets (square, one row for each token with itself, opposite offsets symmetric
       about it: a relative-position index built in the constructor), that the index never selects (offsets flattened with the wrong
       strides share rows and leave others unread: reported at the constructor's line that made
       the index), each confirmed by changing the part alone and reported at the op that read a
       value depending on it and returned one that does not. Other parts (rows of a table past the
       probe's length or picked by the input's tokens, distances clipped to a range the probe's
       length does not fill, a padding row, half a projection used only in training, a causal
       triangle) are not judged.
       """,
       """
       h = x + self.attn(self.ln1(x))
       out = h + self.mlp(self.ln2(h))
       return h                                    # the MLP's weights have no effect
       """,
       """
       h = x + self.attn(self.ln1(x))
       return h + self.mlp(self.ln2(h))
       """, kind="behaviour", needs_values=True),
    _r("ST033", "mask-ignored", "error",
       "a (B, T) mask that does not hide what it says: masked positions move the output at kept ones",
       """
       A 0/1 `attention_mask` (B, T) that shapetrace makes is padded as a tokenizer pads (each
       sequence its real tokens first, then padding). When the output at real positions depends on
       the inputs at padded positions and the output is the same with every position marked real,
       the mask never reached the attention: the finding names the op that mixes the padded
       positions in. Checked like causal-leak, by autograd. Which values of a mask mean padding is
       the code's own convention (1 = padding is one too), so, where the code does not say, a mask
       that changes the output is not judged. Where it says (the reading the driver gives masks by:
       `masked_fill(mask == 0, ...)` or SDPA's boolean `attn_mask` keep the True positions,
       `masked_fill(mask, ...)` hides them, `scores * mask` keeps 1), a (B, T) mask applied to the
       attention scores is judged by that reading even when it changes the output: a mask applied to
       the queries' rows instead of the keys (`mask[:, None, :, None]`) is found at the op that
       applied it, naming the op that lets the masked positions through. Only an attention is judged
       (a product of weights over two position axes, SDPA, a softmax over the positions, or the
       weighted sum of an attention pooling): a convolution or a plain pooling that mixes positions
       is a design choice, and a mask that hides only outputs (not scores) is not a key mask; a
       mask cast to floats for a mean pooling (`h * mask.float().unsqueeze(-1)`) is applied there,
       so an encoder called without it, which mixes the padding into the real tokens before the
       pooling leaves it out, is found at the pooling, naming the op that mixed them. A
       declared meaning (`mask-keep`) stands: a mask turned the other way (`attention_mask == 0` for
       SDPA) is found where it was turned. A (B, T) 0/1 mask of no stated meaning (a declared
       `mask=B,T:bool`, any values) that the forward reads (reshapes it, pads it for a null key,
       makes a bias of it) and that changes nothing however it is set (every position kept, or
       each turned the other way), while an attention weighs the positions it masks, was
       prepared and dropped: found at the line that called the attention without it (or at the
       softmax, in one forward), naming where it was read. A mask the forward never reads (a
       signature kept for a common interface) is not judged. Hiding the padded values is not
       enough: where a mask whose meaning the code says hides them, the same real tokens are run
       again without the padding (the sequence cut to its real length; another input of the same
       length whose last positions still move those outputs, an encoder's memory beside the
       decoder's tokens, is kept whole) and must give the same output at those tokens. When they do not, the first op whose output at the real positions
       differs between the two runs is named if it counts positions: a softmax over them (padded
       keys zeroed but still weighed: a score of 0 takes weight), a sum or mean over them
       (`(h * mask).mean(1)`) or a division by their number (`/ h.shape[1]`); any other first
       difference (a convolution reaching past the last real token, a score scaled by the
       length, the last position read as a summary) is a design this check does not judge.
       Masks read so: `(1 - mask) * -1e4` keeps the 1s, `mask * -1e9` drops them, torch's
       `key_padding_mask=mask` drops them (`~mask` keeps them), and a mask multiplied into the
       values after `unsqueeze(-1)` is given one value per position, (B, T). torch's whole
       attention (`nn.MultiheadAttention`, `nn.TransformerEncoder`) is an attention judged the same
       way, its `key_padding_mask` the mask it applies: a mask declared `mask-keep` handed to it as
       it is (torch reads True as a key to ignore) is found at the call. Without a mask passed in,
       padding is what the code itself marks: a token id its embedding's `padding_idx` names that
       forward compares the tokens with to hide values (`tokens.eq(self.padding_idx)` made the mask
       of a fill or an attention, or a factor of the embeddings; not positions counted from it),
       and no other sequence beside them. The same
       real tokens, followed by that id, must give the same output at those tokens as alone: a
       padding mask made and never handed to the attention is found at the call that left it
       out, a mean over every position at the mean.
       """,
       """
       def forward(self, x, attention_mask):
           ...
           y = F.scaled_dot_product_attention(q, k, v)     # attention_mask never used
       """,
       """
       def forward(self, x, attention_mask):
           ...
           keep = attention_mask[:, None, None, :].bool()
           y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
       """, kind="behaviour", needs_values=True),
    _r("ST034", "residual-of-itself", "error",
       "a residual that adds a value to a dropout of itself: the block's input was written over",
       """
       A residual block returns `x + dropout(sublayer(x))`: the skip connection carries its input
       around the sublayer. When the sublayer's output is written over `x` first, `x + dropout(x)`
       adds the output to a dropped-out copy of itself: twice the output in eval, and the block's
       input reaches nothing past the sublayer (no gradient flows around it). The finding is at the
       addition; the message names the dropout's line.
       """,
       """
       x = self.attn(self.norm(x))
       x = x + self.dropout(x)             # x is the attention's output now
       """,
       """
       h = self.attn(self.norm(x))
       x = x + self.dropout(h)
       """, check="residual:check_self_residual"),
    _r("ST035", "rotary-pairing", "error",
       "a rotary embedding that does not rotate: the features it turns together do not share an "
       "angle, so lengths change and scores depend on absolute positions",
       """
       Rotary positions turn each pair of a head's features by an angle that grows with the
       position: `x * cos + rotate(x) * sin`. `rotate` pairs each feature with another (the two
       halves, `cat(-x2, x1)`, or neighbours, `x[..., ::2]` with `x[..., 1::2]`), and the table must
       hold each angle once per such pair (`cat(freqs, freqs)` for halves, `repeat_interleave(2)`
       for neighbours). A true turn keeps every vector's length, which is what makes q·k depend on
       the distance between two positions only. shapetrace re-runs the module in float64, finds each
       `x * c + (x moved about) * s` whose tables are a cosine and a sine of the same angles
       (`c² + s² = 1`, made in forward or cached as buffers), and compares each vector's length
       before and after; tables scaled by anything else (xPos) and an odd number of features (no
       pairs to turn) are not judged. The finding is at the op that paired the angles (or the line
       that caches the table), used where q is turned: one for the q and k a table turns.
       """,
       """
       freqs = torch.outer(t, inv_freq).repeat_interleave(2, dim=-1)   # neighbours share an angle
       q = q * freqs.cos() + torch.cat((-q[..., d // 2:], q[..., :d // 2]), -1) * freqs.sin()
       """,
       """
       freqs = torch.cat((torch.outer(t, inv_freq),) * 2, dim=-1)     # halves share an angle
       q = q * freqs.cos() + torch.cat((-q[..., d // 2:], q[..., :d // 2]), -1) * freqs.sin()
       """, kind="behaviour", needs_values=True),
    _r("ST036", "inverted-norm", "error",
       "a normalisation that multiplies a tensor by its own magnitude instead of dividing by it",
       """
       A norm divides a tensor by a measure of its own size along an axis: its root-mean-square,
       its standard deviation or its norm. Whatever the spelling, the powers add up (a mean of
       squares carries the square of the scale, a square root halves it, `rsqrt`, `reciprocal`
       and `1 / t` turn it round, dividing turns it round again), and a normalisation applies the
       tensor's own scale to it with the power -1. With +1 (`x / torch.rsqrt(ms)`, `x *
       x.std(-1, keepdim=True)`) the output grows with the square of the input's scale. Only a
       chain from a statistic of the same tensor through roots, powers, reciprocals and an
       epsilon is read; a learned scale or another tensor in it ends the reading.
       """,
       """
       ms = x.pow(2).mean(-1, keepdim=True)
       y = x / torch.rsqrt(ms + eps)            # multiplies by the RMS
       """,
       """
       ms = x.pow(2).mean(-1, keepdim=True)
       y = x * torch.rsqrt(ms + eps)
       """, check="norms:check_inverted"),
    _r("ST037", "position-frequencies", "error",
       "a sinusoidal position table most of whose feature pairs never turn (an exponent that "
       "parses wrong), or whose pairs turn faster than π per position (rates that multiply)",
       """
       A sinusoidal table (positions added to the input, a rotary embedding's cosines and sines, a
       diffusion model's time step features) turns each pair of features by the position times a
       frequency, and the frequencies fall geometrically from the fastest to one base slower (10⁴
       in the textbook, 10⁶ or so for long-context rotary tables): every pair turns. An exponent
       that parses wrong (`base ** torch.arange(0, d, 2) / d` for `base ** (torch.arange(0, d, 2)
       / d)`, `-math.log(base) / d // 2` dividing by floor) leaves most frequencies vanishingly
       small, and those pairs hold the same value at every position. shapetrace re-runs the module
       in float64 and reads, from values: the angles handed to `sin` and `cos` when they are
       positions (or time steps) times frequencies, and the tables the forward reads that were
       made before it (a cosine and a sine of the same angles: `c² + s² = 1`, two tensors, pairs of
       features side by side or in halves, or a complex table on the unit circle) whose angles
       advance by the same step at every position. A table is a finding when more than half of
       its pairs turn at least 10⁹ times slower than its fastest and some by a step that is not
       zero (pairs that never turn on purpose have steps of exactly zero). A table's steps, in
       the order of its features, fall (or rise) steadily; steps that go up and down are
       frequencies above π per position read back modulo a whole turn (the ladder's rates
       multiplying the positions, `position * base ** (2i/d)`, where they should divide them):
       each pair wraps between neighbouring positions and positions far apart look alike, a
       finding too. The finding is at the line that made the frequencies (in the constructor or
       the forward), used where the table is read.
       """,
       """
       inv_freq = 1.0 / (10000 ** torch.arange(0, d, 2).float() / d)     # (10000 ** arange) / d
       angles = torch.outer(torch.arange(max_len).float(), inv_freq)
       """,
       """
       inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
       angles = torch.outer(torch.arange(max_len).float(), inv_freq)
       """, kind="behaviour", needs_values=True),
    _r("ST038", "positions-ignored", "error",
       "positions made into a table that moves the output, whose order never does: the table "
       "is applied where a token's position makes no difference",
       """
       A forward that counts positions (`torch.arange` over the sequence, or over a maximum length)
       and makes a table of them (the sines and cosines of rotary or absolute angles, rows of a
       position embedding, entries of a relative bias looked up by them) does so to tell tokens
       apart by where they sit: handed other positions it must answer differently. shapetrace
       re-runs the module in float64 three times: as it is; with the values of each table made
       from positions changed (they must move the output, else the table is unused and nothing is
       judged); and with the positions shuffled (a seeded permutation of what `arange` returned,
       counting from 0 by 1). Only a module with an output per token is judged (a pooled output
       may sum the positions away by design). When the tables move the output and the shuffled
       positions do not,
       the table was applied where position makes no difference: rotary tables cut to the batch
       size by a helper written for time-first tensors (`cos[:q.shape[0]]` on (B, T, H, d)) turn
       each sample by one angle at every token, which q·k cancels. Where the positions cannot be
       shuffled (a table asked for one position: `self.rotary(q.shape[-2])` on (B, T, H, d) with
       one head), a module whose table lays positions along its rows is re-run with its query
       tokens reordered: when every output is only reordered the same way, it cannot tell tokens
       apart. The finding is at the op that cut the table along its positions to a length other
       than the sequence's, else at the line that asked a module for the table, else where the
       table was made.
       """,
       """
       cos, sin = self.cos[:q.shape[0]], self.sin[:q.shape[0]]   # q is (B, T, H, d): B rows
       q = q * cos[:, None, None] + rotate_half(q) * sin[:, None, None]
       """,
       """
       cos, sin = self.cos[:q.shape[1]], self.sin[:q.shape[1]]   # T rows, one per token
       q = q * cos[None, :, None] + rotate_half(q) * sin[None, :, None]
       """, kind="behaviour", needs_values=True),
    _r("ST039", "residual-twice", "error",
       "a sum that counts one value twice: a residual wrapper that adds its input, and a caller "
       "that adds the skip again",
       """
       A residual block adds its input once: `x + sublayer(x)`. When a wrapper already returns
       `fn(x) + x` and the caller adds `x` again (`x = attn(x) + x`), the stream carries twice the
       input: the skip is counted twice in every layer, and the scale of the stream grows with
       depth. Read from the trace: an addition whose operands, with each operand that is a sum read
       by nothing else opened into its own operands, hold one tensor twice. The finding is at the
       outer addition; the message names the addition that added it first, which ran in a module
       inside the one that adds it again (a wrapper and its caller). A tensor added to itself at
       one op (`x + x`) is not judged here, nor one a module's own code adds twice (a state and
       an input injected at every step that begin as one tensor, `x = self.loop(x, x)`).
       """,
       """
       class Residual(nn.Module):
           def forward(self, x):
               return self.fn(x) + x
       ...
       x = self.attn(x) + x                 # attn is a Residual: x counted twice
       """,
       """
       x = self.attn(x)                     # attn is a Residual: it adds x itself
       """, check="residual:check_residual_twice"),
    _r("ST042", "norm-epsilon", "error",
       "a normalisation whose epsilon is 1 or more (or a flag): an argument in the epsilon's place",
       """
       A norm divides by a statistic of its input plus an epsilon that only guards against
       dividing by zero (1e-5, 1e-6). An epsilon of 1 or more, or a flag (`True` counts as 1), is
       as large as the statistic it guards: the output is no longer normalised, its scale follows
       the input's. It comes from an argument in the wrong place: `nn.LayerNorm(d, use_bias)`
       puts the flag where the epsilon goes (the second parameter), `nn.BatchNorm1d(C, T)` a
       length. Read from the trace: the epsilon each of torch's norms ran with (layer, RMS,
       group, batch and instance norms; `F.normalize`'s floor on the norm). The finding is at the
       line that built the layer, the call kept as where it took effect.
       """,
       """
       self.ln = nn.LayerNorm(d_model, use_bias)       # use_bias is LayerNorm's eps
       """,
       """
       self.ln = nn.LayerNorm(d_model, bias=use_bias)
       """, check="epsilon:check_epsilon"),
    _r("ST041", "residual-missing", "error",
       "a transformer block whose input reaches its output only through its sublayers: no "
       "residual path",
       """
       A block of attention and feed-forward carries its input around each sublayer: `x +
       attn(x)` (or `norm(x + attn(x))`), then the same around the feed-forward. With the last
       projection of every sublayer set to zero (the attention's output projection, the
       feed-forward's second layer: each linear map or convolution whose output reaches the
       block's output through no other one), each sublayer adds nothing and the skip path is what
       is left: the output is the input, normalised, scaled or gated, still a function of it, in
       every residual design (pre-norm, post-norm, gated, LayerScale, ReZero, parallel sublayers,
       a skip that carries the projected queries). shapetrace re-runs the module in float64 twice
       so zeroed, the input changed between the runs; when the output does not move, no path
       carries the input around the sublayers: the attention's output was fed on alone (`x =
       self.ff(self.attn(x))`), or the stream was multiplied by a sublayer's output instead of
       added to it. Only blocks are judged, read from what the ops do, not from names: an
       attention (a softmax whose weights are contracted with values, or torch's fused
       attention), a feed-forward (a projection of an activation of another projection's
       output), every projection the input reaches first feeding that attention or that
       feed-forward (not an input layer, a skip projection or a U-Net's first convolution), and an
       output of the input's shape (the stream, beside a context a cross-attention reads); a
       module random in eval is not judged. The finding is at the op that cut the stream (a
       product with a sublayer's output), else at the line whose sublayer's output replaced the
       stream (`x = self.cross_attn(x, context)` with no `x +`), used where the output is made.
       """,
       """
       h = self.attn(self.norm1(x))                 # x itself never reaches the output
       x = h + self.mlp(self.norm2(h))
       """,
       """
       x = x + self.attn(self.norm1(x))
       x = x + self.mlp(self.norm2(x))
       """, kind="behaviour", needs_values=True),
    _r("ST043", "input-ignored", "error",
       "an output computed from the inputs that is the same whatever they are",
       """
       An output with a batch axis made from the inputs must be able to change with them. A
       document embedding read at the first position of a causal encoder (`x[:, 0]`, where a
       learned token was put) sees that token alone: every document gets the same embedding.
       shapetrace asks three times, and reports only when all agree: autograd (the batch-leak
       check's dependencies) finds no input the output depends on; the module run again with fresh
       inputs and every parameter changed a little (so that an output layer initialised to zero by
       design, a LoRA's second matrix or a zero convolution hides nothing) gives the output
       unchanged; and the two recorded runs, walked back from the op that made the output, reach
       an op whose output is the same in both while an operand whose values it carries differs.
       The finding is at that op: where the inputs were lost. An output made from parameters or
       tables alone (a learned token expanded to the batch, a position table) is not judged, nor
       one that takes only a shape, a mask or a comparison from the inputs (`expand_as(x)`,
       `zeros_like(x)`).
       """,
       """
       x = torch.cat([self.cls.expand(len(x), 1, -1), x], dim=1)
       x = self.blocks(x)                           # causal attention
       return x, x[:, 0]                            # the first position sees only the cls token
       """,
       """
       x = torch.cat([self.cls.expand(len(x), 1, -1), x], dim=1)
       x = self.blocks(x)                           # bidirectional attention
       return x, x[:, 0]
       """, kind="behaviour", needs_values=True),
    _r("ST044", "norm-bypassed", "error",
       "self-attention whose queries come from the normalised stream and whose keys or values "
       "from the stream before the norm (or the other way round)",
       """
       In a pre-norm block, the queries, keys and values of self-attention are projections of one
       tensor, the normalised stream. Taking the keys and values from the stream before the norm
       (a default context bound before `x = self.norm(x)`) lets the un-normalised residual
       stream, whose scale grows with depth, into them while the queries see its normalised
       form. Read from the trace: each attention's queries, keys and values are walked back
       through moves to the linear projection that made them; where one projection reads the
       output of a normalisation (`F.layer_norm`, `F.rms_norm`, or the tensor over a statistic
       of itself, then a gain and a bias) and another reads the very tensor that was
       normalised, the second bypassed the norm. Projections of different tensors
       (cross-attention's context, positions added to the queries and keys only) are not
       judged. The finding is at the projection that reads the stream before the norm, or at
       the line that bound the name it reads when that line only chose the value.
       """,
       """
       context = x if context is None else context
       x = self.norm(x)
       q, k, v = self.to_q(x), *self.to_kv(context).chunk(2, dim=-1)
       """,
       """
       x = self.norm(x)
       context = x if context is None else context
       q, k, v = self.to_q(x), *self.to_kv(context).chunk(2, dim=-1)
       """, check="streams:check_bypassed"),
    _r("ST045", "linear-collapse", "error",
       "two linear layers with nothing nonlinear between them, the features between them wider "
       "than both ends: one linear map",
       """
       A feed-forward widens each position's features and narrows them back (C -> 4C -> C) with
       an activation between the two projections. Without it, `W2 (W1 x + b1) + b2` is one
       linear map of rank at most C: the wider hidden layer computes nothing one `nn.Linear`
       would not, and the block has no nonlinearity at all. Read from the trace: a linear layer
       whose input is another linear layer's output, reached only through ops that keep every
       value a linear function of it (dropout, a cast, a copy, a reshape that keeps the feature
       axis, a bias added, a constant or per-feature scale), where the features between them
       are wider than both the first layer's input and the second's output. A narrower middle
       (a low-rank factorisation, a LoRA, a bottleneck) is a choice and is not judged, nor is a
       chain through anything else (an activation, a norm, a product of two values of the
       input, attention). The finding is at the line that calls the second layer, or at the
       line that built the `nn.Sequential` holding both.
       """,
       """
       self.net = nn.Sequential(nn.Linear(C, 4 * C), nn.Dropout(p), nn.Linear(4 * C, C))
       """,
       """
       self.net = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(), nn.Dropout(p), nn.Linear(4 * C, C))
       """, check="linear_chain:check_linear_collapse"),
]
