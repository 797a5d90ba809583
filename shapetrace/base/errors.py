"""The one exception family shapetrace raises for problems it can explain."""


class ShapetraceError(Exception):
    """Base class: a problem shapetrace can explain in one line."""


class UsageError(ShapetraceError):
    """Bad input from the user: a flag, a spec, a config file. The CLI exits 2."""


class TargetError(ShapetraceError):
    """A target could not be imported, found or built. The CLI exits 2."""
