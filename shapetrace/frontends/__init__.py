"""Stage 9, the ways in: what a user runs.

``cli``             ``python -m shapetrace``: arguments, exit codes, formats
``demo``            the built-in demo, a correct and a buggy attention
``notebook``        ``%load_ext shapetrace`` and the ``%%shapetrace`` cell magic
``pytest_plugin``   the pytest plugin's hooks, collectors and target items (entry point
                    ``pytest11``); with ``pytest_state`` (one run's options and config),
                    ``pytest_targets`` (item names read without importing the targets),
                    ``pytest_traced`` (traced tests and the fixture) and ``pytest_outputs``
                    (the report file, Gradescope's results, GitHub Actions annotations, through
                    ``gradescope`` and ``render``)

Importing the plugin or parsing ``--help`` imports neither torch nor rich.
"""
