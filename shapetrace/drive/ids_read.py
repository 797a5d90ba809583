"""Where a guessed input of vectors shows itself to be token ids: an embedding handed floats."""

from __future__ import annotations

from ..base.ops import EMBEDDINGS


def at_embedding(failed) -> bool:
    """Whether ``failed`` failed at an embedding handed floats (or vectors made ids by
    ``x.long()``), or at a table indexed by floats made from a guessed vector input."""
    op = failed.failed_op
    if op is None or not op.inputs:
        return False
    floats = [tuple(a.shape) for a in failed.args
              if getattr(a, "is_floating_point", lambda: False)() and a.dim() in (2, 3)]
    vectors = {shape for shape in floats if len(shape) == 3}
    if op.op == "[]" and op.error is not None and "used as indices" in str(op.error[1]):
        # a table indexed by the input (``self.weight[token_ids]``): an embedding by hand, of
        # vectors guessed from a name or of positions annotated as floats
        return any(tuple(m.shape)[:2] in {v[:2] for v in floats} for m in op.inputs[1:])
    if op.op not in EMBEDDINGS:
        return False
    ids = op.inputs[0]
    return getattr(ids.dtype, "is_floating_point", False) or tuple(ids.shape) in vectors
