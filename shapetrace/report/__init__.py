"""Stage 7, the report: the one model of what a run found, read by every front end and format.

``trace``    the public ``trace()`` / ``Trace``: records a block, resolves the names of its sizes,
             and holds the one list of findings about the run (``Trace.diagnostics``: the trace
             rules', then what ``check()`` adds: the exception, the behaviour checks, the
             reference comparison); ``print()`` and ``_repr_html_`` go through ``render``
``results``  ``TargetResult`` (one target: its trace, findings, notes or error) and ``Report``
             (several), with ``to_json()`` (SPEC section 5)

Composes the stages below it; renders through ``render``, which knows nothing of it.
"""
