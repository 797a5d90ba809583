"""``--fake``: build and run a module on fake tensors (shapes only, no values, no memory)."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def fake_mode(fake: bool):
    """A FakeTensorMode for the whole build-and-run when ``fake``, else nothing."""
    if not fake:
        yield None
        return
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        yield mode
