"""Stage 0, the foundations: plain data and vocabularies that every later stage reads.

``errors``       the one exception family (``ShapetraceError``, ``UsageError``, ``TargetError``)
``ops``          the op vocabulary: names, families (matmuls, softmaxes, moves), argument readers
``names``        the vocabulary of names: which names mean batch, time, width, heads, head
                 size, vocabulary, length, a cache or a causal flag, wherever a user writes them
``dims``         ``Dims``: named sizes (the probe primes, or a user's declared sizes) and labels
``specs``        ``--init`` and ``--input`` as data, and the tensors an input spec makes
``source``       where in the user's code something ran: the one walk to the user's frame
``records``      what a trace is made of: ``TensorMeta``, ``OpRecord``, ``TraceData``
``diagnostics``  what a finding is: ``Diagnostic``, and merging repeats of one
``compat``       every private torch internal shapetrace touches, looked up when called
``width``        how wide text output is

Imports nothing of the later stages; importing it does not import torch (the pytest plugin
and ``--help`` stay light), except ``compat`` and ``ops`` when their helpers run.
"""
