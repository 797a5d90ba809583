"""Harness stubs for the bugs12 corpus (our own code): stand-ins and probes that build a class
from plain sizes. Runs inside run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# torchmultimodal: the package __init__ builds an iopath PathManager (iopath is not installed);
# nothing the layers' forward uses needs it
_TMM_FILE_IO = '''"""stand-in for torchmultimodal.utils.file_io (iopath is not installed)"""
def _get_path_manager():
    return None
'''
_TMM_GPT_PROBE = probe('''import torch
from torchmultimodal.models.gpt import TransformerDecoderLayer

class GPTDecoderLayer(TransformerDecoderLayer):
    """torchmultimodal's GPT decoder layer (imported through the package), given a lower-triangular
    attention mask (1 = attend), as a GPT decoder is used"""
    def forward(self, x):
        n = x.shape[1]
        return super().forward(x, attn_mask=torch.tril(torch.ones(n, n))[None, None])''')
_TMM_ENC_PROBE = probe('''from torchmultimodal.modules.layers.transformer import TransformerEncoderLayer

class PostNormEncoderLayer(TransformerEncoderLayer):
    """torchmultimodal's transformer encoder layer (norm_first=False by default), imported through the package"""''')
HARNESS["tmm_gpt"] = {"torchmultimodal/utils/file_io.py": _TMM_FILE_IO, "probe_tmm.py": _TMM_GPT_PROBE}
HARNESS["tmm_enc"] = {"torchmultimodal/utils/file_io.py": _TMM_FILE_IO, "probe_tmm.py": _TMM_ENC_PROBE}

# slp: slp.util.system/types import validators, yaml, omegaconf and loguru (not installed); the
# attention and transformer modules only use helpers from slp.util.pytorch
_SLP_COMMON = {"loguru.py": PERMISSIVE, "slp/util/system.py": PERMISSIVE, "slp/util/types.py": PERMISSIVE}
_SLP_SUB3_PROBE = probe('''from slp.modules.transformer import Sublayer3

class CrossAttentionSublayer(Sublayer3):
    """slp's decoder cross-attention sublayer (prenorm, ScaleNorm by default), imported through the package"""''')
_SLP_NYS_PROBE = probe('''import torch
from slp.modules.attention import MultiheadSelfAttention

class NystromSelfAttention(MultiheadSelfAttention):
    """slp's multi-head self-attention with the Nystrom approximation on (4 landmarks), and a pad
    mask that keeps every token (the Nystrom path needs a mask)"""
    def __init__(self, attention_size, num_heads):
        super().__init__(attention_size=attention_size, num_heads=num_heads, dropout=0.0,
                         nystrom=True, num_landmarks=4)

    def forward(self, x):
        keep = torch.ones(x.shape[0], x.shape[1], dtype=x.dtype)
        return super().forward(x, attention_mask=keep)''')
HARNESS["slp_sub3"] = dict(_SLP_COMMON, **{"probe_slp.py": _SLP_SUB3_PROBE})
HARNESS["slp_nys"] = dict(_SLP_COMMON, **{"probe_slp.py": _SLP_NYS_PROBE})

# episodic-transformer-memory-ppo: utils.py imports the environments (gym, memory-gym, minigrid);
# transformer.py only takes its Module base class from it
_EP_UTILS = '''"""stand-in for the repository's utils.py: only the Module base class is used by transformer.py"""
from torch import nn

class Module(nn.Module):
    pass
'''
_EP_PROBE = probe('''from transformer import MultiHeadAttention

class SelfMultiHeadAttention(MultiHeadAttention):
    """the repository's multi-head attention used as self-attention without a mask (values, keys
    and queries all x), as its transformer blocks use it"""
    def forward(self, x):
        return super().forward(x, x, x, None)''')
HARNESS["ep"] = {"@/utils.py": _EP_UTILS, "@/probe_ep.py": _EP_PROBE}

# pytorch-fm: the AFM layer takes its two dropout rates as a tuple
_FM_PROBE = probe('''from torchfm.layer import AttentionalFactorizationMachine

class AFM(AttentionalFactorizationMachine):
    """pytorch-fm's attentional factorization machine with both dropout rates set to p"""
    def __init__(self, embed_dim, attn_size, p):
        super().__init__(embed_dim, attn_size, (p, p))''')
HARNESS["fm"] = {"probe_fm.py": _FM_PROBE}

# tab-transformer-pytorch: TabTransformer takes the category sizes as a tuple
_TAB_PROBE = probe('''from tab_transformer_pytorch.tab_transformer_pytorch import TabTransformer

class TabTransformerProbe(TabTransformer):
    """TabTransformer with three categorical columns of 3 values each and 4 continuous columns, one layer"""
    def __init__(self, dim, heads, dim_head):
        super().__init__(categories=(3, 3, 3), num_continuous=4, dim=dim, depth=1, heads=heads,
                         dim_head=dim_head)''')
HARNESS["tab"] = {"probe_tab.py": _TAB_PROBE}

# Open-Sora-Plan: the video VAE modules use package-relative imports; the package __init__ files
# (emptied through empty_init) import the whole model zoo
_OSP_PROBE = probe('''from opensora.models.ae.videobase.modules.attention import AttnBlock3D

class VideoAttnBlock3D(AttnBlock3D):
    """Open-Sora-Plan's causal video VAE spatial attention block, imported through the package"""''')
HARNESS["osp"] = {"probe_osp.py": _OSP_PROBE}

# GlobalPointer: the span scorer wraps a pretrained BERT encoder (transformers is not installed);
# a small embedding encoder of our own stands in for it (only its hidden states and
# config.hidden_size are used)
_GP_PROBE = probe('''import types
from torch import nn
from models.GlobalPointer import GlobalPointer

class _EmbeddingEncoder(nn.Module):
    """stand-in for the BERT encoder: token embeddings as the last hidden state"""
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.config = types.SimpleNamespace(hidden_size=hidden_size)
        self.embed = nn.Embedding(vocab_size, hidden_size)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None):
        return (self.embed(input_ids),)

class GlobalPointerProbe(GlobalPointer):
    """GlobalPointer (RoPE on) over a small embedding encoder"""
    def __init__(self, vocab_size, hidden_size, ent_type_size, inner_dim):
        super().__init__(_EmbeddingEncoder(vocab_size, hidden_size), ent_type_size, inner_dim)''')
HARNESS["gp"] = {"probe_gp.py": _GP_PROBE}

# openspeech: the package __init__ files (emptied through empty_init) import hydra, the datasets and
# every model; the conformer attention module needs only three sibling modules
_OS_PROBE = probe('''from openspeech.modules.conformer_attention_module import MultiHeadedSelfAttentionModule

class ConformerSelfAttentionModule(MultiHeadedSelfAttentionModule):
    """openspeech's conformer multi-headed self-attention module (relative positions), imported through the package"""''')
HARNESS["openspeech"] = {"probe_openspeech.py": _OS_PROBE}
