"""What an expression of a constructor says of the size it is given: split by into heads
(``model_dim // n_heads``), multiplied by a head count (``n_heads * d_head``), a factor of an
output's size (``p * p * out_channels``), one learned value per channel (``torch.ones(dim)``),
or a size per head in a shape given axis by axis (``torch.empty(dim, n_head, c)``). Read by
``usage`` for constructor arguments no name explains.
"""

from __future__ import annotations

import ast

from ..base.names import size_of


#: torch's factories of a tensor of given sizes
_FACTORIES = frozenset({"zeros", "ones", "randn", "rand", "empty", "full"})


def _factory_sizes(call) -> list | None:
    """The sizes a call of ``torch.ones`` (``zeros``, ``randn``, ...) is given, one by one or as
    one tuple; None for any other call."""
    if not isinstance(call, ast.Call):
        return None
    func = call.func
    kind = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if kind not in _FACTORIES:
        return None
    sizes = call.args[:1] if kind == "full" else call.args
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = sizes[0].elts
    return list(sizes)


def _parameter_factory(node: ast.Call) -> list | None:
    """The sizes of ``nn.Parameter(torch.ones(...))`` (scaled too, ``* 0.02``), or None."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "Parameter" or not node.args:
        return None
    made = node.args[0]
    while isinstance(made, ast.BinOp):  # torch.ones(n) * init_value
        made = made.left if isinstance(made.left, (ast.Call, ast.BinOp)) else made.right
    return _factory_sizes(made)


def learned_vector(node: ast.Call, is_param) -> bool:
    """``nn.Parameter(torch.ones(param))`` (or ``zeros``, ``randn``, ...): a learned vector of
    ``param`` values, one per channel of what it scales or shifts."""
    sizes = _parameter_factory(node)
    return sizes is not None and len(sizes) == 1 and is_param(sizes[0])


def position_table(node: ast.Call, is_param) -> bool:
    """``nn.Parameter(torch.randn(1, num_patches, dim))``: a learned table with a row for each
    of the argument's positions, each as wide as a feature vector, shared by the batch (a
    matrix of two sizes, ``(width, output_dim)``, is a projection as often: not read)."""
    sizes = _parameter_factory(node)
    return sizes is not None and len(sizes) == 3 and isinstance(sizes[0], ast.Constant) \
        and sizes[0].value == 1 and is_param(sizes[1]) and not is_param(sizes[2])


def square_table(node: ast.Call, is_param) -> bool:
    """``torch.ones(max_T, max_T)`` (or ``torch.ones((n, n))``, ``zeros``, ``empty``...): a
    square of the argument by itself, a table of pairs of positions (a causal mask's
    triangle) built for the longest sequence."""
    sizes = _factory_sizes(node)
    return sizes is not None and len(sizes) == 2 and all(is_param(n) for n in sizes)


def divides_width(node, is_param) -> bool:
    """``model_dim // head_count`` (``/``, ``%``): the argument divides a size whose name states
    the model width."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div, ast.Mod))
            and is_param(node.right)):
        return False
    left = node.left
    name = left.id if isinstance(left, ast.Name) else \
        left.attr if isinstance(left, ast.Attribute) else None
    return name is not None and size_of(name, constructor=True) == "C"

def factor_of(node, is_param) -> bool:
    """``p * p * out_channels``: the argument a factor of a product (of names or numbers)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return False
    return any(is_param(side) or factor_of(side, is_param) for side in (node.left, node.right))

def assigned_names(body: ast.AST, takes) -> tuple[set[str], set[str]]:
    """``(local names, attributes of self)`` assigned a value ``takes(value)`` accepts, one
    target at a time (``self.a, self.b = a, b`` pairs each with its own)."""
    local: set[str] = set()
    attributes: set[str] = set()
    for node in ast.walk(body):
        if not isinstance(node, ast.Assign):
            continue
        pairs = [(t, node.value) for t in node.targets]
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts):
            pairs = list(zip(node.targets[0].elts, node.value.elts))
        for target, value in pairs:
            if not takes(value):
                continue
            if isinstance(target, ast.Name):
                local.add(target.id)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "self":
                attributes.add(target.attr)
    return local, attributes


def product_names(body: ast.AST, is_param) -> tuple[set[str], set[str]]:
    """``(local names, attributes of self)`` assigned a product the argument is a factor of
    (``hidden = channels * expansion``, ``self.dim2 = channels * expansion``)."""
    return assigned_names(body, lambda value: factor_of(value, is_param))


def named_product(node, local: set[str], attributes: set[str]) -> bool:
    """``node`` one of the names :func:`product_names` found."""
    if isinstance(node, ast.Name):
        return node.id in local
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == "self" and node.attr in attributes


def after_heads(node: ast.Call, is_param) -> bool:
    """``torch.empty(q_dim, n_head, 2 * c)``: the argument (or a multiple of it) in a shape
    given axis by axis, right after a head count: the size of each head's features."""
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
    if name not in _FACTORIES or len(node.args) < 2:
        return False
    for before, arg in zip(node.args, node.args[1:]):
        heads = before.id if isinstance(before, ast.Name) else \
            before.attr if isinstance(before, ast.Attribute) else None
        if heads is None or size_of(heads, constructor=True) != "H":
            continue
        # the size itself, or a multiple of it (``2 * c``, ``(gating + 1) * c``: the plain
        # name is the size, not the count added to)
        if is_param(arg) or (isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mult)
                             and any(is_param(side) and isinstance(side, (ast.Name, ast.Attribute))
                                     for side in (arg.left, arg.right))):
            return True
    return False

def times_heads(node, is_param) -> bool:
    """``n_heads * d_queries`` (either order): the argument times a head count."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return False
    for mine, other in ((node.left, node.right), (node.right, node.left)):
        name = other.id if isinstance(other, ast.Name) else \
            other.attr if isinstance(other, ast.Attribute) else None
        if is_param(mine) and name is not None and size_of(name, constructor=True) == "H":
            return True
    return False
