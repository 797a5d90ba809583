"""``check()`` given an instance leaves it as it was (SPEC section 6): parameters, buffers,
attributes, training flags, the global random state and the working directory are put back
after the run."""

from __future__ import annotations

import contextlib
import copy
import os

import torch

from ..base.compat import module_tables


class preserved:
    """Leaves the global random state as it was and, for an instance, its parameters, buffers,
    attributes and training flags (SPEC section 6): the run seeds, switches to ``eval()`` and
    runs ``forward``, which may write buffers (a step counter, a cache)."""

    def __init__(self, module):
        self.module = module if isinstance(module, torch.nn.Module) else None

    def __enter__(self):
        try:
            self.cwd = os.getcwd()
        except OSError:
            self.cwd = None
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() \
            if torch.cuda.is_available() and torch.cuda.is_initialized() else None
        self.saved = []
        if self.module is not None:
            with torch.no_grad():
                for m in self.module.modules():
                    tensors = {}
                    params, buffers, modules = module_tables(m)
                    for table in (params, buffers):
                        for t in table.values():
                            if isinstance(t, torch.Tensor) and id(t) not in tensors:
                                grad = getattr(t, "grad", None)
                                tensors[id(t)] = (t, _copy(t), t.requires_grad, grad,
                                                  None if grad is None else _copy(grad))
                    self.saved.append((m, dict(m.__dict__), dict(params), dict(buffers),
                                       dict(modules), tensors))
        return self

    def __exit__(self, *exc_info):
        if self.cwd is not None:  # a forward that called os.chdir
            with contextlib.suppress(OSError):
                os.chdir(self.cwd)
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        with torch.no_grad():
            for m, attrs, params, buffers, modules, tensors in self.saved:
                for table, old in zip(module_tables(m), (params, buffers, modules)):
                    table.clear()
                    table.update(old)
                for key in [k for k in m.__dict__ if k not in attrs]:
                    del m.__dict__[key]
                m.__dict__.update(attrs)
                for t, value, requires_grad, grad, grad_value in tensors.values():
                    if value is not None:
                        t.copy_(value)
                    if t.requires_grad != requires_grad:
                        t.requires_grad_(requires_grad)
                    if grad is not None and grad_value is not None:
                        grad.copy_(grad_value)
                    t.grad = grad
        self.saved = []
        return False


def _copy(t: torch.Tensor):
    """A copy of ``t``'s values, or None for one without plain values (meta, fake, sparse)."""
    try:
        if t.is_meta or t.layout != torch.strided:
            return None
        return t.detach().clone()
    except Exception:  # noqa: BLE001 - a tensor subclass that cannot be copied is left alone
        return None


def outside_inference(module, notes: list[str]):
    """An instance built under ``torch.inference_mode()`` holds tensors that only that mode may
    write or take gradients of: it is checked as a copy of normal tensors (the same values),
    and the instance itself is left as it was."""
    if not isinstance(module, torch.nn.Module) \
            or not any(t.is_inference() for t in (*module.parameters(), *module.buffers())):
        return module
    try:
        copied = copy.deepcopy(module)
    except Exception:  # noqa: BLE001 - a module that cannot be copied is checked as it is
        return module
    notes.append("its tensors were made under torch.inference_mode(): checked on a copy of "
                 "them, the instance left as it was")
    return copied


class project_state:
    """The names bound at the top of the project's own modules, put back as they were on
    leaving (``restore=True``) or on :meth:`restore`: a constructor that sets a module's
    globals (``config.d_model = d_model`` in a parent, read by every layer it builds) and then
    fails leaves them for whatever is built next, which then runs on sizes no one chose
    together. One class's check never sees what another's left. New modules stay loaded;
    objects changed in place are not copied."""

    def __init__(self, restore: bool = True):
        self.on_exit = restore

    def __enter__(self) -> "project_state":
        from .isolation import users_modules

        self.saved = [(vars(m), dict(vars(m))) for m in users_modules()]
        return self

    def restore(self) -> None:
        for names, before in self.saved:
            for name in [n for n in names if n not in before]:
                del names[name]
            for name, value in before.items():
                if names.get(name, _ABSENT) is not value:
                    names[name] = value

    def __exit__(self, *exc) -> bool:
        if self.on_exit:
            self.restore()
        return False


_ABSENT = object()
