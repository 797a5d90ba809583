"""Library styles of giving a model its sizes: one adapter per style.

A constructor argument that holds a config object (``config``, ``cfg``, ``params``:
``base.names.CONFIG``, or one annotated with a config class) is made by the first adapter in
:data:`CONFIG_STYLES` that knows it, at the probe sizes:

- :class:`AnnotatedConfig`: the argument is annotated with a class whose constructor takes
  sizes by name: a config dataclass (``config: GPTConfig``), a Hugging Face config
  (``config: GPT2Config``), any class with ``n_embd=``/``num_heads=``/... parameters;
- :class:`ModuleConfigClass`: not annotated, and the module defines exactly one dataclass
  that holds every field the code reads from the argument (or, where no read is seen, exactly
  one whose name ends in ``Config`` or ``Cfg``);
- :class:`ModuleConfigDict`: not annotated, and the module holds one dict of sizes
  (``GPT_CONFIG_124M = {"emb_dim": 768, "n_heads": 12, ...}``, read as ``cfg["emb_dim"]``),
  copied with its sizes at the probe sizes.

An adapter says where the sizes are (:meth:`ConfigStyle.source`: a class to build from its
constructor's names, or a dict to copy); ``infer`` sets them to the probe sizes. A file whose
sizes are module-level constants (nanoGPT's ``n_embd = 384``) is the fourth style, applied as the
file loads (``modconfig``). Adding a style is adding an adapter here; the driver never names a
library.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping

from ..base.names import size_of
from ..base.source import class_namespace


class ConfigStyle:
    """One way a library passes sizes in a config object."""

    def source(self, cls: type, param: inspect.Parameter) -> type | Mapping | None:
        """Where the config for ``param`` of ``cls`` comes from in this style: a class to build
        from its constructor's names, a dict of sizes to copy, or None when the style does not
        apply."""
        return None


class AnnotatedConfig(ConfigStyle):
    """``config: GPTConfig``: a dataclass, or a class whose constructor takes a size by name."""

    def source(self, cls, param):
        annotation = param.annotation
        if isinstance(annotation, str):
            annotation = getattr(_module_of(cls), annotation, None)
        if not isinstance(annotation, type):
            return None
        if dataclasses.is_dataclass(annotation):
            return _having_fields_read(cls, param, annotation)
        if _takes_sizes(annotation):
            return annotation
        return None


def _having_fields_read(cls: type, param, annotation: type) -> type:
    """The config dataclass to build for ``param``: its annotation, or, when the code reads
    fields the annotation lacks (``config: NaiveArgs`` where the class reads ``config.fast_dim``
    of its sibling ``DualArgs``), the one dataclass of the module related to it (a subclass, or
    one sharing a base) that has every field the code reads."""
    from .config_fields import fields_read

    read = set(fields_read(cls, param.name))

    def fields(config: type) -> set[str]:
        return {f.name for f in dataclasses.fields(config)}

    if not read or read <= fields(annotation):
        return annotation
    related = set(annotation.__mro__[:-1])
    found = [v for v in vars(_module_of(cls) or _Namespace({})).values()
             if isinstance(v, type) and dataclasses.is_dataclass(v) and v is not annotation
             and related & set(v.__mro__[:-1]) and read <= fields(v)]
    return found[0] if len(found) == 1 else annotation


class ModuleConfigClass(ConfigStyle):
    """No annotation; the module defines exactly one dataclass that holds every field the code
    reads from the argument (``config.n_embed``, ``config.base_scale``: a ``DitModelArgs`` by any
    name), or, where no read is seen, exactly one ``...Config`` dataclass."""

    def source(self, cls, param):
        if param.annotation is not param.empty:
            return None
        module = _module_of(cls)
        classes = [(k, v) for k, v in vars(module).items()
                   if isinstance(v, type) and dataclasses.is_dataclass(v)] if module else []
        from .config_fields import fields_read

        read = set(fields_read(cls, param.name))
        holding = [v for _, v in classes if read and read <= _holds(v)]
        if len(holding) == 1:
            return holding[0]
        found = [v for k, v in classes if k.lower().endswith(("config", "cfg"))
                 and (not holding or v in holding)]
        return found[0] if len(found) == 1 else None


def _holds(config: type) -> set[str]:
    """The names a dataclass instance holds: its fields, and what its class sets besides them
    (``n_patch = patch_w * patch_h`` written in the class body)."""
    return {f.name for f in dataclasses.fields(config)} | \
        {k for k in vars(config) if not k.startswith("_")}


class ModuleConfigDict(ConfigStyle):
    """No annotation; the module holds one dict of sizes, read as ``cfg["emb_dim"]``."""

    def source(self, cls, param):
        if param.annotation is not param.empty:
            return None
        module = _module_of(cls)
        found = [v for k, v in vars(module).items() if not k.startswith("_")
                 and isinstance(v, dict) and _sizes_in(v) >= {"C", "H"}] if module else []
        if not found or len({tuple(sorted(map(str, d))) for d in found}) != 1:
            return None  # none, or several that differ in their keys
        return found[0]


#: the adapters, tried in order
CONFIG_STYLES: tuple[ConfigStyle, ...] = (AnnotatedConfig(), ModuleConfigClass(),
                                          ModuleConfigDict())


def config_source(cls: type, param: inspect.Parameter) -> type | Mapping | None:
    """Where the first style that knows ``param`` of ``cls`` finds its config, else None."""
    for style in CONFIG_STYLES:
        found = style.source(cls, param)
        if found is not None:
            return found
    return None


def annotated_config(cls: type, param: inspect.Parameter) -> type | None:
    """The config class ``param`` is annotated with (whatever its name), else None."""
    return AnnotatedConfig().source(cls, param)


class _Namespace:
    """A class's module as its global names (``vars`` of it), found also when the module is
    no longer in ``sys.modules``."""

    def __init__(self, names: dict):
        self.__dict__ = names


def _module_of(cls: type):
    names = class_namespace(cls)
    return _Namespace(names) if names else None


def _sizes_in(table: Mapping) -> set[str]:
    return {size_of(key, constructor=True) for key in table if isinstance(key, str)}


def _takes_sizes(config_cls: type) -> bool:
    """Whether ``config_cls``'s constructor takes a model width or a head count by name."""
    try:
        params = inspect.signature(config_cls).parameters
    except (TypeError, ValueError):
        return False
    return bool({size_of(name) for name in params} & {"C", "H"})
