"""Vision and hybrid models: a ViT with a cls token and a learned position embedding, a conv
stem followed by attention (BatchNorm in the stem), a Perceiver-IO-like latent array with
cross-attention in and out, and a CLIP-like contrastive loss over in-batch negatives."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbed(nn.Module):
    def __init__(self, img_size=16, patch_size=4, in_chans=3, embed_dim=64):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)
        return x.flatten(2).transpose(1, 2)


class ViTAttention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class ViTBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = ViTAttention(dim, num_heads=num_heads, qkv_bias=True)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    INIT = {"embed_dim": "C", "num_heads": "H"}
    INPUTS = ["x=B,3,16,16"]

    def __init__(self, embed_dim, num_heads, img_size=16, patch_size=4, depth=2, num_classes=10):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch_size, 3, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(embed_dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        x = self.patch_embed(x)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        x = x + self.pos_embed
        x = self.blocks(x)
        x = self.norm(x)
        return self.head(x[:, 0])


class ConvStemAttention(nn.Module):
    """A conv stem with BatchNorm, then attention over the H*W positions (a CNN-attention
    hybrid, as in BoTNet / CoAtNet): in eval mode BatchNorm uses its running statistics."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["img=B,3,8,8"]

    def __init__(self, dim, heads, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, dim, 3, padding=1, bias=False), nn.BatchNorm2d(dim), nn.ReLU(inplace=True))
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, num_classes)

    def forward(self, img):
        feat = self.stem(img)
        b, c, h, w = feat.shape
        seq = feat.flatten(2).permute(0, 2, 1)
        attended, _ = self.attn(seq, seq, seq, need_weights=False)
        seq = self.norm(seq + attended)
        return self.fc(seq.mean(dim=1))


class PerceiverIO(nn.Module):
    """Inputs are read into a latent array by cross-attention, processed by latent
    self-attention, then decoded by output queries."""

    INIT = {"dim": "C", "heads": "H"}
    INPUTS = ["inputs=B,T,C"]

    def __init__(self, dim, heads, num_latents=12, num_outputs=3):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(num_latents, dim))
        self.out_queries = nn.Parameter(torch.randn(num_outputs, dim))
        self.encode = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.process = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim,
                                                  dropout=0.0, batch_first=True)
        self.decode = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm_in = nn.LayerNorm(dim)

    def forward(self, inputs):
        b = inputs.shape[0]
        latents = self.latents.unsqueeze(0).repeat(b, 1, 1)
        x = self.norm_in(inputs)
        latents = latents + self.encode(latents, x, x, need_weights=False)[0]
        latents = self.process(latents)
        queries = self.out_queries[None].expand(b, -1, -1)
        out, _ = self.decode(queries, latents, latents)
        return out


class CLIPLoss(nn.Module):
    """Image and text embeddings compared all-against-all: the other samples of the batch are
    the negatives, so the loss mixes the batch by design."""

    INIT = {"dim": "C"}
    INPUTS = ["image_features=B,C", "text_features=B,C"]

    def __init__(self, dim):
        super().__init__()
        self.image_proj = nn.Linear(dim, dim, bias=False)
        self.text_proj = nn.Linear(dim, dim, bias=False)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))

    def forward(self, image_features, text_features):
        image_embeds = F.normalize(self.image_proj(image_features), dim=-1)
        text_embeds = F.normalize(self.text_proj(text_features), dim=-1)
        logit_scale = self.logit_scale.exp()
        logits_per_image = logit_scale * image_embeds @ text_embeds.t()
        logits_per_text = logits_per_image.T
        labels = torch.arange(image_embeds.shape[0])
        loss = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2
        return loss


class SimCLRInfoNCE(nn.Module):
    """NT-Xent over two views: a similarity matrix of 2B x 2B with the diagonal removed."""

    INIT = {"dim": "C"}
    INPUTS = ["z1=B,C", "z2=B,C"]

    def __init__(self, dim, temperature=0.5):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim // 2))
        self.temperature = temperature

    def forward(self, z1, z2):
        z = F.normalize(self.head(torch.cat([z1, z2], dim=0)), dim=1)
        n = z1.shape[0]
        sim = z @ z.T / self.temperature
        self_mask = torch.eye(2 * n, dtype=torch.bool)
        sim = sim.masked_fill(self_mask, float("-inf"))
        targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
        return F.cross_entropy(sim, targets)
