"""The vocabulary of names: what a name in the user's code says a value is.

One table for each question, read by every stage that asks it; no stage keeps a copy:

- **sizes**: which constructor arguments, attributes, config keys and module-level constants
  hold the model width (C), the heads (H), the head size (d), a maximum length (L) or the
  vocabulary (V) (:data:`STATED`, stronger; :data:`USUALLY`, constructor arguments only), and the
  one name read two ways (:data:`AMBIGUOUS`);
- **words for a size** in jaxtyping annotations and in shape unpackings
  (``batch, seq_len, _ = x.shape``): :data:`DIM_WORDS`;
- **forward parameters**: token ids, the data, a second sequence, keys and values, masks, and
  tensors passed in to be filled (a cache, a state): :func:`passed_to_fill`;
- **causal**: flags that declare a module causal, class names that say so (``GPT...``,
  ``...Causal...``) or only hint at it (``...Decoder``);
- the attention **role** a weight's name gives it (``q_proj``, ``W_key``, ``to_kv``).

Plain data and string functions; imports nothing of shapetrace or torch.
"""

from __future__ import annotations

import re

#: shapetrace's own dim names, in the order reports list them
DIM_NAMES = ("B", "T", "S", "H", "d", "C", "V", "L")

#: what one entry along each named axis is, in words (``the same values ... across (H, T)``)
AXIS_CONTENTS = {"B": "samples", "T": "tokens", "S": "source tokens", "H": "heads",
                 "d": "head features", "C": "channels", "V": "vocabulary entries",
                 "L": "positions"}


# --- sizes ---------------------------------------------------------------------------------------

#: Names that state a size wherever they appear: a constructor argument, an attribute of a built
#: model or its ``config``, a key of a config dict, a module-level constant (``n_embd = 384``).
STATED: dict[str, str] = {
    **dict.fromkeys(("d_model", "n_embd", "n_embed", "embed_dim", "emb_dim", "hidden_size",
                     "model_dim", "dim_model"), "C"),
    **dict.fromkeys(("num_heads", "n_head", "n_heads", "nhead", "num_head", "head_num", "num_attention_heads",
                     "query_heads", "num_query_heads", "n_query_heads", "q_heads",
                     "num_q_heads", "n_q_heads"), "H"),
    **dict.fromkeys(("head_size", "head_dim", "d_k", "d_head", "dim_head"), "d"),
    **dict.fromkeys(("block_size", "context_length", "max_len", "max_seq_len", "max_length",
                     "max_seq_length", "max_position_embeddings", "n_positions", "context_size",
                     "n_ctx", "maxlen", "ctx_len", "context_len"), "L"),
    **dict.fromkeys(("vocab_size", "n_vocab", "vocab", "src_vocab", "tgt_vocab",
                     "src_vocab_size", "tgt_vocab_size", "ntoken", "trg_vocab",
                     "trg_vocab_size", "voc_size", "enc_voc_size", "dec_voc_size",
                     "n_src_vocab", "n_tgt_vocab", "n_trg_vocab", "src_vocab_len",
                     "tgt_vocab_len", "input_vocab_size", "target_vocab_size", "vocab_len",
                     "num_vocab", "vocabulary_size"), "V"),
}

#: Constructor arguments that usually hold a size, but say too little to prove one at the user's
#: sizes (``nn.Linear.in_features``, a ``dim`` attribute) or in a module-level constant.
USUALLY: dict[str, str] = {
    **dict.fromkeys(("dim", "d_in", "d_out", "in_dim", "out_dim", "input_dim", "output_dim",
                     "in_features", "out_features", "ndim", "normalized_shape", "embed_size",
                     "emb_size", "d_embed", "d_emb", "features", "emb", "ninp", "embedding_dim"), "C"),
    **dict.fromkeys(("heads", "h", "attn_heads", "num_attn_heads", "n_attn_heads"), "H"),
    **dict.fromkeys(("d_v", "head_features", "features_per_head", "rotary_dim", "rot_dim"), "d"),
    **dict.fromkeys(("seq_len", "seq_length"), "L"),
    **dict.fromkeys(("num_embeddings",), "V"),
    # a cache's room for a batch (``KVCache(max_batch_size, ...)``): the batch it is given
    **dict.fromkeys(("max_batch_size", "max_batch", "max_bsz", "batch_size", "bsz"), "B"),
}

