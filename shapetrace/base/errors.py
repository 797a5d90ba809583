"""The one exception family shapetrace raises for problems it can explain, and the helpers that
keep an exception as data (its first line; without its frames)."""


class ShapetraceError(Exception):
    """Base class: a problem shapetrace can explain in one line."""


class UsageError(ShapetraceError):
    """Bad input from the user: a flag, a spec, a config file. The CLI exits 2."""


class TargetError(ShapetraceError):
    """A target could not be imported, found or built. The CLI exits 2."""


class NoModuleClasses(TargetError):
    """A file defines no ``nn.Module`` subclass: the command line runs it as a script."""


def one_line(text: object) -> str:
    """The first line of ``text`` (an exception's message), stripped."""
    text = str(text).strip()
    return text.splitlines()[0] if text else ""


def failed_on_none(raised: BaseException | None) -> bool:
    """Whether ``raised`` is code failing on a None it was handed (``None > 3``,
    ``None.shape``): a value left out, not a bug of the code that read it."""
    return isinstance(raised, (TypeError, AttributeError)) and "NoneType" in str(raised)


def drop_frames(exc: BaseException | None) -> None:
    """Lets the frames of code that raised go: the exception is kept as data (a result keeps
    it for ``--debug``), and its traceback would keep every local of the code that raised (a
    forward's activations) alive as long as the result. Its causes and contexts too."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = None
        exc = exc.__cause__ or exc.__context__
