"""The HTML report: one self-contained page for the command line, the plugin and notebooks.

* ``_data``: what the page needs beyond a result's JSON, read where the result lives;
* ``_page``: the page: summary table, findings, pictures, trace tree, module table, rules;
* ``_tree``: the trace as a tree of modules, repeated blocks folded;
* ``_pictures``: attention heatmaps and dependency grids as inline SVG;
* ``_text``: escaping (``esc``, the one way user text reaches the page) and coloured shapes;
* ``_style``: the inline stylesheet (light, dark, print, phone width) and script.
"""

from ._data import html_extras
from ._page import TITLE, heading, html_page, rules_page, shell

__all__ = ["TITLE", "heading", "html_extras", "html_page", "rules_page", "shell"]
