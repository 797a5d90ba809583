import definitely_not_installed_plotting_lib  # noqa: F401


class Plotter:
    pass