#: Of those, the ones that give a module's output width: a whole number given as their default is
#: the width the author meant the output to have (a head's two angles, a class count), kept
OUTPUT_SIZES = frozenset(("d_out", "out_dim", "output_dim", "out_features", "dim_out",
                          "output_size", "out_size"))

#: A name that means one size in some codebases and another in others, with its readings in
#: order: ``num_tokens`` is the vocabulary in x-transformers and Bloem's GPT, the sequence length
#: in an MLP-Mixer's token mixing. Guessed as the first; the others are tried when it does not fit.
#: ``n_token`` too: the vocabulary in Transformer-XL, the number of positions of a CLIP text
#: encoder's position table.
AMBIGUOUS: dict[str, tuple[str, ...]] = {"num_tokens": ("V", "T"), "n_token": ("V", "T")}
#: The names guessed one way and read the other when the forward does not fit: those above,
#: and a bare ``d``, the head size in attention code and the model width in a norm's own
#: constructor (``RMSNorm(d)``, ``torch.ones(d)`` scaling a (B, T, C) input). Only the
#: constructor argument itself is read again (a helper's parameter ``d`` says nothing).
READ_AGAIN: dict[str, tuple[str, ...]] = {**AMBIGUOUS, "d": ("d", "C")}

#: What each dim is called when a note says how a value was read
DIM_MEANINGS = {"B": "the batch size (B)", "T": "the sequence length (T)",
                "S": "the source length (S)", "H": "the number of heads (H)",
                "d": "the head size (d)", "C": "the model width (C)",
                "V": "the vocabulary size (V)", "L": "the maximum length (L)"}


def names_of(dim: str, *tables: dict[str, str]) -> frozenset[str]:
    """The names that ``tables`` give ``dim``."""
    return frozenset(name for table in tables for name, d in table.items() if d == dim)


#: Constructor arguments that are not sizes of a named dim
LAYERS = frozenset(("n_layer", "num_layers", "n_layers", "depth", "num_hidden_layers", "nlayers",
                    "n_blocks"))
_LAYER_COUNT = re.compile(r"(?:num|n)_\w*(?:layers?|blocks)")


def counts_layers(name: str) -> bool:
    """Whether a constructor argument's name says it counts layers: ``depth``, ``n_layer``,
    and any ``num_..._layers`` or ``n_..._blocks`` (``num_self_att_layers``)."""
    return name in LAYERS or _LAYER_COUNT.fullmatch(name) is not None


#: a layer's place in its stack (``layer_id``, read for a per-layer initialisation or a
#: first-layer branch): 1, the second of the two layers a count is guessed as, or the first when
#: the code counts from 1
LAYER_INDICES = frozenset(("layer_id", "layer_idx", "layer_index", "layer_number", "layer_num",
                           "layer_no", "block_idx", "block_id", "block_index", "i_layer",
                           "depth_idx", "layer_i", "idx_layer", "block_num"))
LAYER_INDEX = 1
FFN = frozenset(("ffn_dim", "d_ff", "hidden_dim", "intermediate_size", "dim_feedforward",
                 "mlp_dim", "d_ffn", "ff_dim", "d_hid", "nhid", "d_hidden", "n_ffn", "ffn_size",
                 "mlp_size", "d_inner", "d_inner_hid"))
KV_HEADS = frozenset(("kv_heads", "n_kv_head", "n_kv_heads", "num_kv_heads",
                      "num_key_value_heads", "num_kv_groups", "n_kv_groups", "kv_groups",
                      "num_query_groups", "n_query_groups"))
#: a probability of a random op that training alone takes (dropout, stochastic depth's
#: ``drop_path``, a condition dropped for guidance: ``uncond_prob``): 0.0, off
DROPOUT = re.compile(r"(dropout|pdrop|drop_rate|drop_prob|dropout_rate|dropout_prob|dropout_p"
                     r"|p_drop|\Adrop|_drop|drop_path|drop_path_rate|(?<!keep)_prob)\Z")
