"""The HTML report's structure, read with html.parser (no browser needed): the summary, the
findings with their source lines, the trace tree, the pictures, the module table, escaping.

``test_html_browser`` loads the same pages in Chromium."""

from __future__ import annotations

import re

import pytest

from html_pages import BUGGY_LINE, MODELS, NASTY, QUOTED, RAISED, Dom, make_pages
from shapetrace.render import EXPORTERS, dim_style
from shapetrace.render.html.text import colour_class
from shapetrace.report.results import Diagnostic, Report, TargetResult

PAGES = ["clean", "buggy", "deep", "stack", "demo", "loop"]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return make_pages(tmp_path_factory.mktemp("html"))


@pytest.fixture(scope="module")
def doms(pages):
    return {name: Dom(text).root for name, text in pages.items()}


def sections(root):
    return root.find_all("section", "target")


@pytest.mark.parametrize("name", PAGES)
def test_self_contained_and_well_formed(pages, doms, name):
    root = doms[name]
    assert pages[name].startswith("<!DOCTYPE html>")
    assert [e.tag for e in root.iter() if e.tag in ("link", "img", "iframe", "object")] == []
    assert [e.attrs for e in root.find_all("script") if "src" in e.attrs] == []
    hrefs = [e.attrs["href"] for e in root.find_all("a")]
    assert hrefs and [h for h in hrefs if not h.startswith("#")] == []


@pytest.mark.parametrize("name", PAGES)
def test_every_anchor_resolves_and_ids_are_unique(doms, name):
    root = doms[name]
    ids = [e.attrs["id"] for e in root.iter() if "id" in e.attrs]
    assert len(ids) == len(set(ids))
    missing = [e.attrs["href"] for e in root.find_all("a") if e.attrs["href"][1:] not in ids]
    assert missing == []


def test_summary_lists_failures_first_with_counts(doms):
    rows = doms["buggy"].find_all("table", "summary")[0].find_all("tbody")[0].find_all("tr")
    cells = [[c.text() for c in row.find_all("td")] for row in rows]
    assert [c[0] for c in cells] == [f"{MODELS}::Markup", f"{MODELS}::Attention"]
    assert [c[1] for c in cells] == ["failed", "passed"]
    assert cells[0][2:5] == ["2", "0", "0"] and cells[1][2:5] == ["0", "0", "0"]
    assert all(re.fullmatch(r"\d+ ms|\d+\.\d s", c[5]) for c in cells)
    links = [row.find_all("a")[0].attrs["href"][1:] for row in rows]
    assert links == [s.attrs["id"] for s in sections(doms["buggy"])]


def test_finding_shows_rule_source_and_module(doms):
    root = doms["buggy"]
    finding = root.find_all("article", "finding")[0]
    rule = finding.find_all("a", "rule")[0]
    assert rule.text() == "reshape-jumble" and rule.attrs["title"] == "docs/rules.md#reshape-jumble"
    doc = [e for e in root.iter() if e.attrs.get("id") == rule.attrs["href"][1:]][0]
    assert "Wrong" in doc.text() and "Right" in doc.text() and "ST001" in doc.text()
    assert finding.find_all("code", "code")[0].text() == "ST001"
    bad = finding.find_all("tr", "bad")
    assert len(bad) == 1 and bad[0].find_all("td", "n")[0].text() == str(BUGGY_LINE)
    assert "q.reshape(B, self.n_head, T, C // self.n_head)" in bad[0].text()
    numbers = [td.text() for td in finding.find_all("td", "n")]
    assert numbers == [str(n) for n in range(BUGGY_LINE - 2, BUGGY_LINE + 1)] + [""] + \
        [str(n) for n in range(BUGGY_LINE + 1, BUGGY_LINE + 3)]
    fix = finding.find_all("tr", "fix")  # the rule's corrected line (``Fix.data()``), below
    assert len(fix) == 1 and fix[0].find_all("td", "mk")[0].text() == "+"
    assert "q.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)" in fix[0].text()
    assert f"Markup.layers.{NASTY}" in finding.find_all("p", "module")[0].text()


def test_user_text_is_escaped(pages, doms):
    root = doms["buggy"]
    assert root.find_all("img") == []
    assert len(root.find_all("script")) == 1  # the page's own
    text = root.text()
    assert NASTY in text  # shown as text, in the summary, the heading and the module paths
    assert "# </code><script>__pwned=2</script>" in text  # the comment on the buggy line
    assert NASTY not in pages["buggy"]


