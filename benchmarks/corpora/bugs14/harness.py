"""Harness stubs for the bugs14 corpus (our own code): stand-ins for packages the extracted files
import but that are not installed, and probes that build a class from plain sizes. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# fancy_einsum is not installed: a stand-in that maps each word of a "words" equation to one
# letter and hands it to torch.einsum (what the package does), repeated words included.
_FANCY_EINSUM = '''"""stand-in for fancy_einsum: word-named einsum mapped onto torch.einsum"""
import string
import torch


def einsum(equation, *operands):
    lhs, rhs = equation.split("->")
    letters = {}

    def side(s):
        out = []
        for term in s.split(","):
            chars = ""
            for word in term.split():
                if word not in letters:
                    letters[word] = string.ascii_letters[len(letters)]
                chars += letters[word]
            out.append(chars)
        return ",".join(out)

    eq = side(lhs) + "->" + side(rhs)
    return torch.einsum(eq, *operands)
'''
_COONEY_PROBE = probe('''from transformer_from_scratch.components.attention import MultiHeadAttention
from transformer_from_scratch.components.config import TransformerConfig


class CooneyAttention(MultiHeadAttention):
    """transformer-from-scratch's causal multi-head attention, config built from plain sizes"""
    def __init__(self, d_model, d_head, n_ctx):
        super().__init__(TransformerConfig(d_model=d_model, d_head=d_head, n_ctx=n_ctx,
                                           n_heads=d_model // d_head))''')
HARNESS["cooney"] = {"fancy_einsum.py": _FANCY_EINSUM, "probe_cooney.py": _COONEY_PROBE,
                     # a regular package marker for its namespace package (two versions in one process)
                     "transformer_from_scratch/components/__init__.py": EMPTY}

# DUET: Mahalanobis_mask.forward draws a Gumbel sample (random on every call, by design); the
# probe returns the channel-distance probabilities it samples from (calculate_prob_distance).
# It sits beside masked_attention.py so the package __init__s (the whole benchmark) are not run.
_DUET_PROBE = probe('''from masked_attention import Mahalanobis_mask


class DuetChannelDistance(Mahalanobis_mask):
    """DUET's learned Mahalanobis channel-similarity matrix (the probabilities its mask samples)"""
    def forward(self, X):
        return self.calculate_prob_distance(X)''')
HARNESS["duet"] = {"@/probe_duet.py": _DUET_PROBE}

# neuracore: its ACT modules import torchvision (not installed) for the image backbone only.
HARNESS["torchvision_stub"] = {
    "@/torchvision/__init__.py": "from . import models\n",
    "@/torchvision/models.py": PERMISSIVE,
}

# xformers (2021): its positional-embedding package imports pyre_extensions (a typing helper, not
# installed) for Generic only.
HARNESS["pyre_stub"] = {"pyre_extensions.py": "from typing import Generic, TypeVar  # noqa\n"}

# xformers (2022): the decoder block's pre-norm cross-attention wrapper as block_factory builds it
# (Residual(PreNorm(mha))) and calls it (wrap_cross([x, memory, memory])), without triton.
HARNESS["xf_prenorm"] = {"probe_xf_prenorm.py": probe('''from torch import nn
from xformers.components.residual import Residual, PreNorm
from xformers.components.multi_head_dispatch import MultiHeadDispatch
from xformers.components.attention.scaled_dot_product import ScaledDotProduct


class XfPreNormCross(nn.Module):
    """xformers decoder block's pre-norm residual cross-attention (queries from x, keys and
    values from the encoder memory)"""
    def __init__(self, d_model, heads):
        super().__init__()
        mha = MultiHeadDispatch(dim_model=d_model, residual_dropout=0.0, num_heads=heads,
                                attention=ScaledDotProduct())
        self.wrap_cross = Residual(PreNorm(d_model, mha, use_triton=False))

    def forward(self, x, memory):
        return self.wrap_cross([x, memory, memory])''')}

# deep-learning-notes: the chapter's code lives in ```{python} blocks of a Quarto page. The probe
# writes the page's imports, classes and functions to a .py beside it, at the same line numbers
# (prose and demo statements blanked), and imports the class from there.
_QMD_LOADER = '''
import ast, hashlib, importlib.util


def load_qmd(rel):
    qmd = os.path.join(os.path.dirname(os.path.abspath(__file__)), rel)
    lines = open(qmd, encoding="utf-8").read().split("\\n")
    out = [""] * len(lines)
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("```{python}"):
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            block = lines[start:j]
            try:
                tree = ast.parse("\\n".join(block))
            except SyntaxError:
                tree = None
            for node in (tree.body if tree else []):
                if isinstance(node, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)):
                    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                    for n in range(first, node.end_lineno + 1):
                        out[start + n - 1] = block[n - 1]
            i = j
        i += 1
    py = qmd[:-4] + ".py"
    with open(py, "w", encoding="utf-8") as f:
        f.write("\\n".join(out))
    name = "qmd_" + hashlib.md5(py.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, py)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
'''
_DLNOTES_PROBE = probe(_QMD_LOADER + '''
MultiheadAttention = load_qmd("zh/ch8-attention-and-transformer/ch8.4-multi-head-attention.qmd").MultiheadAttention''')
HARNESS["dlnotes"] = {"probe_dlnotes.py": _DLNOTES_PROBE,
                      "@/matplotlib/__init__.py": PERMISSIVE, "@/matplotlib/pyplot.py": PERMISSIVE}
