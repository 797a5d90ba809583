"""State a module keeps across calls, taken before the behaviour runs and put back between them.

A cache kept for the next call (``self.cache = (k, v)``), a call counter or running statistics
changed by one run would make the next run differ for no fault of the module's: every run of the
probe starts from the state as copied (``ModuleState.restore``), and ``changed`` says what a
run changed."""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

from ..base.compat import disable_torch_function, module_tables
from .runs import same

# ---------------------------------------------------------------------------------------------
# State kept across calls
# ---------------------------------------------------------------------------------------------

_CONTAINERS = (Tensor, list, tuple, dict, type(None))



class ModuleState:
    """The values of a module's parameters and buffers, and its public attributes that hold
    tensors or containers (a ``self.cache = (k, v)`` kept for the next call), as they were when
    taken; ``restore`` puts back whatever a run changed, and removes such attributes a run
    added. Plain numbers and strings (dropout rates, which the determinism check raises on
    purpose) are left alone."""

    def __init__(self, model: nn.Module, *, parameters: bool = True):
        """``parameters=False``: the parameters' slots are kept, not their values (a module's
        state as built, taken before its first forward without a copy of its weights)."""
        self.tensors: list[tuple[Tensor, Tensor]] = []
        self.slots: list[tuple[dict, str, Any]] = []
        #: ids of the buffer tables, and of the buffers: state kept for a later call
        self._buffers: set[int] = set()
        #: ids of the parameter tables, and of the parameters
        self._weights: set[int] = set()
        self.attrs: dict[nn.Module, dict[str, Any]] = {}
        with torch.no_grad():
            for sub in model.modules():
                for kind, store in enumerate(module_tables(sub)[:2]):
                    kept_in = self._buffers if kind == 1 else self._weights
                    kept_in.add(id(store))
                    for key, value in store.items():
                        if value is not None:
                            kept_in.add(id(value))
                        self.slots.append((store, key, value))
                        if value is not None and (parameters or kind == 1):
                            self.tensors.append((value, value.detach().clone()))
                kept = {}
                for key, value in vars(sub).items():
                    if (not key.startswith("_") and isinstance(value, _CONTAINERS)
                            and not _holds_module(value)):
                        kept[key] = _copy(value)
                self.attrs[sub] = kept

    def changed(self, *, buffers: bool = True) -> list[tuple[str, Any]]:
        """(name, current value) of every attribute, parameter or buffer a run changed;
        ``buffers=False`` leaves out buffers (``register_buffer``: a cache kept for a later call,
        which only a later call's output can show the use of)."""
        found = []
        for sub, kept in self.attrs.items():
            attrs = vars(sub)
            for key, value in attrs.items():
                if key.startswith("_") or not isinstance(value, _CONTAINERS) or _holds_module(value):
                    continue
                if key not in kept or not _same_value(value, kept[key]):
                    found.append((key, value))
        names = {id(t): k for sub in self.attrs for table in module_tables(sub)[:2]
                 for k, t in table.items()}
        for store, key, value in self.slots:
            if store.get(key) is not value and (buffers or id(store) not in self._buffers):
                found.append((key, store.get(key)))
        for tensor, saved in self.tensors:
            if not _same_value(tensor, saved) and (buffers or id(tensor) not in self._buffers):
                found.append((names.get(id(tensor), "buffer"), tensor))
        return found

    def restore(self, keep=(), *, weights: bool = True) -> None:
        """Put back the state as taken, except the entries named in ``keep`` (left as a run
        left them: which of the state a run changed makes the next call differ), and the
        parameters where ``weights`` is False (weights a check changed on purpose)."""
        names = {id(t): k for sub in self.attrs for table in module_tables(sub)[:2]
                 for k, t in table.items()} if keep else {}
        with torch.no_grad(), disable_torch_function():
            for store, key, value in self.slots:
                if store.get(key) is not value and key not in keep and (
                        weights or id(store) not in self._weights):
                    store[key] = value
            for tensor, saved in self.tensors:
                if names.get(id(tensor)) in keep or not weights and id(tensor) in self._weights:
                    continue
                if tensor.shape != saved.shape or tensor.dtype != saved.dtype:
                    tensor.set_(saved.clone())
                elif not _same_value(tensor, saved):
                    tensor.copy_(saved)
            for sub, kept in self.attrs.items():
                attrs = vars(sub)
                for key in [k for k, v in attrs.items() if k not in kept and not k.startswith("_")
                            and isinstance(v, _CONTAINERS) and not _holds_module(v) and k not in keep]:
                    del attrs[key]
                for key, value in kept.items():
                    if key in keep:
                        continue
                    if key not in attrs or not _same_value(attrs[key], value):
                        attrs[key] = _copy(value)



def _holds_module(value) -> bool:
    if isinstance(value, nn.Module):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_module(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_module(v) for v in value.values())
    return False



def _copy(value):
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - not copyable: kept by reference
        return value



def _same_value(a, b) -> bool:
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return (isinstance(a, Tensor) and isinstance(b, Tensor) and same(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same_value, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    try:
        return a is b or bool(a == b)
    except Exception:  # noqa: BLE001
        return False
