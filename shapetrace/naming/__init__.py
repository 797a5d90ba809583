"""Stage 2, naming: every axis of every recorded tensor gets its names, ``(B, H, T, d)``.

``axes``        an axis as named factors ``(size, name)``, and how it is written
``provenance``  ``annotate(trace)``: factors carried through each op (a view splits ``C`` into
                ``H`` and ``d``, a transpose moves axes), never a provenance it did not derive
``reshapes``    a reshape read as splits and merges of named factors (``reshape-jumble``'s basis)
``pieces``      factors cut by a literal size (windows, patches, chunks) kept tied to their axis
``hints``       the one reader of jaxtyping annotations on forwards
``proven``      at the user's own sizes, the names something proves: the model's attributes and
                config, the annotations of the forwards that ran, declared inputs

Reads records (``base``); imports nothing of the analysis, rules or later stages.
"""
