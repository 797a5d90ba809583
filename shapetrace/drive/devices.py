"""Code written for a GPU, checked on a machine without one.

A constructor or forward that calls ``.cuda()`` (a KV cache made on the GPU, a mask moved there)
raises "Torch not compiled with CUDA enabled" on a CPU-only machine, before any op of the user's
can be checked. Where CUDA is missing, :func:`cpu_only` makes ``Tensor.cuda()`` and
``Module.cuda()`` leave their tensor or module where it is, and remembers the user's lines that
called them, for a note. Where CUDA is present nothing changes.
"""

from __future__ import annotations

import contextlib
import sys
import weakref

import torch

from ..base.source import display_path, outer_user_frame

#: the lines whose ``.cuda()`` calls were left on the CPU, per model
_SKIPPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def cpu_only(sites: list[tuple[str, int]]):
    """``.cuda()`` a no-op while inside, each user line that called it added to ``sites``;
    nothing changes where CUDA is available."""
    if torch.cuda.is_available():
        yield
        return
    tensor_cuda, module_cuda = torch.Tensor.cuda, torch.nn.Module.cuda

    def stay(self, *args, **kwargs):
        site = outer_user_frame(sys._getframe(1), installed_is_library=False)
        if site is not None and site not in sites:
            sites.append(site)
        return self

    torch.Tensor.cuda, torch.nn.Module.cuda = stay, stay
    try:
        yield
    finally:
        torch.Tensor.cuda, torch.nn.Module.cuda = tensor_cuda, module_cuda


def remember(model, sites: list[tuple[str, int]]) -> None:
    """Keep ``sites`` (from building ``model``) for :func:`note`."""
    if sites:
        try:
            kept = _SKIPPED.setdefault(model, [])
        except TypeError:  # a model that cannot be weakly referenced
            return
        kept.extend(s for s in sites if s not in kept)


def note(model, sites: list[tuple[str, int]] = ()) -> str:
    """The note for the ``.cuda()`` calls left on the CPU while building and running ``model``,
    or ""."""
    try:
        found = list(_SKIPPED.get(model, ()))
    except TypeError:
        found = []
    found += [s for s in sites if s not in found]
    if not found:
        return ""
    lines = ", ".join(f"{display_path(f)}:{n}" for f, n in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (f"run on the CPU: no CUDA on this machine, so .cuda() at {lines}{more} left its "
            f"tensor where it was")


