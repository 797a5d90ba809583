"""Weights a constructor leaves unset.

A parameter made with ``torch.empty`` holds whatever was in memory until something writes it:
``reset_parameters`` in torch's layers, an ``_init_weights`` the parent model applies, a
checkpoint loaded later. A class built alone, as shapetrace builds it, may leave it so (a
layer whose ``reset_parameters`` does nothing because weights come from a checkpoint; a block
whose parent initialises it): its outputs are then made of leftover memory, NaN and Inf
included, and differ from run to run. No verdict can rest on them.

:class:`UnsetWatch` watches the construction: the storage each ``torch.empty`` made, and every
op that wrote into a storage (an in-place op, ``out=``, an assignment into it, an ``nn.init``
function). A parameter or buffer whose storage was made empty and never written is unset;
:func:`initialise` gives it values as torch's own layer would (its ``reset_parameters``), or
small random ones, and says which.
"""

from __future__ import annotations

import weakref

import torch
from torch.overrides import TorchFunctionMode

_EMPTY = frozenset({"empty", "empty_like", "new_empty", "empty_strided"})

#: model -> the names of the values :func:`initialise` set, for the note
_SET: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _storage(t) -> int | None:
    try:
        return t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) and not t.is_meta \
            and t.layout == torch.strided else None
    except Exception:  # a tensor subclass or a fake tensor without storage
        return None


class UnsetWatch(TorchFunctionMode):
    """Records the storages ``torch.empty`` made and those any op wrote into (see the module).
    The empty storages are held until :meth:`unset` is asked, so that no other tensor is made
    in their memory meanwhile: a storage found at their address is theirs."""

    def __init__(self):
        super().__init__()
        self.empty: dict[int, object] = {}  # the storage's address -> the storage, held
        self.written: set[int] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in _EMPTY:
            if (ptr := _storage(out)) is not None and ptr:
                self.empty[ptr] = out.untyped_storage()
        elif self.empty:
            targets = ()
            if name.endswith("_") and not name.endswith("__") or name == "__setitem__":
                # the tensor written: the first given (``init.kaiming_uniform_`` takes it by
                # keyword through torch's dispatch), and what an in-place op returns
                given = [*args[:1], *kwargs.values()]
                targets = (next((t for t in given if isinstance(t, torch.Tensor)), None), out)
            elif "out" in kwargs:
                targets = (kwargs["out"],)
            for target in targets:
                if (ptr := _storage(target)) is not None:
                    self.written.add(ptr)
        return out

    def unset(self, model) -> list[str]:
        """The names of ``model``'s floating parameters and buffers nothing wrote; lets the
        storages go."""
        left = self.empty.keys() - self.written
        found = [] if not left or not isinstance(model, torch.nn.Module) else \
            [name for name, t in (*model.named_parameters(), *model.named_buffers())
             if t.is_floating_point() and t.numel() and _storage(t) in left]
        self.empty.clear()
        return found


def initialise(model: torch.nn.Module, names: list[str]) -> None:
    """Gives the values ``names`` of ``model`` values: a torch layer's through torch's own
    ``reset_parameters`` (its subclass's may do nothing), any other normal(0, 0.02)."""
    if not names:
        return
    values = dict((*model.named_parameters(), *model.named_buffers()))
    owners = {name: _owner(model, name) for name in names}
    with torch.no_grad():
        reset = set()  # the modules torch's own initialisation set again
        for module in {id(m): m for m in owners.values() if m is not None}.values():
            initial = _torch_reset(type(module))
            try:
                if initial is not None:
                    initial(module)
                    reset.add(id(module))
            except Exception:  # noqa: BLE001 - torch's reset on a subclass's other layout
                pass
        for name in names:
            if id(owners[name]) not in reset and name in values:
                values[name].normal_(0.0, 0.02)
    try:
        _SET[model] = list(names)
    except TypeError:
        pass


def _torch_reset(cls: type):
    """``reset_parameters`` of the first of torch's own layers ``cls`` derives from, or None."""
    for base in cls.__mro__:
        if (base.__module__ or "").startswith("torch.nn") and "reset_parameters" in vars(base):
            return vars(base)["reset_parameters"]
    return None


def _owner(model: torch.nn.Module, name: str):
    """The module that holds the parameter or buffer ``name`` (``fc.0.weight``: ``fc.0``)."""
    path = name.rpartition(".")[0]
    try:
        return model.get_submodule(path) if path else model
    except AttributeError:
        return None


def note(model) -> str:
    """The note for the values :func:`initialise` set in ``model``, or ""."""
    try:
        names = _SET.get(model)
    except TypeError:
        return ""
    if not names:
        return ""
    shown = ", ".join(f"`{n}`" for n in names[:4]) + (" ..." if len(names) > 4 else "")
    return (f"{shown}: made with torch.empty and never written by the constructor (whatever was "
            f"in memory); given values for the check (torch's own initialisation for its layers, "
            f"else normal(0, 0.02)): initialise them in the constructor, or check the class that "
            f"does")


__all__ = ["UnsetWatch", "initialise", "note"]
