"""The HTML report: one self-contained page for the command line, the plugin and notebooks.

* ``html.data``: what the page needs beyond a result's JSON, read where the result lives;
* ``html.page``: the page: summary table, findings, pictures, trace tree, module table, rules;
* ``html.tree``: the trace as a tree of modules, repeated blocks folded;
* ``html.pictures``: attention heatmaps and dependency grids as inline SVG;
* ``text``: escaping (``esc``, the one way user text reaches the page) and coloured shapes;
* ``html.style``: the inline stylesheet (light, dark, print, phone width) and script.
"""

from .data import html_extras
from .page import TITLE, heading, html_page, rules_page, shell

__all__ = ["TITLE", "heading", "html_extras", "html_page", "rules_page", "shell"]
