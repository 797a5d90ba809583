"""Traces entered on several threads at once: every hook a trace adds is its own, and every one
is gone when the trace ends (``record.hooks``).

torch numbers hook handles with a class counter; a counter read by two threads at once gives
two hooks one number, and removing one takes the other away. The test widens that window (the
handle's number is read, the thread yields, then the counter moves on) so that it is hit
whenever two registrations overlap."""

from __future__ import annotations

import threading
import time

import torch
import torch.nn as nn
import torch.utils.hooks as torch_hooks
from torch.nn.modules import module as nn_module
from torch.optim import optimizer as torch_optimizer

import shapetrace


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)
        self.out = nn.Linear(6, 3)

    def forward(self, x):
        return self.out(torch.relu(self.proj(x)))


def _slow_numbering(monkeypatch):
    def numbered(self, hooks_dict, *, extra_dict=None):
        import weakref

        self.hooks_dict_ref = weakref.ref(hooks_dict)
        number = torch_hooks.RemovableHandle.next_id
        time.sleep(0.002)  # another thread reads the same number here, unless they take turns
        self.id = number
        torch_hooks.RemovableHandle.next_id = number + 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    monkeypatch.setattr(torch_hooks.RemovableHandle, "__init__", numbered)


def _global_hooks() -> int:
    return (len(nn_module._global_forward_pre_hooks) + len(nn_module._global_forward_hooks)
            + len(torch_optimizer._global_optimizer_pre_hooks)
            + len(torch_optimizer._global_optimizer_post_hooks))


def test_traces_on_two_threads_keep_their_own_hooks(monkeypatch):
    _slow_numbering(monkeypatch)
    before = _global_hooks()
    modules: list[set] = []
    errors: list = []
    start = threading.Barrier(2)

    def work(n: int) -> None:
        try:
            model = _Block()
            start.wait()
            for _ in range(3):
                with shapetrace.trace(model) as t:
                    model(torch.randn(2, 6))
                modules.append({r.module for r in t.records if r.op == "F.linear"})
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # every trace saw which module ran each op (its global module hooks were its own) ...
    assert len(modules) == 6
    assert all(found == {"_Block.proj", "_Block.out"} for found in modules), modules
    # ... and took every hook it added away with it
    assert _global_hooks() == before
