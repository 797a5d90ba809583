# a package that refuses to import without an accelerator library, in its own words
try:
    import not_installed_accel_kernels  # noqa: F401
except ImportError as exc:
    raise ImportError("not_installed_accel_kernels is missing: see the install guide") from exc
