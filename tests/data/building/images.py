"""Image attentions whose forward takes one ``x`` (B, C, H, W): its name alone reads as vectors."""

import torch, torch.nn as nn

class ChannelGate(nn.Module):
    """Selects between two convolution branches per channel (an image attention)."""
    def __init__(self, channel: int = 32, reduction: int = 4):
        super().__init__()
        self.branch3 = nn.Conv2d(channel, channel, 3, padding=1)
        self.branch5 = nn.Conv2d(channel, channel, 5, padding=2)
        self.squeeze = nn.Linear(channel, channel // reduction)
        self.excite = nn.Linear(channel // reduction, 2 * channel)

    def forward(self, x):
        B, C, H, W = x.size()
        a, b = self.branch3(x), self.branch5(x)
        s = (a + b).mean(dim=(2, 3))
        weights = self.excite(torch.relu(self.squeeze(s))).view(B, 2, C).softmax(dim=1)
        return a * weights[:, 0, :, None, None] + b * weights[:, 1, :, None, None]


class PixelAttention(nn.Module):
    """Self-attention over the pixels of a feature map, after a 1x1 convolution."""

    def __init__(self, channels: int = 24):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels, 1)
        self.qkv = nn.Linear(channels, 3 * channels)

    def tokens(self, x):
        return x.flatten(2).transpose(1, 2)  # (B, C, H, W) -> (B, H*W, C)

    def forward(self, x):
        B, C, H, W = x.shape
        t = self.tokens(self.reduce(x))
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        att = (q @ k.transpose(-2, -1) / C ** 0.5).softmax(dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, C, H, W)


class PixelAttentionBuggy(PixelAttention):
    def tokens(self, x):
        B, C, H, W = x.shape
        return x.view(B, H * W, C)  # BUG


class Volume(nn.Module):
    """A 5-D volume, and no convolution to say its channels."""

    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, C, D, H, W = x.shape
        return self.proj(x.flatten(2).transpose(1, 2))


class FixedGridEmbed(nn.Module):
    """Patches of a 32x32 image with a position table for exactly its 64 patches: no image side
    but its own fits, and its constructor does not say it."""

    def __init__(self, dim: int):
        super().__init__()
        self.patches = nn.Conv2d(3, dim, kernel_size=4, stride=4)
        self.positions = nn.Parameter(torch.zeros(1, 64, dim))

    def forward(self, x):
        x = self.patches(x).flatten(2).transpose(1, 2)
        return x + self.positions


class OddGridEmbed(nn.Module):
    """Patches of a 28x28 image with a position table for exactly its 49 patches: no side
    shapetrace tries fits, and its constructor does not say it."""

    def __init__(self, dim: int):
        super().__init__()
        self.patches = nn.Conv2d(3, dim, kernel_size=4, stride=4)
        self.positions = nn.Parameter(torch.zeros(1, 49, dim))

    def forward(self, x):
        x = self.patches(x).flatten(2).transpose(1, 2)
        return x + self.positions


class ChannelNorm(nn.Module):
    """Normalises each pixel over its channels: its parameters are shaped (1, C, 1, 1)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(1, dim, 1, 1))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=1, unbiased=False, keepdim=True)
        return (x - mean) / (var + self.eps).sqrt() * self.gain


class PatchesOfPixels(nn.Module):
    """Attention over the pixels of each patch: takes (B, P, N, C), which no name says."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, p, n, c = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, p, n, self.heads, -1).permute(0, 1, 3, 2, 4) for t in (q, k, v))
        w = (q @ k.transpose(-2, -1) * q.size(-1) ** -0.5).softmax(-1)
        return (w @ v).permute(0, 1, 3, 2, 4).reshape(b, p, n, c)


class PatchTokens(nn.Module):
    """Cuts an image into overlapping 3x3 patches (``nn.Unfold``), one token per patch, and
    folds the tokens back into a square grid: it takes images (B, 3, H, W) only."""

    def __init__(self, in_chans=3, dim=16):
        super().__init__()
        self.split = nn.Unfold(kernel_size=3, stride=2, padding=1)
        self.proj = nn.Linear(in_chans * 9, dim)

    def forward(self, x):
        tokens = self.proj(self.split(x).transpose(1, 2))
        B, N, C = tokens.shape
        side = int(N ** 0.5)
        return tokens.transpose(1, 2).reshape(B, C, side, side)


class PatchViT(nn.Module):
    """Cuts an image into patches with an einops layer, then one token per patch: the image's
    channels are the patch width over the patch's area."""

    def __init__(self, image_size, patch_size, dim, heads, channels=3):
        super().__init__()
        from einops.layers.torch import Rearrange

        assert image_size % patch_size == 0
        patch_dim = channels * patch_size * patch_size
        self.to_patches = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch_size, p2=patch_size),
            nn.LayerNorm(patch_dim), nn.Linear(patch_dim, dim))
        self.pos = nn.Parameter(torch.zeros(1, (image_size // patch_size) ** 2, dim))
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, img):
        x = self.to_patches(img) + self.pos
        return self.attn(x, x, x, need_weights=False)[0].mean(dim=1)


class PatchSettings:
    """A plain settings object (no dataclass, no namespace) a vision model is built from."""

    def __init__(self, hidden_size=64, num_channels=3, image_size=48, patch_size=16):
        self.hidden_size = hidden_size
        self.num_channels = num_channels
        self.image_size = image_size
        self.patch_size = patch_size


class SettingsPatchEmbed(nn.Module):
    """Patches of 16 pixels and a position per patch of the settings' image: runs only on an
    image of the settings' own side."""

    def __init__(self, config: PatchSettings):
        super().__init__()
        self.patch = nn.Conv2d(config.num_channels, config.hidden_size,
                               kernel_size=config.patch_size, stride=config.patch_size)
        count = (config.image_size // config.patch_size) ** 2
        self.position = nn.Parameter(torch.randn(1, count, config.hidden_size))

    def forward(self, pixel_values):
        _, _, height, width = pixel_values.shape
        return self.patch(pixel_values).flatten(2).transpose(1, 2) + self.position
