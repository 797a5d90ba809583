"""The page's stylesheet and its one script, inline (the page is opened offline).

Everything is scoped under ``.st`` so that the page can sit inside a notebook's output without
restyling the notebook. Light and dark follow ``prefers-color-scheme``; dim names have the
terminal's colours (``c-blue`` is rich's ``blue``); print opens every fold.
"""

_LIGHT = """
--fg:#1f2328;--bg:#ffffff;--muted:#59636e;--line:#d1d9e0;--panel:#f6f8fa;--link:#0757c4;
--error:#c4221f;--warning:#8a5a00;--info:#0757c4;--ok:#17733a;--badbg:#ffebe9;--fixbg:#dafbe1;
--heat:#0757c4;--masked:#d1d9e0;--used:#2f9e55;--leak:#d1242f;
--c-blue:#0550ae;--c-green:#116329;--c-bright_green:#2e9b4b;--c-magenta:#a0148e;
--c-yellow:#866200;--c-cyan:#0b6e7f;--c-red:#c42b1c;--c-bright_blue:#2f6fe0;
--c-bright_magenta:#c2307a;--c-bright_cyan:#0a8aa8;--c-bright_yellow:#9f7a00;
--c-bright_red:#d9480f;--c-dim:#6e7781;"""

_DARK = """
--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;--panel:#151b23;--link:#58a6ff;
--error:#ff7b72;--warning:#d29922;--info:#58a6ff;--ok:#3fb950;--badbg:#3c1618;--fixbg:#12261e;
--heat:#58a6ff;--masked:#3d444d;--used:#3fb950;--leak:#ff7b72;
--c-blue:#6cb6ff;--c-green:#57ab5a;--c-bright_green:#8ddb8c;--c-magenta:#dcbdfb;
--c-yellow:#daaa3f;--c-cyan:#39c5cf;--c-red:#f47067;--c-bright_blue:#96d0ff;
--c-bright_magenta:#f69ad9;--c-bright_cyan:#76e3ea;--c-bright_yellow:#eac55f;
--c-bright_red:#ff938a;--c-dim:#768390;"""

_COLOURS = ("blue", "green", "bright_green", "magenta", "yellow", "cyan", "red", "bright_blue",
            "bright_magenta", "bright_cyan", "bright_yellow", "bright_red", "dim")

