"""pytest plugin for shapetrace (collection of [tool.shapetrace] targets)."""