#: A constructor argument that holds a config object (a dataclass, a dict, a Hugging Face config)
CONFIG = frozenset(("config", "cfg", "conf", "configs", "hparams", "params", "args", "model_args",
                    "model_config"))
#: Switches students leave without a default, and the value they usually have
#: A constructor argument that gives an image's side, and one that gives a patch's side
IMAGE_SIZES = ("img_size", "image_size", "input_size", "resolution", "image_resolution",
               "img_res", "image_res", "img_resolution")
PATCH_SIZES = ("patch_size", "patch", "patch_res", "patch_len", "patch_length")
#: the side of a patch nothing sets (``PatchEmbed(patch_size)``): 2 divides any even image side
PATCH_SIDE = 2
#: constructor arguments that give the side of a window of tokens (``window_size=7``: 49 tokens)
WINDOW_SIDES = ("window_size", "win_size", "window")
#: sizes of a module's structure nothing sets, the value each takes and what it is called in a
#: note: a patch's side; a window's side and a grid of tokens' side (4: one window of 16 tokens,
#: a square number of them); a kernel's size (3, odd: ``padding=k // 2`` keeps the length)
UNSET_SIDES = {**dict.fromkeys(PATCH_SIZES, (PATCH_SIDE, "a patch's side")),
               **dict.fromkeys(WINDOW_SIDES, (4, "a window's side")),
               "input_resolution": (4, "the side of a grid of tokens"),
               **dict.fromkeys(("kernel_size", "ksize"), (3, "a kernel's size"))}
#: the side of an image a constructor is built for when nothing says: halved four times (a
#: U-Net's levels) it is still a whole number
BUILT_SIDE = 16
SWITCH_DEFAULTS = {"bias": True, "qkv_bias": False, "device": "cpu", "dev": "cpu",
                   "dtype": None}
#: a switch by its name (``use_conv``, ``with_conv``, ``is_training``, ``has_bias``): a flag
#: that turns a part of the module on, not a size
_SWITCH = re.compile(r"\A(?:use|with|is|has|enable|apply|do|add|learn|learned)_[a-z0-9_]+\Z")


def is_switch(name: str) -> bool:
    """Whether ``name`` reads as an on/off flag (never a causal flag: that says what the
    module is meant to be, and is read apart)."""
    return bool(_SWITCH.match(name)) and name not in CAUSAL_FLAGS


def is_switch_param(param) -> bool:
    """Whether a signature's parameter is an on/off flag: by its name, or annotated bool."""
    return is_switch(param.name) or param.annotation in (bool, "bool")


#: token ids with a role of their own, by the usual order of a vocabulary's first entries
SPECIAL_TOKENS = {"pad": 0, "padding": 0, "sos": 1, "bos": 1, "start": 1, "eos": 2, "end": 2,
                  "unk": 3, "mask": 3, "cls": 1, "sep": 2}
_SPECIAL = re.compile(r"(?:^|_)(pad|padding|sos|bos|start|eos|end|unk|mask|cls|sep)_?"
                      r"(?:idx|index|id|token_id|token)\Z")


#: numbers a config field's name states when nothing else sets it: a norm's epsilon, the base
#: of rotary positions' frequencies
_NUMBERS = ((re.compile(r"(?:\A|_)(?:eps|epsilon)\Z"), 1e-5),
            (re.compile(r"\A(?:(?:rope|rotary|re|pos)_)?(?:base|theta)\Z"), 10000.0),
            # an MLP's width as a multiple of the model's, and a size it is rounded up to a multiple of
            (re.compile(r"\A(?:mlp|ffn|ff)_ratio\Z"), 4.0), (re.compile(r"\Amultiple_of\Z"), 1),
            # the standard deviation weights are initialised with (BERT's 0.02)
            (re.compile(r"\A(?:initializer|init)_(?:range|std)\Z"), 0.02))
