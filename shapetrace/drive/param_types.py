"""What a constructor parameter's annotation says about the value it takes: whether None is
allowed (``str | None``), how many ints a tuple of ints holds (``Tuple[int, int]``), and the
fields a config class annotates in its body (a config built from ``**kwargs``).
"""

from __future__ import annotations

import inspect
import re
import typing


def none_allowed(annotation) -> bool:
    """Whether a parameter's annotation lets it be None (``str | None``, ``Optional[str]``)."""
    if isinstance(annotation, str):
        return bool(re.search(r"\|\s*None\b|\bNone\s*\||^Optional\[", annotation.strip()))
    return annotation is not inspect.Parameter.empty and type(None) in typing.get_args(annotation)


def int_tuple_length(annotation) -> int:
    """How many ints a parameter annotated as a tuple of ints holds (``Tuple[int, int]``: 2);
    0 for any other annotation."""
    if isinstance(annotation, str):
        found = re.fullmatch(r"(?:typing\.)?[Tt]uple\[\s*int(?:\s*,\s*int)+\s*\]", annotation.strip())
        return annotation.count("int") if found else 0
    args = typing.get_args(annotation)
    return len(args) if typing.get_origin(annotation) is tuple and args \
        and all(a is int for a in args) else 0


def annotated_fields(cls: type) -> list[inspect.Parameter]:
    """The fields a config class annotates in its body, each with the default it sets there,
    as keyword parameters: a config whose constructor takes them as ``**kwargs``."""
    fields = {name: annotation for klass in reversed(cls.__mro__)
              for name, annotation in vars(klass).get("__annotations__", {}).items()}
    return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY,
                              default=getattr(cls, name, inspect.Parameter.empty))
            for name in fields if not name.startswith("_")]
