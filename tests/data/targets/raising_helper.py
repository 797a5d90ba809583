"""Imported by imports_raising.py; fails while importing."""


def _load():
    raise RuntimeError("weights.pt is missing")


_load()
