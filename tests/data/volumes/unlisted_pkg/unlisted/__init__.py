"""A package run from its source folder, never installed: its version comes from metadata
that is not there."""

import importlib.metadata

__version__ = importlib.metadata.version("shapetrace-unlisted-example")