#: and those of a config's fields (a constructor's own are read with a note: ``init_reads``)
_FIELD_NUMBERS = ((re.compile(r"\A(?:%s)\Z" % "|".join(IMAGE_SIZES)), BUILT_SIDE),
                  (re.compile(r"\A(?:%s)\Z" % "|".join(PATCH_SIZES)), PATCH_SIDE))


def number_of(name: str, *, field: bool = False) -> float | None:
    """The number ``name`` states (``rms_eps`` -> 1e-5, ``rope_theta`` -> 10000.0, ``mlp_ratio``
    -> 4.0, ``multiple_of`` -> 1, a config's ``vit_img_size`` -> an image's side, ``patch_size``
    -> a patch's), or None."""
    for pattern, value in _NUMBERS + (_FIELD_NUMBERS if field else ()):
        if pattern.search(name) or (rest := unprefixed(name)) is not None and pattern.search(rest):
            return value
    return None


def special_token(name: str) -> int | None:
    """The id a constructor argument that names a special token takes (``src_pad_idx`` -> 0,
    ``trg_sos_idx`` -> 1), else None."""
    found = _SPECIAL.search(name)
    return SPECIAL_TOKENS[found.group(1)] if found else None


def size_of(name: str, *, constructor: bool = False) -> str | None:
    """The dim a name states (``n_embd`` -> C); with ``constructor``, also the names that
    usually hold one in a constructor (``d_in`` -> C). None for anything else. A name written
    in capitals (a config's ``HIDDEN_SIZE``) reads as its lower case."""
    if name.isupper():
        name = name.lower()
    dim = STATED.get(name)
    if dim is None and constructor:
        dim = USUALLY.get(name)
    if dim is None and constructor and name in AMBIGUOUS:
        dim = AMBIGUOUS[name][0]
    return dim


#: Words before a size's name that change what it is (``max_len``, ``num_heads``): never taken
#: for the part of a model a name sizes.
_QUANTIFIERS = frozenset(("max", "min", "num", "n", "total", "half", "init", "base", "pad", "out",
                          "in", "inner", "mid", "sub", "per"))


def unprefixed(name: str) -> str | None:
    """``name`` without a first word that says which part of a model it sizes (``lm_``,
    ``vit_``, ``enc_``, ``text_``: ``lm_n_heads`` -> ``n_heads``), or None when it has none.
    What is left is a name of two words or more (``token_emb`` is a module, not a width)."""
    head, sep, rest = name.partition("_")
    if sep and "_" in rest and head.isalpha() and len(head) <= 6 and head not in _QUANTIFIERS \
            and not is_switch(name):
        return rest
    return None


def field_size(name: str) -> str | None:
    """The dim a config field's name states, read after a first word that says which part of
    the model it sizes (``lm_n_heads`` -> H) when the whole name states none, or from its last
    word (``lm_hidden_dim`` -> C): what says that an object is a model's config."""
    dim = size_of(name, constructor=True)
    rest = unprefixed(name) if dim is None else None
    if rest is None:
        return dim
    return field_size(rest) or size_of(rest.rpartition("_")[2], constructor=True)


# --- words for a size: annotations and shape unpackings ------------------------------------------

#: A word for a size, as a jaxtyping annotation (``Float[Tensor, "batch seq dim"]``) or a shape
#: unpacking (``seq_len, batch_size, _ = query.shape``) writes it; compared lower-cased, after an
#: exact match of shapetrace's own names (:data:`DIM_NAMES`).
DIM_WORDS: dict[str, str] = {
    **dict.fromkeys(("b", "batch", "bs", "bsz", "batch_size", "batchsize", "n_batch", "nbatch",
                     "num_batch", "batches", "n_batches"), "B"),
    **dict.fromkeys(("t", "n", "seq", "seq_len", "seqlen", "seq_length", "sequence_length",
                     "tgt_len", "time", "timesteps", "tokens", "n_tokens", "ntokens", "num_tokens", "len",
                     "length", "l", "n_ctx", "ctx_len", "context_len", "context_length", "steps",
                     "n_steps"), "T"),
    **dict.fromkeys(("s", "src_len", "source", "seq_k"), "S"),
    **dict.fromkeys(("h", "nh", "heads", "n_head", "n_heads", "num_heads"), "H"),
    **dict.fromkeys(("hs", "dh", "dk", "d_k", "d_head", "head_size", "head_dim"), "d"),
    **dict.fromkeys(("c", "e", "dim", "d_model", "embed", "emb", "n_embd", "hidden",
                     "channels"), "C"),
    **dict.fromkeys(("v", "vocab", "vocab_size"), "V"),
}


