"""A small package whose modules import each other relatively (a fixture: imported by path)."""

DROPOUT = 0.0

from .blocks.attention import SelfAttention  # noqa: E402,F401
