"""The report as one self-contained HTML page: summary, findings, pictures, trace, modules.

The page is made from entries (``Exporter.entry``: a result's JSON plus ``html`` extras), so
the command line, the pytest plugin (entries from xdist workers) and a notebook get the same
page. No network: styles and the one small script are inline. Every piece of user text goes
through ``esc``.
"""

from __future__ import annotations

import hashlib
import json
import re

from ...base.diagnostics import module_span
from ..findings import unchecked_text
from .pictures import grid_svg, heatmap_svg
from .style import SCRIPT, STYLE
from .text import esc, message_html, prose_html, shape_html
from .tree import trace_tree

TITLE = "shapetrace report"
SEVERITIES = ("error", "warning", "info")
MAX_FIGURES = 12  # heatmaps per target
MAX_MODULES = 100  # module paths listed under a finding merged across repeated modules


class _Ids:
    """Anchors of one target's section, unique in the page and between pages (a notebook
    shows several): a prefix made from the page's content."""

    def __init__(self, prefix: str, target: int, diagnostics: list[dict]):
        self.base = f"{prefix}t{target}"
        self.section = self.base
        self.shown: set[int] = set()
        self._findings: dict[int, str] = {}
        for j, d in enumerate(diagnostics):
            index = (d.get("data") or {}).get("index")
            if isinstance(index, int):
                self._findings.setdefault(index, self.finding(j))

    def finding(self, j: int) -> str:
        return f"{self.base}-f{j}"

    def op(self, index: int) -> str:
        return f"{self.base}-op{index}"

    def finding_of(self, index: int) -> str | None:
        return self._findings.get(index)


def _counts(entry: dict) -> dict[str, int]:
    return {s: sum(1 for d in entry.get("diagnostics", ()) if d.get("severity") == s)
            for s in SEVERITIES}


def _verdict(entry: dict) -> tuple[str, str]:
    if entry.get("error"):
        return "broken", "could not run"
    return ("passed", "passed") if entry.get("ok") else ("failed", "failed")


def _summary_line(entries: list[dict]) -> str:
    failed = sum(1 for e in entries if not e["ok"])
    return (f"{len(entries)} checked: {failed} failed, {len(entries) - failed} passed"
            if entries else "nothing was checked")


def heading(entry: dict) -> str:
    """The test and the target, once when one names the other, and how it went."""
    test, target = entry.get("test") or "", entry["target"]
    if not test or target.startswith(test):
        title = target
    elif test.endswith(target):
        title = test
    else:
        title = f"{test} \N{EM DASH} {target}"
    return f"{title} ({'passed' if entry['ok'] else 'failed'})"


def _seconds(value) -> str:
    if not isinstance(value, (int, float)):
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"


def _summary_table(order: list[tuple[int, dict]], prefix: str) -> str:
    rows = []
    for i, e in order:
        cls, word = _verdict(e)
        counts = _counts(e)
        cells = "".join(f'<td class="num{" " + s if counts[s] else ""}">{counts[s]}</td>'
                        for s in SEVERITIES)
        seconds = _seconds((e.get("_html") or {}).get("seconds"))
        rows.append(f'<tr class="{cls}"><td><a href="#{prefix}t{i}">{esc(_title(e))}</a>'
                    f'</td><td><span class="verdict {cls}">{word}</span></td>{cells}'
                    f'<td class="num">{seconds}</td></tr>')
    heads = "".join(f'<th class="num" title="{word}"><span class="wide">{word}</span>'
                    f'<span class="narrow">{short}</span></th>'
                    for word, short in (("errors", "✗"), ("warnings", "!"), ("info", "i")))
    return ('<div class="scroll"><table class="summary"><thead><tr><th>target</th><th>verdict</th>'
            f'{heads}<th class="num">time</th></tr></thead><tbody>{"".join(rows)}</tbody>'
            '</table></div>')


def _title(entry: dict) -> str:
    text = heading(entry)
    return text[:text.rindex(" (")]


