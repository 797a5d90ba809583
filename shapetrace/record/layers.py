"""What the model's modules did with their outputs and weights, seen from the recorder's hooks.

- Each tensor a module call returns is marked with the call (``TensorMeta.returned``): the
  outermost call that returned it, the user's line that made the call, and where it sat in what
  was returned. A dead value that is a module's output is reported at that call.
- At the end of the block, the plain layers (``nn.Linear``, ``nn.Embedding``, ``nn.Conv2d``,
  norms, and the user's own modules) of the traced model whose owner ran but which were never
  called and whose parameters no recorded op read (``TraceData.unread_layers``).
"""

from __future__ import annotations

import torch

from ..base.compat import all_modules
from ..base.records import ModuleReturn, TensorMeta, UnreadLayer
from ..base.source import class_file, is_library_file
from .tensors import tensors_in

Tensor = torch.Tensor

#: torch.nn layers that hold weights and compute nothing else: a use of one reads its weight.
_PLAIN_LAYERS = frozenset({
    "Linear", "Bilinear", "Embedding", "EmbeddingBag", "Conv1d", "Conv2d", "Conv3d",
    "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LayerNorm", "RMSNorm", "GroupNorm",
})


#: torch's containers: what they compute is their layers' (a ``Sequential`` calls each in turn)
_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def _weighed(cls: type) -> bool:
    """Whether a layer of this class that never ran and whose weights no op read computed
    nothing: torch's plain layers and containers of layers, and the user's own modules (a
    ``Linear`` wrapping ``nn.Linear``), whose every parameter is then unread; not a library's
    other modules (an ``nn.MultiheadAttention`` may be used by a function handed its weights)."""
    if (cls.__name__ in _PLAIN_LAYERS or cls.__name__ in _CONTAINERS) \
            and cls.__module__.startswith("torch.nn."):
        return True
    return not library_class(cls)


# type -> whether it is torch's or an installed package's class, not the user's
_LIBRARY: dict[type, bool] = {}


def library_class(cls: type) -> bool:
    found = _LIBRARY.get(cls)
    if found is None:
        filename = class_file(cls)
        found = _LIBRARY[cls] = (cls.__module__.startswith("torch.") or filename is None
                                 or is_library_file(filename, installed_is_library=True))
    return found


def mark_returned(live: dict, output, module: torch.nn.Module, path: str, site,
                  caller: str, calls: dict | None = None) -> None:
    """Marks every tensor of ``output`` (what ``module``, at ``path``, returned to the line
    ``site`` of the module at ``caller``) as that call's output; an outer call that returns it
    again marks it last. What the outermost call returns (``caller`` "": the model's output)
    goes to code outside any module: it is kept or looked at there (``TensorMeta.looked``),
    whatever that code does with it. ``calls``: module class -> the user's lines that called
    one (``TraceData.module_calls``), this one added."""
    if calls is not None and site is not None:
        lines = calls.get(type(module))
        if lines is None:
            lines = calls[type(module)] = set()
        lines.add(site)
    if not caller:
        for t in tensors_in(output):
            meta = live.get(id(t))
            if meta is not None and meta._made_by is not None and meta.ref() is t:
                meta.looked += 1
        site = None
    kind = type(module)
    library, kind = library_class(kind), kind.__name__
    if isinstance(output, Tensor):  # the usual case: marked without a call
        meta = live.get(id(output))
        if meta is not None and meta._made_by is not None and meta.ref() is output:
            meta.used += 1
            meta.returned = ModuleReturn(path, kind, caller, site, None, library)
        return
    if isinstance(output, (tuple, list)):
        for index, item in enumerate(output):
            for t in tensors_in(item, 1):
                _mark(live, t, ModuleReturn(path, kind, caller, site, index if t is item else -1,
                                            library))
        return
    returned = ModuleReturn(path, kind, caller, site, -1, library)
    for t in tensors_in(output):
        _mark(live, t, returned)


def _mark(live: dict, t: Tensor, returned: ModuleReturn) -> None:
    meta: TensorMeta | None = live.get(id(t))
    if meta is not None and meta._made_by is not None and meta.ref() is t:
        meta.used += 1
        meta.returned = returned


def unread_layers(model: torch.nn.Module, names: dict[int, str], records: list,
                  live: dict, modules: list | None = None) -> list[UnreadLayer]:
    """The plain layers of ``model`` never used in the block: see the module's docstring.
    ``modules``: the model and its submodules, when the caller has walked them."""
    ran = set()
    for path in {rec.module for rec in records}:  # each module that ran and those above it
        while path and path not in ran:
            ran.add(path)
            path = path.rpartition(".")[0]
    if all(path in ran for path in names.values()):
        return []  # every module ran, or holds one that did: no layer was left unused
    found = []
    owners = _OWNERS
    for owner in all_modules(model) if modules is None else modules:
        owner_path = names.get(id(owner))
        if owner_path is None or owner_path not in ran:
            continue
        candidates = owners.get(type(owner), False)
        if candidates is False:
            candidates = _candidates(type(owner))
        if not candidates:
            continue
        files, classes = candidates
        for attribute, child in owner._modules.items():
            if child is None or not _weighed(type(child)):
                continue
            path = names.get(id(child))
            if path is None or path in ran:  # most layers ran: settled without their weights
                continue
            params = [p for p in child._parameters.values() if p is not None] \
                if not child._modules else list(child.parameters())
            if not params or any(_read(p, live) for p in params):
                continue
            found.append(UnreadLayer(path, attribute, type(child).__name__, owner_path, files,
                                     classes, tuple(tuple(p.shape) for p in params)))
    return found


# type -> (its user files, its user classes), or None: a library class or one without a file
# (a plain dict, as _LIBRARY: looked up for every module of every trace)
_OWNERS: dict[type, tuple | None] = {}


def _candidates(cls: type) -> tuple | None:
    """What :func:`unread_layers` needs of an owner's class, worked out once per class."""
    try:
        return _OWNERS[cls]
    except KeyError:
        pass
    found = None
    if not library_class(cls):
        files = _user_files(cls)
        if files is not None:
            found = files, tuple(c.__name__ for c in cls.__mro__
                                 if c is not object and not library_class(c))
    _OWNERS[cls] = found
    return found


def _read(param, live: dict) -> bool:
    meta = live.get(id(param))
    ref = getattr(meta, "ref", None)
    return callable(ref) and ref() is param


def _user_files(cls: type) -> tuple[str, ...] | None:
    """The files of the user's classes in ``cls``'s bases, or None when one has no file."""
    files = []
    for base in cls.__mro__:
        if base is object or library_class(base):
            continue
        filename = class_file(base)
        if filename is None:
            return None
        if filename not in files:
            files.append(filename)
    return tuple(files)