def test_corrected_line_is_shown_below_the_bad_one():
    fix = "q = q.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)"
    report = Report([TargetResult(f"{MODELS}::Jumbled", diagnostics=[Diagnostic(
        "reshape-jumble", "error", "jumbled", file=MODELS, line=BUGGY_LINE, code="ST001",
        data={"fix": fix})])])
    root = Dom(EXPORTERS["html"].export(report)).root
    rows = root.find_all("table", "source")[0].find_all("tr")
    kinds = [(row.attrs.get("class") or "", row.find_all("td", "mk")[0].text()) for row in rows]
    assert kinds[2:4] == [("bad", "−"), ("fix", "+")]
    assert rows[3].find_all("code")[0].text().strip() == fix


def test_clean_trace_is_collapsed_and_buggy_opens_at_the_finding(doms):
    clean = sections(doms["clean"])[0]
    assert "open" not in clean.find_all("details", "trace")[0].attrs
    buggy = sections(doms["buggy"])[0]
    trace = buggy.find_all("details", "trace")[0]
    assert "open" in trace.attrs
    flagged = trace.find_all("div", "error")
    assert len(flagged) == 1
    assert flagged[0].find_all("span", "ln")[0].text() == str(BUGGY_LINE)
    assert all("open" in d.attrs for d in flagged[0].ancestors() if d.tag == "details")
    paths = [s.text() for s in trace.find_all("span", "mname")]
    assert paths[:3] == ["Markup", "layers", NASTY]
    finding = buggy.find_all("article", "finding")[0]
    assert finding.find_all("span", "loc")[0].find_all("a")[0].attrs["href"][1:] == \
        flagged[0].attrs["id"]


def test_96_layers_fold(doms):
    root = doms["deep"]
    folds = [f.text() for f in root.find_all("div", "fold")]
    assert folds == ["… Deep.blocks.1 to Deep.blocks.95 repeat the ops above (95 blocks)"]
    assert len(root.find_all("div", "op")) < 30
    heads = root.find_all("figure", "heat")
    assert len(heads) == 1 and "(and 95 more like it)" in heads[0].text()


@pytest.mark.parametrize("name", ["clean", "buggy"])
def test_heatmap_is_one_causal_head(doms, name):
    figure = sections(doms[name])[0].find_all("figure", "heat")[0]
    rects = figure.find_all("rect")
    assert len(rects) == 7 * 7  # T x T at the probe sizes
    masked = [r for r in rects if "masked" in r.classes]
    assert len(masked) == 21  # the future, strictly above the diagonal
    rows = [re.search(r"T (\d+), T (\d+)", r.text()).groups() for r in masked]
    assert all(int(col) > int(row) for row, col in rows)


def test_dependency_grid_shows_the_leak(doms):
    grids = sections(doms["buggy"])[0].find_all("figure", "grid")
    assert grids and grids[0].find_all("rect", "leak")


@pytest.mark.parametrize("name", ["clean", "buggy", "deep", "stack", "demo"])
def test_dims_have_their_terminal_colours(doms, name):
    spans = [s for shape in doms[name].find_all("span", "shape") for s in shape.find_all("span")]
    named = [(s.text(), s.classes) for s in spans if s.text().isidentifier()]
    assert {t for t, _ in named} >= {"B", "T", "C"}
    assert [(t, c) for t, c in named if colour_class(dim_style(t)) not in c] == []


def test_module_table(doms):
    table = sections(doms["clean"])[0].find_all("table", "modules")[0]
    rows = {r.find_all("code")[0].text(): r for r in table.find_all("tbody")[0].find_all("tr")}
    assert set(rows) == {"Attention", "qkv", "proj"}
    qkv = [td.text() for td in rows["qkv"].find_all("td")]
    assert qkv[1:] == ["(B, T, 3*C)", f"{143 * 429 + 429:,}"]
    assert [td.text() for td in rows["Attention"].find_all("td")][1] == "(B, T, C)"
    total = table.find_all("tfoot")[0].find_all("td")[-1].text()
    assert total == f"{143 * 429 + 429 + 143 * 143 + 143:,}"


