"""Harness stubs for the bugs11 corpus (our own code): config probes."""
HARNESS = {}

# anyGPT: CausalSelfAttention takes a ModelConfig dataclass; the probe builds it from plain sizes
_ANYGPT_PROBE = probe('''from anyGPT.config.settings import ModelConfig
from anyGPT.models.modules import CausalSelfAttention

class CausalSelfAttentionProbe(CausalSelfAttention):
    """anyGPT's causal self-attention with its ModelConfig built from plain sizes (dropout off)"""
    def __init__(self, embedding_size, num_heads, block_size):
        super().__init__(ModelConfig(embedding_size=embedding_size, num_heads=num_heads,
                                     block_size=block_size, dropout=0.0, bias=True))''')
HARNESS["anygpt"] = {"@/probe_anygpt.py": _ANYGPT_PROBE}

# OmDet: the package __init__ files import the whole detector; build_components imports detectron2's
# registry and torch_utils imports torchvision (neither installed). The encoder layer needs neither.
_OMDET_REG = '''"""stand-in for omdet's build_components (detectron2 registries): a registry whose register()
returns the class unchanged"""
class _Registry:
    def __init__(self, name):
        self.name, self._map = name, {}
    def register(self, obj=None):
        def deco(o):
            self._map[o.__name__] = o
            return o
        return deco(obj) if obj is not None else deco
    def get(self, name):
        return self._map[name]

TRANSFORMER_ENCODER_REGISTRY = _Registry("TRANSFORMER_ENCODER")
TRANSFORMER_DECODER_REGISTRY = _Registry("TRANSFORMER_DECODER")
DETR_HEAD_REGISTRY = _Registry("DETR_HEAD")
'''
_OMDET_PROBE = probe('''from omdet.omdet_v2_turbo.ela_encoder import TransformerLayer

class ELATransformerLayer(TransformerLayer):
    """OmDet-Turbo's ELA encoder layer as the package defines it (imported through the package so
    that its relative imports resolve)"""''')
HARNESS["omdet"] = {"omdet/__init__.py": EMPTY, "omdet/omdet_v2_turbo/__init__.py": EMPTY,
                    "omdet/omdet_v2_turbo/build_components.py": _OMDET_REG,
                    "@/torchvision.py": PERMISSIVE, "@/probe_omdet.py": _OMDET_PROBE}

# DI-engine: the ding package __init__ files import the whole RL framework; the transformer needs
# only its own module, nn_module, normalization and compatibility.
_DING_PROBE = probe('''from ding.torch_utils.network.transformer import Transformer

class DingTransformer(Transformer):
    """DI-engine's entity Transformer as the package defines it (imported through the package so
    that its relative imports resolve)"""''')
HARNESS["ding"] = {"ding/__init__.py": EMPTY, "ding/torch_utils/__init__.py": EMPTY,
                   "ding/torch_utils/network/__init__.py": EMPTY, "@/probe_ding.py": _DING_PROBE}