def _source_html(d: dict, sources: dict) -> str:
    key = f"{d.get('file')}:{d.get('line')}"
    found = sources.get(key)
    if not found:
        return ""
    data = d.get("data") or {}
    fixes: dict[int, str] = {}  # line -> the whole new line (``Fix.data()``), for each it replaces
    for fix in data.get("fixes") or [data.get("fix") or data.get("corrected")]:
        if isinstance(fix, dict) and isinstance(fix.get("text"), str):
            fixes[fix.get("line", d.get("line"))] = fix["text"]
        elif isinstance(fix, str):
            fixes[d.get("line")] = fix
    flagged = set(d.get("lines") or [d.get("line")])
    rows = []
    for n, text in enumerate(found["lines"], start=found["start"]):
        bad = n in flagged
        fixed = n in fixes
        mark = "−" if fixed else ("✗" if bad else "")
        rows.append(f'<tr class="{"bad" if bad or fixed else ""}"><td class="n">{n}</td>'
                    f'<td class="mk">{mark}</td><td><code>{esc(text)}</code></td></tr>')
        if fixed:
            fix = fixes[n]
            indent = text[:len(text) - len(text.lstrip())]
            shown = fix if fix.startswith((" ", "\t")) else indent + fix
            rows.append(f'<tr class="fix"><td class="n"></td><td class="mk">+</td>'
                        f'<td><code>{esc(shown)}</code></td></tr>')
    return f'<div class="scroll"><table class="source">{"".join(rows)}</table></div>'


def _finding_html(d: dict, j: int, ids: _Ids, sources: dict, prefix: str) -> str:
    severity = d.get("severity", "info")
    rule = d.get("rule", "")
    code = d.get("code") or ""
    data = d.get("data") or {}
    index = data.get("index")
    lines = ", ".join(str(n) for n in d.get("lines") or [d.get("line")] if n)
    where = esc(f"{d['file']}:{lines}" if d.get("file") and lines else d.get("file") or "")
    if where and isinstance(index, int) and index in ids.shown:
        where = f'<a href="#{ids.op(index)}">{where}</a>'
    parts = [f'<article class="finding {esc(severity)}" id="{ids.finding(j)}"><header>'
             f'<span class="sev {esc(severity)}">{esc(severity)}</span> '
             f'<a class="rule" href="#{prefix}rule-{esc(rule)}" '
             f'title="docs/rules.md#{esc(rule)}">{esc(rule)}</a>'
             + (f' <code class="code">{esc(code)}</code>' if code else "")
             + (f' <span class="loc">{where}</span>' if where else "")
             + "</header>",
             f'<p class="message">{message_html(d.get("message", ""))}</p>']
    if d.get("hint"):
        parts.append(f'<p class="hint"><b>hint:</b> {message_html(d["hint"])}</p>')
    parts.append(_source_html(d, sources))
    parts.append(_where_html(d))
    if isinstance(data.get("grid"), dict):
        parts.append(f'<figure class="grid">{grid_svg(data["grid"])}<figcaption>'
                     f'<span class="key used"></span> used <span class="key unused"></span> '
                     f'unused <span class="key leak"></span> leak</figcaption></figure>')
    parts.append("</article>")
    return "".join(parts)


def _where_html(d: dict) -> str:
    """The module path, and for a finding merged across repeated modules (``merge_repeats``)
    how often and where: ``in Model.blocks.0 ... blocks.11.attn (12 times)``."""
    modules = [m for m in d.get("modules") or () if isinstance(m, str)]
    span = module_span(modules) or d.get("module") or ""
    count = d.get("count") if isinstance(d.get("count"), int) else 1
    if not span:
        return ""
    times = f' <span class="times">({count} times)</span>' if count > 1 else ""
    listed = ""
    if len(modules) > 2:
        shown = modules[:MAX_MODULES]
        more = (f"<li>… and {len(modules) - MAX_MODULES} more</li>"
                if len(modules) > MAX_MODULES else "")
        listed = (f'<details class="modules-list"><summary>{len(modules)} modules</summary>'
                  f'<ul>{"".join(f"<li><code>{esc(m)}</code></li>" for m in shown)}{more}</ul>'
                  '</details>')
    return f'<p class="module">in <code>{esc(span)}</code>{times}</p>{listed}'


_NUMBERED = re.compile(r"\.\d+(?=\.|$)")