def dim_of_word(word: str) -> str | None:
    """The dim a word for a size names: ``"B"`` -> B, ``"batch"`` -> B, ``"seq_len"`` -> T."""
    if word in DIM_NAMES:
        return word
    return DIM_WORDS.get(word.lower())


# --- forward parameters --------------------------------------------------------------------------

#: token ids
TOKEN_INPUTS = frozenset(("idx", "input_ids", "tokens", "token_ids", "ids", "in_idx"))
#: the data the module transforms, time-aligned with its output (B, T, C)
DATA_INPUTS = frozenset(("x", "X", "hidden_states", "inputs_embeds", "query", "q", "input", "inputs",
                         "h", "hidden", "src", "tgt", "embeddings", "emb", "x_q", "queries", "trg",
                         "xs"))
#: a second sequence the module reads whole (cross-attention's context: B, S, C)
SOURCE_INPUTS = frozenset(("context", "encoder_hidden_states", "memory", "encoder_out",
                           "encoder_output", "encoder_outputs", "enc_out", "kv", "x_kv", "cond"))
#: an encoder-decoder's source sequence: read whole by the decoder beside a target, even when
#: it is as long as the target
ENCODER_INPUTS = SOURCE_INPUTS | frozenset(("src", "source", "src_ids", "source_ids",
                                             "src_tokens", "src_seq", "enc_output",
                                             "enc_outputs", "ctx"))
#: keys and values given apart from the query
KEY_VALUE_INPUTS = frozenset(("key", "value", "k", "v", "keys", "values"))
#: an integer forward argument that says where in the sequence this call starts (a KV cache's
#: offset): 0, a call from the start
OFFSET_INPUTS = frozenset(("start_pos", "offset", "start", "pos_offset", "past_length",
                           "seqlen_offset", "cache_offset", "start_index", "position_offset"))
#: an integer forward argument that is a size of the data (``forward(self, L)`` of a table of
#: positions, ``forward(self, B, H, W)`` of an image's positions): the dim it is
SIZE_INPUTS = {"L": "T", "seq_len": "T", "seqlen": "T", "seq_length": "T", "length": "T",
               "num_tokens": "T", "N": "T", "B": "B", "batch_size": "B", "bsz": "B",
               # a table's width (``forward(self, h, w, embed_dim)`` of a sin-cos table)
               **{name: "C" for name, dim in STATED.items() if dim == "C"}}
#: an image's height and width handed in beside its tokens (``forward(self, x, H, W)`` with
#: ``x`` of H*W tokens): read as one row of T, (1, T), which fits a sequence of any length
SIDE_INPUTS = (("H", "W"), ("h", "w"), ("height", "width"), ("Hp", "Wp"))
#: a diffusion model's timestep, one per sample beside the data it denoises: integers in
#: ``[0, TIMESTEPS)``
TIMESTEP_INPUTS = frozenset(("t", "timesteps", "timestep", "time", "time_steps", "ts"))
TIMESTEPS = 1000
#: the names a query input goes by, beside keys and values
QUERY_INPUTS = frozenset(("query", "q", "queries"))
#: a tokenizer's 0/1 mask beside token ids (1 = a real token)
PADDING_INPUTS = frozenset(("attention_mask", "input_mask"))
MASK_INPUT = re.compile(r"(^|_)mask\Z")