STYLE = (
    "html:has(> body > .st){background:#fff}\n"
    ".st{" + _LIGHT + "}\n"
    "@media (prefers-color-scheme: dark){.st{" + _DARK + "}"
    " html:has(> body > .st){background:#0d1117}}\n"
    + "".join(f".st .c-{c}{{color:var(--c-{c});font-weight:600}}" for c in _COLOURS[:-1])
    + ".st .c-dim{color:var(--c-dim)}\n"
    + """
body:has(> .st){margin:0}
.st{color:var(--fg);background:var(--bg);font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;
 padding:1.2em clamp(.6em,3vw,2.5em);max-width:1400px;margin:0 auto;overflow-wrap:anywhere}
.st a{color:var(--link)}
.st code,.st pre,.st .op,.st .shape{font-family:ui-monospace,Menlo,'DejaVu Sans Mono',Consolas,monospace;font-size:13px}
.st h1{font-size:1.5em;margin:.2em 0}
.st h2{font-size:1.15em;margin:1.6em 0 .5em;border-bottom:1px solid var(--line);padding-bottom:.3em}
.st h3{font-size:1em;margin:1em 0 .4em}
.st .muted,.st .mpath,.st .count{color:var(--muted)}
.st .scroll{overflow-x:auto;max-width:100%}
.st table{border-collapse:collapse}
.st th,.st td{text-align:left;padding:.3em .7em;border-bottom:1px solid var(--line);vertical-align:top}
.st th{font-weight:600;background:var(--panel)}
.st .num{text-align:right;font-variant-numeric:tabular-nums}
.st td.error{color:var(--error);font-weight:700}.st td.warning{color:var(--warning);font-weight:700}
.st td.info{color:var(--info)}
.st table.summary th,.st table.summary td.num{white-space:nowrap;overflow-wrap:normal}
.st .narrow{display:none}
.st .verdict{white-space:nowrap;display:inline-block;padding:0 .5em;border-radius:1em;font-size:.85em;font-weight:600;
 border:1px solid currentColor}
.st .verdict.failed,.st .verdict.broken{color:var(--error)}.st .verdict.passed{color:var(--ok)}
.st .sev{font-weight:700}.st .sev.error{color:var(--error)}.st .sev.warning{color:var(--warning)}
.st .sev.info{color:var(--info)}
.st .finding{border:1px solid var(--line);border-left:4px solid var(--info);border-radius:6px;
 padding:.6em .9em;margin:.8em 0;background:var(--bg)}
.st .finding.error{border-left-color:var(--error)}.st .finding.warning{border-left-color:var(--warning)}
.st .finding header{display:flex;flex-wrap:wrap;gap:.3em .6em;align-items:baseline}
.st .finding .rule{font-weight:700}
.st .code{color:var(--muted)}
.st .message,.st .hint,.st .module{margin:.4em 0}
.st .hint b{color:var(--ok)}
.st table.source{width:100%;background:var(--panel);border-radius:4px;margin:.4em 0}
.st table.source td{border:0;padding:0 .5em}
.st table.source code{white-space:pre-wrap;word-break:break-word}
.st table.source td:last-child{width:100%}
.st table.source .n{color:var(--muted);text-align:right;width:1%;white-space:nowrap;user-select:none}
.st table.source .mk{width:1%;white-space:nowrap;color:var(--error);font-weight:700}
.st table.source tr.bad{background:var(--badbg)}
.st table.source tr.fix{background:var(--fixbg)}.st table.source tr.fix .mk{color:var(--ok)}
.st .clean{color:var(--ok);font-weight:600}
.st .broken-why{color:var(--error);font-weight:600}
.st details>summary{cursor:pointer}
.st details.trace,.st details.modules{margin:.8em 0;border:1px solid var(--line);border-radius:6px;
 padding:.4em .7em}
.st details.trace>summary,.st details.modules>summary{font-weight:600}
.st details.mod{margin-left:1em;border-left:1px dotted var(--line);padding-left:.5em}
.st .tree>details.mod{margin-left:0}
.st details.loop{margin:.1em 0 .1em 1em;border-left:2px solid var(--muted);padding-left:.5em}
.st .tree>details.loop{margin-left:0}
.st .times{font-weight:600}
.st .mname{font-weight:600}
.st .badge{color:var(--error);font-size:.85em;font-weight:600}
.st .op{display:flex;flex-wrap:wrap;gap:0 .8em;padding:.05em 0 .05em 1em;align-items:baseline}
.st .op .mk{width:1em;margin-left:-1em;font-weight:700;text-decoration:none}
.st .op.error{background:var(--badbg)}.st .op.error .mk{color:var(--error)}
.st .op.warning .mk{color:var(--warning)}
.st .op .ln{color:var(--muted);min-width:3ch;text-align:right}
.st .op .name{font-weight:600;min-width:16ch}
.st .op .io{min-width:20ch}
.st .op .src{color:var(--muted);font-style:italic;white-space:pre-wrap;flex:1 1 18em}
.st .raised{color:var(--error)}
.st .fold{color:var(--muted);padding-left:1em;font-style:italic}
.st .figures{display:flex;flex-wrap:wrap;gap:1em}
.st figure{margin:.5em 0}
.st figcaption{font-size:.85em;color:var(--muted);max-width:22em}
.st svg.pic{max-width:100%;height:auto}
.st svg.pic text{fill:var(--muted);font:10px ui-monospace,monospace}
.st svg.pic rect.w{fill:var(--heat)}
.st svg.pic rect.masked{fill:var(--masked);fill-opacity:.45;stroke:var(--masked);stroke-width:1}
.st svg.pic .hatch{stroke:var(--muted);stroke-width:1}
.st svg.pic rect.nan{fill:var(--error)}
.st svg.pic rect.used{fill:var(--used)}.st svg.pic rect.unused{fill:var(--masked);fill-opacity:.35}
.st svg.pic rect.leak{fill:var(--leak)}.st svg.pic .cross{stroke:#fff;stroke-width:1.5}
.st .key{display:inline-block;width:.8em;height:.8em;vertical-align:middle}
.st .key.used{background:var(--used)}.st .key.unused{background:var(--masked)}
.st .key.leak{background:var(--leak)}
.st .pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(18em,1fr));gap:.8em}
.st pre{background:var(--panel);padding:.5em .7em;border-radius:4px;white-space:pre-wrap;margin:.3em 0}
.st pre.painted{background:none;padding:0}
.st .rules{margin-top:2.5em}
.st .ruledoc{border-top:1px solid var(--line);padding-top:.3em}
@media (max-width:640px){.st{font-size:14px}.st .wide{display:none}.st .narrow{display:inline}.st .op .name{min-width:0}.st .op .io{min-width:0}
 .st th,.st td{padding:.25em .4em}}
@media print{.st{max-width:none;padding:0;font-size:11px}
 .st,.st *{background:#fff !important;color:#000 !important}
 .st .finding,.st section.target{break-inside:avoid-page}
 .st svg.pic rect.w{fill:#333}.st a{text-decoration:none}
 .st details>summary{list-style:none}}
""")

#: Opens the folds around the element an anchor points to (a finding, an op), and every fold
#: while printing, closing them again afterwards.
SCRIPT = """
(function(){
function openTo(){var id=decodeURIComponent(location.hash.slice(1));
 var el=id?document.getElementById(id):null;
 for(;el;el=el.parentElement){if(el.tagName==='DETAILS'){el.open=true;}}}
var closed=[];
addEventListener('hashchange',openTo);
addEventListener('beforeprint',function(){closed=[].slice.call(
 document.querySelectorAll('.st details:not([open])'));closed.forEach(function(d){d.open=true;});});
addEventListener('afterprint',function(){closed.forEach(function(d){d.open=false;});closed=[];});
document.addEventListener('click',function(ev){var a=ev.target.closest&&ev.target.closest('a[href^="#"]');
 if(a){setTimeout(openTo,0);}});
openTo();
})();
"""
