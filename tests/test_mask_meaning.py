"""A mask's meaning declared per input (``attn_mask=T,S:mask-keep`` / ``mask-drop`` /
``mask-add``): parsed, written back, and the masks made follow it, so that no finding comes from
a polarity shapetrace chose."""

from __future__ import annotations

import pytest
import torch

from shapetrace.base.errors import UsageError
from shapetrace.base.specs import make_input, parse_input

DIMS = {"B": 5, "T": 7, "S": 17}


@pytest.mark.parametrize("text, dtype, meaning", [
    ("attn_mask=T,S:mask-keep", "bool", "keep"),
    ("mask=B,T,S:mask-drop", "bool", "drop"),
    ("bias=T,S:mask-add", "float", "add"),
])
def test_a_mask_meaning_is_parsed_and_written_back(text, dtype, meaning):
    spec = parse_input(text, DIMS)
    assert (spec.dtype, spec.mask) == (dtype, meaning)
    assert str(spec) == text and parse_input(str(spec)) == spec


def test_nothing_follows_a_mask_meaning():
    with pytest.raises(UsageError, match="nothing follows"):
        parse_input("m=T,S:mask-keep:V")


@pytest.mark.parametrize("dims", ["T,S", "B,T,S", "T,T"])
def test_masks_follow_their_meaning_and_every_query_keeps_a_key(dims):
    g = torch.Generator().manual_seed(0)
    keep = make_input(parse_input(f"m={dims}:mask-keep"), DIMS, generator=g)
    g = torch.Generator().manual_seed(0)
    drop = make_input(parse_input(f"m={dims}:mask-drop"), DIMS, generator=g)
    g = torch.Generator().manual_seed(0)
    add = make_input(parse_input(f"m={dims}:mask-add"), DIMS, generator=g)
    assert keep.dtype == drop.dtype == torch.bool and add.dtype == torch.float32
    assert torch.equal(drop, ~keep)
    assert torch.equal(add == 0, keep) and bool((add[~keep] == float("-inf")).all())
    assert bool(keep.any(-1).all())  # no query with every key masked
    assert not bool(keep.all())  # something is masked, so mask code is seen at work