#: Words of a parameter name that say the tensor is passed in to be written to: a cache, a
#: past, a state, a buffer, an output.
_STATE_WORDS = frozenset((
    "cache", "caches", "cached", "past", "present", "kv", "memory", "mem", "mems", "buffer",
    "buffers", "buf", "out", "output", "outputs", "state", "states", "accumulator", "acc",
    "accum", "carry", "workspace", "scratch", "dest", "dst", "hx", "cx", "h0", "c0", "hidden",
    "result", "results", "counter", "step", "steps",
))
#: data names that are a recurrent state too: the data when first (what the module transforms),
#: a state beside other data (``forward(self, x, hidden)``)
_DATA_OR_STATE = frozenset(("h", "hidden", "memory", "kv"))
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_DATA = TOKEN_INPUTS | DATA_INPUTS | SOURCE_INPUTS | KEY_VALUE_INPUTS


def passed_to_fill(name: str, position: int = 0) -> bool:
    """Whether forward's parameter ``name`` (the ``position``-th) holds a tensor passed in to be
    written to (``kv_cache``, ``layer_past``, ``state``, ``out``) rather than data. A data name
    is data (``hidden_states``, ``encoder_output``), and so is ``hidden`` or ``memory`` in first
    place; beside other data it is a state."""
    if name in _DATA and (name not in _DATA_OR_STATE or position == 0):
        return False
    return any(w.lower() in _STATE_WORDS for w in _WORD.findall(name))


# --- flags and roles -----------------------------------------------------------------------------

#: Flags that declare a module causal, compared after lower-casing and dropping leading
#: underscores (a constructor argument or an attribute)
CAUSAL_FLAGS = frozenset(("causal", "is_causal", "autoregressive", "is_autoregressive",
                          "use_causal_mask", "causal_mask", "use_causal"))

_CAMEL = re.compile(r"[A-Z]+[a-z0-9]*|[a-z0-9]+")
#: Words in a class name that suggest a causal model without proving it
_SUGGESTIVE = ("Decoder", "Decoding", "LanguageModel")
#: words that deny the word after them
_NEGATIONS = frozenset(("non", "not", "anti"))


def causal_name(name: str) -> bool:
    """A class name that says causal unambiguously: ``CausalSelfAttention``, ``GPT2Model``,
    ``NanoGPT``, ``AutoRegressiveDecoder``, ``ALiBiCausalAttention``; not ``NonCausalConv``,
    ``NotCausal`` nor ``AcausalFilter``. Only a word that denies it (non, not, anti) negates
    it; an acronym before it (ALiBi) does not."""
    words = _CAMEL.findall(name)
    lower = [w.lower() for w in words]
    for i, w in enumerate(lower):
        negated = i > 0 and lower[i - 1] in _NEGATIONS
        if w == "causal" and not negated:
            return True
        if w in ("autoregressive", "autoreg") and not negated:
            return True
        if w == "auto" and i + 1 < len(lower) and lower[i + 1] == "regressive" and not negated:
            return True
    return name.startswith("GPT") or any(w.startswith("GPT") or w == "Gpt" for w in words)


def suggests_causal(name: str) -> bool:
    """A class name that hints at a causal model without proving it (``TransformerDecoder``):
    named in the note that says causal-leak was not checked."""
    return (any(word in name for word in _SUGGESTIVE) and "Masked" not in name
            and not causal_name(name))



#: The attention role a weight's name gives it (``W_query``, ``q_proj``, ``to_kv``): after
#: dropping fillers such as ``proj``, ``linear``, ``weight``
WEIGHT_ROLES = {"q": "q", "query": "q", "queries": "q", "wq": "q",
                "k": "k", "key": "k", "keys": "k", "wk": "k",
                "v": "v", "value": "v", "values": "v", "wv": "v",
                "o": "o", "out": "o", "output": "o", "wo": "o", "": "o",
                "qkv": "qkv", "attn": "qkv", "in": "qkv", "wqkv": "qkv",
                "kv": "kv", "wkv": "kv", "key_value": "kv"}
WEIGHT_FILLERS = re.compile(r"(^|_)(w|to|proj|projection|linear|lin|layer|fc|c|weight|bias)"
                            r"(?=_|$)")