def _heads_html(heads: list[dict], ids: _Ids) -> str:
    """A heatmap per attention written in the code: the attentions of repeated blocks
    (``blocks.0.attn`` ... ``blocks.95.attn``, same line) show once, with their count."""
    if not heads:
        return ""
    groups: dict[tuple, list[dict]] = {}
    for h in heads:
        key = (h.get("file"), h.get("line"), _NUMBERED.sub(".N", h.get("module") or ""))
        groups.setdefault(key, []).append(h)
    figures = []
    for same in list(groups.values())[:MAX_FIGURES]:
        h = same[0]
        where = esc(f"{h.get('file')}:{h.get('line')}" if h.get("file") else h.get("op", ""))
        if h["index"] in ids.shown:
            where = f'<a href="#{ids.op(h["index"])}">{where}</a>'
        more = f" (and {len(same) - 1} more like it)" if len(same) > 1 else ""
        figures.append(f'<figure class="heat">{heatmap_svg(h["weights"], h["rows"], h["cols"])}'
                       f'<figcaption><code>{esc(h.get("module") or "")}</code>{more} {where}'
                       f'</figcaption></figure>')
    more = (f'<p class="muted">and {len(groups) - MAX_FIGURES} more attentions</p>'
            if len(groups) > MAX_FIGURES else "")
    return ('<section class="heads"><h3>Attention weights</h3><p class="muted">One head of '
            'sample 0 at the probe sizes: rows are queries, columns keys; darker is more '
            'weight, hatched is masked out (exactly 0). Hover a cell for its value.</p>'
            f'<div class="figures">{"".join(figures)}</div>{more}</section>')


def _modules_html(modules: list[dict]) -> str:
    if not modules:
        return ""
    rows = []
    for m in modules:
        output = shape_html(m["output"]) if m.get("output") else "—"
        rows.append(f'<tr><td style="padding-left:{0.3 + m["depth"] * 1.1:.1f}em">'
                    f'<code>{esc(m["path"].rpartition(".")[2] if m["depth"] else m["path"])}'
                    f'</code> <span class="muted">{esc(m["type"])}</span></td>'
                    f'<td>{output}</td><td class="num">{m["params"]:,}</td></tr>')
    total = modules[0]["params"] if modules[0]["depth"] == 0 else sum(
        m["params"] for m in modules if m["depth"] == 1)
    return ('<details class="modules"><summary>Modules and parameters</summary>'
            '<div class="scroll"><table class="modules"><thead><tr><th>module</th>'
            '<th title="the shape of the last op the module ran">output</th>'
            f'<th class="num">parameters</th></tr></thead><tbody>{"".join(rows)}</tbody>'
            f'<tfoot><tr><td>total</td><td></td><td class="num">{total:,}</td></tr></tfoot>'
            '</table></div></details>')


def _section(i: int, e: dict, prefix: str, *, show_trace: bool, max_ops: int | None) -> str:
    cls, _ = _verdict(e)
    extras = e.get("_html") or {}
    diagnostics = e.get("diagnostics") or []
    ids = _Ids(prefix, i, diagnostics)
    flagged: dict[int, str] = {}
    for d in diagnostics:
        index = (d.get("data") or {}).get("index")
        if isinstance(index, int) and (index not in flagged or d.get("severity") == "error"):
            flagged[index] = d.get("severity", "info")
    trace = e.get("trace") or []
    tree = ""
    if show_trace and trace:
        body, ids.shown = trace_tree(trace, flagged, ids, clean=bool(e["ok"] and not diagnostics),
                                     max_ops=max_ops, extras=extras)
        tree = (f'<details class="trace"{" open" if diagnostics else ""}><summary>Trace '
                f'({len(trace)} ops)</summary><div class="tree">{body}</div></details>')
    dims = " ".join(f'{shape_html(k)}<span class="muted">={esc(v)}</span>'
                    for k, v in (e.get("dims") or {}).items())
    parts = [f'<section class="target {cls}" id="{ids.section}">',
             f'<h2><span class="verdict {cls}">{esc(_verdict(e)[1])}</span> {esc(heading(e))}</h2>']
    if dims and not e.get("error"):
        parts.append(f'<p class="dims">probe sizes: {dims}</p>')
    if e.get("error"):
        parts.append(f'<p class="broken-why">✗ could not run: {esc(e["error"])}</p>')
    if diagnostics:
        parts.append('<div class="findings">' + "".join(
            _finding_html(d, j, ids, extras.get("sources") or {}, prefix)
            for j, d in enumerate(diagnostics)) + "</div>")
    unchecked = [c["check"] for c in (e.get("checks") or {}).get("skipped", ())
                 if c.get("internal_error")]
    if unchecked and not e.get("error"):
        lead = "" if diagnostics else "! no problems found by the checks that ran; "
        parts.append(f'<p class="broken-why">{lead}{esc(unchecked_text(unchecked))}</p>')
    elif not diagnostics and not e.get("error"):
        parts.append('<p class="clean">✓ no problems found</p>')
    for key, label in (("skipped", "skipped (no values under --fake): "),):
        if e.get(key):
            parts.append(f'<p class="muted">{label}{esc(", ".join(e[key]))}</p>')
    for note in e.get("notes") or ():
        parts.append(f'<p class="muted">note: {esc(note)}</p>')
    parts.append(_heads_html(extras.get("heads") or [], ids))
    parts.append(tree)
    if show_trace:
        parts.append(_modules_html(extras.get("modules") or []))
    parts.append("</section>")
    return "".join(parts)


