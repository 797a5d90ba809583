"""``--fake``: build and run a module on fake tensors (shapes only, no values, no memory).

Everything from the constructor to the end of forward runs inside one ``FakeTensorMode``:
parameters, buffers and activations have shapes and dtypes but no storage, so a 175B-parameter
GPT builds and runs in a few hundred MiB. Ops whose result depends on the values
(``.item()``, ``x[mask]``, ``torch.nonzero``, ``if`` on a tensor) cannot run there; they raise
:class:`NeedsValuesError`, which says so in the user's terms instead of the fake-tensor
internals (``DataDependentOutputException: aten._local_scalar_dense.default``).
"""

from __future__ import annotations

import contextlib
import logging

import torch

from ..base.compat import fake_tensor_api, is_fake
from ..base.errors import TargetError

FakeTensorMode, DataDependentOutputException, DynamicOutputShapeException, \
    UnsupportedOperatorException = fake_tensor_api()

_RERUN = "which --fake does not have; run without --fake to check this module"

#: aten op name -> what the user wrote to get there
_READS_VALUE = {
    "_local_scalar_dense": ".item(), float(t), int(t), bool(t) or an if/while on a tensor",
    "equal": "torch.equal",
    "is_nonzero": "bool(t) or an if/while on a tensor",
    "allclose": "torch.allclose",
}
_SIZE_FROM_VALUES = {
    "nonzero": "boolean-mask indexing x[mask], torch.nonzero or torch.where(cond)",
    "index": "boolean-mask indexing x[mask]",
    "masked_select": "boolean-mask indexing x[mask] or torch.masked_select",
    "masked_scatter": "x[mask] = y",
    "_unique2": "torch.unique",
    "unique_dim": "torch.unique",
    "unique_consecutive": "torch.unique_consecutive",
    "repeat_interleave": "repeat_interleave with tensor repeats",
    "bincount": "torch.bincount",
    "histc": "torch.histc",
}


#: In-place fills that change values only: on a fake tensor they are the identity. Parameter
#: initialisation is made of them (``reset_parameters``, ``nn.init.*``, nanoGPT's
#: ``_init_weights``), so answering them directly makes building a large model about a third
#: faster. Ops that can fail on shapes (``copy_``, ``fill_`` with a tensor) still dispatch.
_aten = torch.ops.aten
_FILLS = frozenset({
    _aten.uniform_.default, _aten.normal_.default, _aten.zero_.default, _aten.fill_.Scalar,
    _aten.bernoulli_.float, _aten.exponential_.default, _aten.log_normal_.default,
    _aten.cauchy_.default, _aten.geometric_.default, _aten.random_.default,
    getattr(_aten.random_, "from"), _aten.random_.to,
})


class NeedsValuesError(TargetError):
    """An op that needs real values ran under ``--fake``."""


def _op_name(func) -> str:
    name = getattr(func, "__name__", None) or str(func)  # "nonzero.default"
    return name.split(".")[0]


def explain(func, exc: BaseException) -> str:
    """One line saying which op needed values and what to do."""
    name = _op_name(func)
    if isinstance(exc, UnsupportedOperatorException):
        return f"aten.{name} has no shapes-only implementation; run without --fake to check this module"
    if name in _READS_VALUE:
        return f"{_READS_VALUE[name]} reads a tensor's value, {_RERUN}"
    what = _SIZE_FROM_VALUES.get(name, f"aten.{name}")
    return f"the output size of {what} depends on the values, {_RERUN}"


#: the logger torch's fake tensors report a failing op on
_TORCH_FAKE_LOG = "torch._subclasses.fake_tensor"


class ShapesOnlyMode(FakeTensorMode):
    """A ``FakeTensorMode`` that reports data-dependent ops as :class:`NeedsValuesError`.

    Only the outermost dispatch translates: torch's own decompositions may still catch the
    fake-tensor exceptions they expect. In-place random fills return their input at once.
    """

    def __init__(self):
        super().__init__(allow_non_fake_inputs=True)
        self._depth = 0
        self._quiet: list = []

    def __enter__(self):
        # torch logs each op that raises under a fake mode, with its traceback, as an error;
        # the exception is the caller's to report, once
        logger = logging.getLogger(_TORCH_FAKE_LOG)
        self._quiet.append(logger.disabled)
        logger.disabled = True
        try:
            return super().__enter__()
        except BaseException:
            logger.disabled = self._quiet.pop()
            raise

    def __exit__(self, *exc_info):
        try:
            return super().__exit__(*exc_info)
        finally:
            logging.getLogger(_TORCH_FAKE_LOG).disabled = self._quiet.pop()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _FILLS and is_fake(args[0]):
            return args[0]
        self._depth += 1
        try:
            return super().__torch_dispatch__(func, types, args, kwargs or {})
        except (DataDependentOutputException, DynamicOutputShapeException,
                UnsupportedOperatorException) as exc:
            if self._depth > 1:
                raise
            raise NeedsValuesError(explain(func, exc)) from None
        finally:
            self._depth -= 1


@contextlib.contextmanager
def fake_mode(fake: bool):
    """A :class:`ShapesOnlyMode` for the whole build-and-run when ``fake``, else nothing."""
    if not fake:
        yield None
        return
    with ShapesOnlyMode() as mode:
        yield mode
