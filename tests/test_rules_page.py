"""``python -m shapetrace --rules --format html``: every rule on a page of its own, not the
terminal's table in a frame."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser

from shapetrace.rules.registry import RULES


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links, self.pre_painted = set(), [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href", "").startswith("#"):
            self.links.append(attrs["href"][1:])
        if tag == "pre" and "painted" in (attrs.get("class") or ""):
            self.pre_painted = True


def _rules_page(tmp_path):
    out = tmp_path / "rules.html"
    done = subprocess.run([sys.executable, "-m", "shapetrace", "--rules", "--format", "html",
                           "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def test_every_rule_has_a_row_and_an_explanation_its_link_reaches(tmp_path):
    text = _rules_page(tmp_path)
    page = _Page()
    page.feed(text)
    assert not page.pre_painted  # a page built from data, not painted text
    assert set(page.links) == {f"rule-{name}" for name in RULES}
    assert set(page.links) <= page.ids
    for rule in RULES.values():
        assert rule.code in text
    assert text.count("<tr>") == len(RULES) + 1  # the heading row and one per rule


def test_code_in_a_summary_reads_as_code(tmp_path):
    text = _rules_page(tmp_path)
    assert "<code>.T</code>" in text and "`.T`" not in text
    assert not re.search(r"<script", text)  # nothing to run: the page is static