def test_light_dark_print_and_phone(pages):
    page = pages["clean"]
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    for needle in ("@media (prefers-color-scheme: dark)", "@media print", "@media (max-width:"):
        assert needle in page


def test_export_is_the_document_of_the_entries():
    """The command line's page (``export``) is the plugin's (``document`` of entries)."""
    from shapetrace.drive.check import check_target
    from shapetrace.frontends.demo import JumbledSelfAttention

    result = check_target(JumbledSelfAttention, target="jumbled")
    exporter = EXPORTERS["html"]
    assert exporter.export(Report([result])) == exporter.document([exporter.entry(result)])


@pytest.mark.parametrize("name", [pytest.param("Attention", id="softmax"),
                                  pytest.param("Jumbled", id="sdpa-is-causal")])
def test_kept_head_is_causal_attention_weights(name):
    """``record.heads.head_weights``: one head's weights, rows summing to 1, the future exactly 0."""
    import sys

    from html_pages import ROOT
    from shapetrace.drive.check import check_target

    sys.path.insert(0, str(ROOT / "tests" / "data" / "html"))
    try:
        import models
    finally:
        sys.path.pop(0)
    result = check_target(getattr(models, name), behaviour=False)
    (weights,) = result.trace.head_weights.values()
    assert len(weights) == 7 and all(len(row) == 7 for row in weights)
    assert all(abs(sum(row) - 1) < 1e-3 for row in weights)
    assert all(weights[r][c] == 0 for r in range(7) for c in range(r + 1, 7))
    assert all(weights[r][c] > 0 for r in range(7) for c in range(r + 1))


def test_demo_is_the_report_page(pages, doms):
    """``python -m shapetrace --format html`` without a target: the report page of the demo's
    two attentions, not the terminal's text in a frame."""
    root = doms["demo"]
    assert root.find_all("pre", "painted") == []
    assert root.find_all("title")[0].text() == "shapetrace report"
    rows = root.find_all("table", "summary")[0].find_all("tbody")[0].find_all("tr")
    assert [[c.text() for c in r.find_all("td")][:2] for r in rows] == [
        ["demo: JumbledSelfAttention (one line wrong)", "failed"],
        ["demo: CausalSelfAttention (correct)", "passed"]]
    buggy, correct = sections(root)
    finding = buggy.find_all("article", "finding")[0]
    assert finding.find_all("a", "rule")[0].text() == "reshape-jumble"
    assert len(finding.find_all("tr", "bad")) == 3  # the q, k and v lines: one mistake
    fixes = [row.text() for row in finding.find_all("tr", "fix")]
    assert len(fixes) == 3
    for name, fix in zip("qkv", fixes):
        assert f"{name}.reshape(B, T, self.n_head, C // self.n_head).transpose(1, 2)" in fix
    for section in (buggy, correct):
        assert len(section.find_all("figure", "heat")) == 1
        assert section.find_all("details", "trace") and section.find_all("table", "modules")


def test_merged_finding_shows_its_modules_and_count(doms):
    """One finding for the same line in twelve modules (``merge_repeats``): the span of modules
    and the count, as the terminal shows them, and the twelve paths."""
    section = sections(doms["stack"])[0]
    jumbles = [f for f in section.find_all("article", "finding")
               if f.find_all("a", "rule")[0].text() == "reshape-jumble"
               and f.find_all("span", "loc")[0].text().endswith(f":{BUGGY_LINE}")]
    assert len(jumbles) == 1
    where = jumbles[0].find_all("p", "module")[0].text()
    assert where == f"in Stack.blocks.0 ... extra.{QUOTED} (12 times)"
    listed = [li.text() for li in jumbles[0].find_all("details", "modules-list")[0].find_all("li")]
    assert listed == [f"Stack.blocks.{i}" for i in range(11)] + [f"Stack.extra.{QUOTED}"]


def test_exception_message_and_quoted_names_are_escaped(pages, doms):
    root = doms["stack"]
    text = root.text()
    assert RAISED in text and QUOTED in text
    assert len(root.find_all("script")) == 1  # the page's own
    assert [b.text() for b in root.find_all("b") if b.text() == "bold"] == []
    assert RAISED not in pages["stack"] and "<script>__pwned" not in pages["stack"]
    assert f"Stack.extra.{QUOTED}" not in pages["stack"]  # quotes escaped in the file


