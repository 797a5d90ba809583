"""``python -m shapetrace`` and the ``shapetrace`` script."""

import os
import sys


def main(argv=None) -> int:
    # a constructor that loads pretrained weights by name (``AutoModel.from_pretrained``) would
    # download gigabytes, or wait on the network where there is none: the Hugging Face hub is
    # read offline (from its cache) unless the user set it otherwise
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # ``python -m`` puts the working directory first on the path: a file of the user's there
    # named like a module of Python's own (``tokenize.py``, ``copy.py``) would be imported in
    # its place by shapetrace's imports, and torch's, now or later. Python's own modules of
    # those names are imported first, without the working directory on the path; the user's
    # files are imported by their paths.
    here = [p for p in sys.path[:1] if p in ("", os.getcwd())]
    del sys.path[:len(here)]
    try:
        _own_modules_first(here)
        from .frontends.cli import main as cli_main
    finally:
        sys.path[:0] = here
    return cli_main(argv)


def _own_modules_first(folders) -> None:
    """Imports each module of Python's own that a file in ``folders`` is named like."""
    import importlib

    for folder in folders:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            stem, ext = os.path.splitext(name)
            if ext == ".py" and stem in sys.stdlib_module_names and stem not in sys.modules:
                try:
                    importlib.import_module(stem)
                except Exception:  # noqa: BLE001 - a module of Python's that this platform lacks
                    pass


if __name__ == "__main__":
    sys.exit(main())
