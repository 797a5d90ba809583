"""Stage 8, the driver: turning "check this" into a built module, a run and a result.

One target: ``check.check_target`` makes a plan (``plan``: constructor values, inputs and sizes
as data, each guess with its other readings; ``infer`` reads them from the module's own names
and annotations, ``usage`` from what its code does with them (the fields it reads from a
config, what a size is handed to, ``**kwargs`` handed on), ``examples`` from the file's own
example call, ``styles`` holds one adapter per library's way of passing sizes in a config,
``layout`` the author's word on time-first inputs; ``parent`` checks a class as a class of its
file or package builds and calls it), attempts it (``attempt``; ``devices`` keeps ``.cuda()`` on
a machine without CUDA on the CPU), then adds the
behaviour checks and the reference comparison (``reference``, ``reference_weights``) to the
run that stands. ``preserve`` leaves a caller's instance as it was; ``fit`` refuses sizes that
would not fit in memory; ``deadline`` stops a target that runs too long.

Many targets: ``targets`` turns a TARGET string into classes (``modconfig`` sets a file's
module-level sizes as it loads), ``config`` reads ``[tool.shapetrace]``, ``jobs`` pairs each
target with its settings (modules, or a file run as a script: ``script``), ``isolation`` keeps a
target's imports out of the course's own.
"""
