"""A registry of architectures that imports every model module of its own."""

_ARCHITECTURES: dict = {}


def register(name, cls):
    if name in _ARCHITECTURES:
        raise KeyError(f"architecture {name} already registered")
    _ARCHITECTURES[name] = cls


from regpkg.models import tiny  # noqa: E402,F401 - each module registers itself
