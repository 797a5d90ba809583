import torch
import no_such_module_for_shapetrace  # noqa: F401
