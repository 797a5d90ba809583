"""The HTML report in a real browser: Debian's ``chromium``, headless.

Each page gets two small scripts (one first in ``<head>`` that records script errors, one at
the end that reads the rendered DOM on ``load`` and writes what it found into a ``<pre>``), and
``chromium --dump-dom`` prints the DOM back. Skips only where chromium is missing and cannot be
installed (``.ci/run`` installs it with apt-get).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from html_pages import NASTY, QUOTED, RAISED, make_pages
from test_pytest_plugin import BUGGY_TARGET, FIXED_TARGET, make_project, run

pytest_plugins = ["pytester"]

_FIRST = ('<script>window.__errors=[];addEventListener("error",function(e){'
          '__errors.push(String(e.message||e));});</script>')
_CHECK = """<script>addEventListener("load",function(){
var q=function(s){return [].slice.call(document.querySelectorAll(s));};
var r={errors:window.__errors,pwned:typeof __pwned!=="undefined",images:q("img").length,
 scripts:q("script").length,
 rows:q("table.summary tbody tr").map(function(tr){return [].map.call(tr.cells,function(c){
  return c.textContent;});}),
 unresolved:q('a[href^="#"]').map(function(a){return a.getAttribute("href");})
  .filter(function(h){return !document.getElementById(decodeURIComponent(h.slice(1)));}),
 heatmaps:q("figure.heat svg").map(function(s){return s.querySelectorAll("rect").length;}),
 heatmapWidth:q("figure.heat svg").map(function(s){return s.getBoundingClientRect().width;}),
 text:document.querySelector(".st").textContent,
 background:getComputedStyle(document.querySelector(".st")).backgroundColor,
 scrollWidth:document.documentElement.scrollWidth,innerWidth:innerWidth,
 target:location.hash.slice(1),
 loops:q("details.loop > summary .times").map(function(s){return s.textContent;}),
 closed:q(".st details:not([open])").length,
 color:getComputedStyle(document.querySelector(".st")).color,
 printHidden:q(".st section.target").filter(function(s){return !s.offsetHeight;}).length,
 targetOpen:(function(){var el=document.getElementById(decodeURIComponent(location.hash.slice(1)));
  var all=true;for(;el;el=el.parentElement){if(el.tagName==="DETAILS"&&!el.open){all=false;}}
  return all;})()};
var pre=document.createElement("pre");pre.id="st-check";pre.textContent=JSON.stringify(r);
document.body.appendChild(pre);});</script>"""


#: Print preview without a printer: the ``@media print`` rules made to apply on screen, and the
#: ``beforeprint`` event the page listens to, before the check script reads the page.
_PRINT = """<script>addEventListener("load",function(){
[].forEach.call(document.styleSheets,function(sheet){[].forEach.call(sheet.cssRules,function(r){
 if(r.media&&r.media.mediaText==="print"){r.media.mediaText="all";}});});
dispatchEvent(new Event("beforeprint"));});</script>"""


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    found = _chromium()
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run("apt-get update -qq && apt-get install -y -qq chromium", shell=True,
                       capture_output=True, timeout=900)
        found = _chromium()
    if found is None:
        pytest.skip("chromium is not installed and could not be installed here (needs apt-get "
                    "as root: `apt-get install chromium`, as .ci/run does)")
    return found


def browse(chromium: str, page: str, folder: Path, *, fragment: str = "", width: int = 1400,
           dark: bool = False, printed: bool = False) -> dict:
    """What the check script saw in the rendered page (``printed``: as it prints)."""
    checks = (_PRINT if printed else "") + _CHECK
    page = page.replace("<head>", "<head>" + _FIRST, 1).replace("</body>", checks + "</body>")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "page.html"
    path.write_text(page, encoding="utf-8")
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={folder / 'profile'}", f"--window-size={width},900",
            "--virtual-time-budget=3000", "--dump-dom", path.as_uri() + fragment]
    if dark:
        args.insert(2, "--force-dark-mode")
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    out = done.stdout
    found = re.search(r'<pre id="st-check">(.*?)</pre>', out, re.S)
    assert found, f"the check script did not run: {out[-300:]} {done.stderr[-300:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return make_pages(tmp_path_factory.mktemp("pages"))


@pytest.mark.parametrize(("name", "verdicts", "heatmaps"), [
    pytest.param("clean", ["passed"], 1, id="cli-clean"),
    pytest.param("buggy", ["failed", "passed"], 2, id="cli-buggy"),
    pytest.param("deep", ["passed"], 1, id="96-layers-folded"),
    pytest.param("demo", ["failed", "passed"], 2, id="cli-demo"),
    pytest.param("stack", ["failed", "failed"], 2, id="merged-and-raised"),
    pytest.param("loop", ["passed"], 0, id="notebook-training-loop"),
])
def test_page_renders(chromium, pages, tmp_path, name, verdicts, heatmaps):
    seen = browse(chromium, pages[name], tmp_path)
    assert seen["errors"] == []
    assert seen["unresolved"] == []
    assert [r[1] for r in seen["rows"]] == verdicts
    assert len(seen["heatmaps"]) == heatmaps and all(n == 49 for n in seen["heatmaps"])  # 7 x 7
    assert all(w > 50 for w in seen["heatmapWidth"])
    assert seen["images"] == 0 and seen["scripts"] == 3  # the page's one and the two checks
    assert not seen["pwned"]


def test_loops_fold_in_the_browser(chromium, pages, tmp_path):
    seen = browse(chromium, pages["loop"], tmp_path)
    assert any(text.startswith("x 7 steps, 2 to 8") for text in seen["loops"])
    assert any(text.startswith("x 3 iterations") for text in seen["loops"])
    assert seen["errors"] == []


def test_user_text_shows_as_text(chromium, pages, tmp_path):
    seen = browse(chromium, pages["buggy"], tmp_path)
    assert NASTY in seen["text"] and "</code><script>__pwned=2</script>" in seen["text"]
    assert seen["images"] == 0 and not seen["pwned"] and seen["errors"] == []


def test_exception_messages_and_quoted_keys_show_as_text(chromium, pages, tmp_path):
    seen = browse(chromium, pages["stack"], tmp_path)
    assert RAISED in seen["text"] and f"Stack.extra.{QUOTED}" in seen["text"]
    assert seen["scripts"] == 3 and not seen["pwned"] and seen["errors"] == []


@pytest.mark.parametrize("name", ["buggy", "demo", "loop"])
def test_prints_with_every_fold_open_in_black_on_white(chromium, pages, tmp_path, name):
    seen = browse(chromium, pages[name], tmp_path, printed=True)
    assert seen["closed"] == 0 and seen["printHidden"] == 0
    assert seen["color"] == "rgb(0, 0, 0)" and seen["background"] == "rgb(255, 255, 255)"
    assert seen["errors"] == []


def test_anchor_opens_the_folds_around_it(chromium, pages, tmp_path):
    ids = re.findall(r'<div class="op" id="([^"]+)"', pages["clean"])
    seen = browse(chromium, pages["clean"], tmp_path, fragment=f"#{ids[-1]}")
    assert seen["target"] == ids[-1] and seen["targetOpen"] and seen["errors"] == []


@pytest.mark.parametrize("name", ["buggy", "demo", "stack", "loop"])
@pytest.mark.parametrize("width", [390, 1400])
def test_phone_width_and_dark_scheme(chromium, pages, tmp_path, name, width):
    light = browse(chromium, pages[name], tmp_path / "light", width=width)
    dark = browse(chromium, pages[name], tmp_path / "dark", width=width, dark=True)
    for seen in (light, dark):
        assert seen["scrollWidth"] <= seen["innerWidth"]  # nothing wider than the phone
        assert seen["errors"] == []
    assert light["background"] == "rgb(255, 255, 255)"
    assert dark["background"] != light["background"]


TRAINING_TEST = """
import pytest
import torch

from student.fixed import Attention


@pytest.mark.shapetrace
def test_training():
    model = Attention(143, 11)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(30):
        loss = model(torch.randn(5, 7, 143)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_plugin_report_renders(chromium, pytester, tmp_path):
    """Targets and a traced training test: the test's steps fold into one loop, and its
    attention has a heatmap as the targets' have."""
    make_project(pytester, tests=TRAINING_TEST)
    run(pytester, "--shapetrace-report=report.html")
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    seen = browse(chromium, page, tmp_path)
    assert seen["errors"] == [] and seen["unresolved"] == []
    assert [r[0] for r in seen["rows"]] == [BUGGY_TARGET, FIXED_TARGET,
                                            "test_course.py::test_training"]
    assert [r[1] for r in seen["rows"]] == ["failed", "passed", "passed"]
    assert len(seen["heatmaps"]) == 3 and all(n == 49 for n in seen["heatmaps"])
    assert [t for t in seen["loops"] if re.match(r"x 29 iterations", t)]
