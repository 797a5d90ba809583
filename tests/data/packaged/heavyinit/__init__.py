"""A package whose __init__ needs a package that is not installed (its other modules do not)."""

from .extras import Plotter  # noqa: F401