def _iterations(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"x (\d+) (?:iterations|steps)", text)]


def test_loops_fold_in_the_tree_as_on_the_terminal():
    """A traced training loop: the steps and loops the terminal folds (``x 7 steps``) fold in
    the tree, nested the same way; optimizer steps and layer initialisation are one line each."""
    import io
    import sys

    from rich.console import Console

    import shapetrace
    from html_pages import ROOT

    sys.path.insert(0, str(ROOT / "tests" / "data" / "html"))
    try:
        import models
    finally:
        sys.path.pop(0)
    with shapetrace.trace() as t:
        models.train(8)
    out = io.StringIO()
    t.print(console=Console(file=out, width=120, color_system=None))
    terminal = [line.split("┌ ", 1)[1].strip() for line in out.getvalue().splitlines()
                if "┌ " in line]
    assert "x 7 steps, 2 to 8" in terminal  # the first step differs (no gradients to zero yet)
    root = Dom(t._repr_html_()).root
    loops = root.find_all("details", "loop")
    assert [d.find_all("span", "times")[0].text() for d in loops] == terminal
    outer = [d for d in loops if d.find_all("span", "times")[0].text().startswith("x 7 steps")][0]
    assert [d for d in outer.find_all("details", "loop")]  # the layers' loop inside the step's
    calls = [c.find_all("span", "name")[0].text() for c in root.find_all("div", "call")]
    assert "AdamW.step" in calls and "nn.init" in calls
    assert len(root.find_all("div", "op")) < len(t.records) // 5


def test_notebook_shows_the_report_page_with_its_style():
    """``Report._repr_html_`` and ``Trace._repr_html_``: the page's stylesheet and body."""
    import shapetrace
    from shapetrace.drive.check import check_target
    from shapetrace.frontends.demo import JumbledSelfAttention

    report = Report([check_target(JumbledSelfAttention, target="jumbled", behaviour=False)])
    page = EXPORTERS["html"].export(report)
    fragment = report._repr_html_()
    assert fragment.startswith("<style>") and "<!DOCTYPE" not in fragment
    body = page[page.index("<body>") + len("<body>"):page.index("</body>")].strip()
    assert fragment.endswith(body)
    model = JumbledSelfAttention(143, 11)
    import torch

    with shapetrace.trace(model) as t:
        model(torch.randn(5, 7, 143))
    root = Dom(t._repr_html_()).root
    assert root.find_all("style") and root.find_all("table", "summary")
    assert root.find_all("details", "trace") and root.find_all("article", "finding")


def test_plugin_report_of_a_folded_trace_links_findings_to_their_ops():
    """The plugin's report keeps a repeated training step once (``compact_trace``): the tree
    shows it as a loop of its count, and a finding after it still links to its own op."""
    import sys

    import torch

    import shapetrace
    from html_pages import ROOT
    from shapetrace.frontends.pytest_outputs import compact_result

    sys.path.insert(0, str(ROOT / "tests" / "data" / "html"))
    try:
        import models
    finally:
        sys.path.pop(0)
    model = models.Jumbled(143, 11)
    with shapetrace.trace(dims={"B": 5, "T": 7, "H": 11, "d": 13, "C": 143},
                          every_step=True) as t:
        models.train(30)
        model(torch.randn(5, 7, 143))
    result = TargetResult("test_x", dims=t.dims.as_dict(), diagnostics=t.diagnostics, trace=t)
    compact = compact_result(result)
    assert len(compact.trace.records) < len(t.records) // 5
    exporter = EXPORTERS["html"]
    root = Dom(exporter.document([exporter.entry(compact, test="test_x")])).root
    loops = [s.text() for s in root.find_all("span", "times")]
    assert [text for text in loops if text.startswith("x 29 iterations")]
    jumble = [f for f in root.find_all("article", "finding")
              if f.find_all("a", "rule")[0].text() == "reshape-jumble"][0]
    target = jumble.find_all("span", "loc")[0].find_all("a")[0].attrs["href"][1:]
    op = [e for e in root.iter() if e.attrs.get("id") == target][0]
    assert op.find_all("span", "ln")[0].text() == str(BUGGY_LINE)
    assert "q.reshape(B, self.n_head, T, C // self.n_head)" in op.text()