def _rule_article(r, prefix: str) -> str:
    return (f'<article class="ruledoc" id="{prefix}rule-{esc(r.name)}"><h3>'
            f'{esc(r.name)} <code class="code">{esc(r.code)}</code> '
            f'<span class="sev {esc(r.severity)}">{esc(r.severity)}</span></h3>'
            f'<p class="muted">{message_html(r.summary)} · docs/rules.md#{esc(r.name)}</p>'
            f'{prose_html(r.explanation)}<div class="pair"><div><b>Wrong</b>'
            f'<pre><code>{esc(r.wrong)}</code></pre></div><div><b>Right</b>'
            f'<pre><code>{esc(r.right)}</code></pre></div></div></article>')


def _rules_html(entries: list[dict], prefix: str) -> str:
    from ...rules.registry import RULES

    used = {d.get("rule") for e in entries for d in e.get("diagnostics") or ()}
    shown = [r for name, r in RULES.items() if name in used]
    if not shown:
        return ""
    items = "".join(_rule_article(r, prefix) for r in shown)
    return f'<section class="rules"><h2>Rules in this report</h2>{items}</section>'


def rules_page(rules, title: str = "shapetrace rules") -> str:
    """Every rule on one page (``--rules --format html``): a table of codes, names, severities
    and summaries, each linked to its explanation with a wrong and a right example."""
    rules = list(rules)
    rows = "".join(f'<tr><td><code class="code">{esc(r.code)}</code></td>'
                   f'<td><a href="#rule-{esc(r.name)}">{esc(r.name)}</a></td>'
                   f'<td><span class="sev {esc(r.severity)}">{esc(r.severity)}</span></td>'
                   f'<td>{message_html(r.summary)}</td></tr>' for r in rules)
    table = (f'<table class="summary"><thead><tr><th>code</th><th>rule</th><th>severity</th>'
             f'<th>what it finds</th></tr></thead><tbody>{rows}</tbody></table>')
    articles = "".join(_rule_article(r, "") for r in rules)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"UTF-8\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
            f'<body>\n<div class="st">\n<header class="top"><h1>{esc(title)}</h1>'
            f'<p class="summary-line">{len(rules)} rules</p></header>\n<main>{table}'
            f'<section class="rules">{articles}</section></main>\n</div>\n</body>\n</html>\n')


def html_page(entries: list[dict], *, show_trace: bool = True, max_ops: int | None = None,
              title: str = TITLE) -> str:
    """The page for entries made by ``Exporter.entry``, failures first."""
    digest = hashlib.sha1(json.dumps([(e.get("test"), e.get("target"), e.get("ok"),
                                       len(e.get("trace") or ()),
                                       [d.get("message") for d in e.get("diagnostics") or ()])
                                      for e in entries]).encode()).hexdigest()[:6]
    prefix = f"st{digest}-"
    order = sorted(enumerate(entries), key=lambda item: item[1].get("ok", False))
    sections = "".join(_section(i, e, prefix, show_trace=show_trace, max_ops=max_ops)
                       for i, e in order)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"UTF-8\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
            f'<body>\n<div class="st">\n<header class="top"><h1>{esc(title)}</h1>'
            f'<p class="summary-line">{esc(_summary_line(entries))}</p></header>\n'
            f"{_summary_table(order, prefix) if entries else ''}\n<main>{sections}</main>\n"
            f"{_rules_html(entries, prefix)}\n</div>\n<script>{SCRIPT}</script>\n</body>\n</html>\n")


def shell(body: str, title: str = TITLE) -> str:
    """Any painted text (the demo, the rules table) in the page's frame and colours."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"UTF-8\">\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
            f'<body>\n<div class="st">\n<header class="top"><h1>{esc(title)}</h1></header>\n'
            f'<pre class="painted">{body}</pre>\n</div>\n</body>\n</html>\n')
