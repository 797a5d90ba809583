"""Harness stubs for the bugs27 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# mead-ml/mead-baseline: layers/eight_mile/pytorch/layers.py imports eight_mile.utils, which imports
# `six.moves.urllib.request.urlretrieve` (six is not installed; urlretrieve is used only for
# downloads). The probe sits in layers/ (the folder above the eight_mile package) and imports the
# extracted package; eight_mile/__init__.py (imports version.py) and utils.py are extracted beside it.
_B27_URLRETRIEVE = '''"""stand-in for six.moves.urllib.request: downloads are never made here"""
def urlretrieve(*args, **kwargs):
    raise RuntimeError("stand-in")
'''
HARNESS["b27_mead"] = {
    "@/six/__init__.py": EMPTY,
    "@/six/moves/__init__.py": EMPTY,
    "@/six/moves/urllib/__init__.py": EMPTY,
    "@/six/moves/urllib/request.py": _B27_URLRETRIEVE,
    "layers/probe_mead.py": probe("from eight_mile.pytorch.layers import BahdanauAttention"),
}

# fkodom/soft-mixture-of-experts: soft_moe.py imports einops and the package's multi_expert.py
# (extracted). The package __init__ (which shells out to `git describe` for a version tag) is
# replaced by an empty one.
HARNESS["b27_softmoe"] = {
    "soft_mixture_of_experts/__init__.py": EMPTY,
}

# cellarium-ai/cellarium-ml: cellarium/ml/layers/transformer.py imports the sibling attention, ffn
# and normadd modules and cellarium/ml/utilities/layers.py (all extracted). The package __init__
# files (cellarium.ml's pulls in lightning, anndata and the whole model zoo) are replaced by empty ones.
HARNESS["b27_cellarium"] = {
    "cellarium/ml/__init__.py": EMPTY,
    "cellarium/ml/layers/__init__.py": EMPTY,
    "cellarium/ml/utilities/__init__.py": EMPTY,
}

# lucidrains/memory-transformer-xl: the module imports `mogrifier.Mogrifier` (not installed), used
# only by the GRU-gated residual with mogrify_gru=True (off in the probe). Our stand-in class raises
# if built. The package __init__ is replaced by an empty one.
_B27_MOGRIFIER = '''"""stand-in for mogrifier: the class name only, not usable"""
import torch.nn as nn


class Mogrifier(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")
'''
HARNESS["b27_mtxl"] = {
    "memory_transformer_xl/__init__.py": EMPTY,
    "@/mogrifier.py": _B27_MOGRIFIER,
}

# lucidrains/marge-pytorch: marge_pytorch.py imports faiss (not installed; used only by the training
# wrapper's nearest-neighbour index) and the package's autoregressive_wrapper.py (extracted). The
# package __init__ is replaced by an empty one.
HARNESS["b27_marge"] = {
    "marge_pytorch/__init__.py": EMPTY,
    "@/faiss.py": PERMISSIVE,
}

# ethen8181/machine-learning: deep_learning/seq2seq/torch_transformer.ipynb. The primer keeps the
# imports, classes and functions of the code cells; the cell that imports math, torch, numpy and
# torch.nn also holds IPython magics, so it does not parse and is dropped. The definitions' first
# import after `os` is the notebook's styling helper `formats` (a folder outside the notebook's own):
# our stand-in for it does nothing but puts math, np, torch and nn into builtins, where the
# definitions look those names up. requests (download helpers only) is permissive.
_B27_FORMATS = '''"""stand-in for the notebook's styling helper (notebook_format/formats.py); it also supplies
math, np, torch and nn, which the notebook imports in a cell of IPython magics that the primer drops"""
import builtins
import math

import numpy as np
import torch
import torch.nn as nn

for _name, _value in dict(math=math, np=np, torch=torch, nn=nn).items():
    if not hasattr(builtins, _name):
        setattr(builtins, _name, _value)


def load_style(*args, **kwargs):
    return None
'''
HARNESS["b27_ethen"] = {
    "@/formats.py": _B27_FORMATS,
    "@/requests.py": PERMISSIVE,
}
