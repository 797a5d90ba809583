"""Head splitting helpers, imported by their sibling with ``from .heads import ...``."""


def split_heads(x, n_head):
    b, t, c = x.shape
    return x.view(b, t, n_head, c // n_head).transpose(1, 2)


def merge_heads(y):
    b, h, t, d = y.shape
    return y.transpose(1, 2).reshape(b, t, h * d)
