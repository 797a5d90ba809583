"""Reports for the HTML tests (``test_html_report``, ``test_html_browser``): made once per
session, from the command line (targets, and the demo without one), the Python API and a
notebook's display: clean, buggy, 96 layers deep, a finding merged across twelve modules, a
forward that raises, a traced training loop."""

from __future__ import annotations

import os
import sys
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = "tests/data/html/models.py"
NASTY = "<img src=x onerror=__pwned=1>"  # as in tests/data/html/models.py
QUOTED = "q\"uo'te"  # a ModuleDict key, as in tests/data/html/models.py
RAISED = "<script>__pwned=3</script> \"double\" 'single' & <b>bold</b>"  # Raises' message
BUGGY_LINE = 43  # the jumbled reshape in Jumbled.forward


def cli_page(tmp: Path, *targets: str) -> str:
    """The page ``python -m shapetrace TARGET... --output page.html`` writes."""
    from shapetrace.frontends.cli import main

    path = tmp / "page.html"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        main([*targets, "--output", str(path)])
    finally:
        os.chdir(cwd)
    return path.read_text(encoding="utf-8")


def deep_page() -> str:
    """96 identical blocks, checked from Python (without the behaviour checks, for time)."""
    from shapetrace.drive.check import check_target
    from shapetrace.render import EXPORTERS
    from shapetrace.report.results import Report

    result = check_target(_models().Deep, target=f"{MODELS}::Deep", behaviour=False)
    return EXPORTERS["html"].export(Report([result]))


def _models():
    sys.path.insert(0, str(ROOT / "tests" / "data" / "html"))
    try:
        import models
    finally:
        sys.path.pop(0)
    return models


def notebook_page(html: str) -> str:
    """What a notebook shows (``_repr_html_``), in a page of its own for the browser."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"UTF-8\">\n"
            f"<title>notebook</title>\n</head>\n<body>\n{html}\n</body>\n</html>\n")


def loop_page() -> str:
    """A training loop traced with ``shapetrace.trace()``, as a notebook shows the Trace."""
    import shapetrace

    with shapetrace.trace() as t:
        _models().train(8)
    return notebook_page(t._repr_html_())


def make_pages(tmp: Path) -> dict[str, str]:
    pages = {}
    for name, targets in (("clean", [f"{MODELS}::Attention"]),
                          ("buggy", [f"{MODELS}::Attention", f"{MODELS}::Markup"]),
                          ("stack", [f"{MODELS}::Stack", f"{MODELS}::Raises"]),
                          ("demo", ["--format", "html"])):
        folder = tmp / name
        folder.mkdir()
        pages[name] = cli_page(folder, *targets)
    pages["deep"] = deep_page()
    pages["loop"] = loop_page()
    return pages


class Element:
    def __init__(self, tag: str, attrs: dict, parent: Element | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list = []  # Element or str

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        for c in self.children:
            if isinstance(c, Element):
                yield c
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [e for e in self.iter() if (tag is None or e.tag == tag)
                and (cls is None or cls in e.classes)]

    def ancestors(self):
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class Dom(HTMLParser):
    """The page as a tree of Elements; fails on a closing tag that closes the wrong element."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.node = self.root
        self.feed(text)
        self.close()
        assert self.node is self.root, f"unclosed <{self.node.tag}>"

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs), self.node)
        self.node.children.append(element)
        if tag not in self.VOID:
            self.node = element

    def handle_startendtag(self, tag, attrs):
        self.node.children.append(Element(tag, dict(attrs), self.node))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.node.tag == tag, f"</{tag}> closes <{self.node.tag}>"
        self.node = self.node.parent

    def handle_data(self, data):
        self.node.children.append(data)
