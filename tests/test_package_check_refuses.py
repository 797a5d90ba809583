"""A check of an installed package the module builds on (an ``assert`` on how it is called)
refusing inputs shapetrace guessed is the guess not fitting, as the module's own check is: a
target error naming the package's line, never an op-failed finding at it."""

from __future__ import annotations

import sys
import textwrap

import shapetrace as st
import shapetrace.base.source as source

PACKAGE = textwrap.dedent('''
    import torch
    from torch import nn


    class Latents(nn.Module):
        def __init__(self, dim, learned=False):
            super().__init__()
            self.latents = nn.Parameter(torch.randn(4, dim)) if learned else None
            self.proj = nn.Linear(dim, dim)

        def forward(self, x, latents=None):
            assert (self.latents is None) != (latents is None), "learn the latents or pass them"
            lat = self.latents if latents is None else latents
            return self.proj(x) + lat.mean(0)
''')

USER = textwrap.dedent('''
    from torch import nn
    from latentlib import Latents


    class Wrapped(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.inner = Latents(dim)

        def forward(self, x, **kwargs):
            return self.inner(x, **kwargs) + x
''')


def test_an_installed_package_s_check_refusing_a_guess_is_a_target_error(tmp_path, monkeypatch):
    installed, user = tmp_path / "installed", tmp_path / "user"
    installed.mkdir()
    user.mkdir()
    (installed / "latentlib.py").write_text(PACKAGE)
    (user / "wrapped.py").write_text(USER)
    monkeypatch.setattr(source, "_INSTALLED", (str(installed), *source._INSTALLED))
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.syspath_prepend(str(user))
    monkeypatch.delitem(sys.modules, "latentlib", raising=False)
    import wrapped

    result = st.check(wrapped.Wrapped, init={"dim": "C"}).targets[0]
    assert result.error is not None and "a check of a package it builds on" in result.error
    assert "latentlib.py" in result.error
    assert not [d for d in result.diagnostics if d.rule == "op-failed"]
