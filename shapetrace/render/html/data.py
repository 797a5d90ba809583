"""What the HTML page needs beyond a result's JSON, gathered where the result lives.

Under pytest-xdist the page is written by the controller from plain data that the workers sent,
so everything that needs the live result (the user's source files, the model's parameters, the
attention weights the check kept) is read here, into JSON-able data: an entry's ``html`` key.
"""

from __future__ import annotations

import linecache

#: Lines of the user's source shown before and after the line of a finding.
CONTEXT = 2


def html_extras(result) -> dict:
    """``seconds``, ``sources`` (the lines around each finding), ``heads`` (one head of each
    attention's weights) and ``modules`` (a torchinfo-like table) for one result."""
    out: dict = {"seconds": result.seconds, "sources": _sources(result.diagnostics),
                 "heads": [], "modules": []}
    trace = result.trace
    if trace is not None:
        out.update(_folding(trace))
        try:
            analysis = trace._analyse()
        except Exception:  # noqa: BLE001 - a trace that cannot be analysed still has a page
            return out
        out["heads"] = _heads(trace, analysis)
        out["modules"] = _modules(trace, analysis)
    return out


def _folding(trace) -> dict:
    """What the trace tree needs to fold as the terminal does, beyond the trace's JSON: the
    records' indices where the trace is a view of some of them (the plugin's report keeps a
    repeated step once: ``repeats``, ``[first index, ops, times run]``), the optimizer steps
    (``spans``) and the ops library code ran (``internal``: a layer's initialisation)."""
    records = trace.records
    out: dict = {}
    if any(rec.index != i for i, rec in enumerate(records)):
        out["indices"] = [rec.index for rec in records]
    kept = {rec.index for rec in records}
    spans = [[s.start, s.end, s.label] for s in getattr(trace, "spans", ())
             if all(i in kept for i in range(s.start, s.end))]
    if spans:
        out["spans"] = spans
    internal = [rec.index for rec in records if rec.internal and not rec.module]
    if internal:
        out["internal"] = internal
    repeats = getattr(trace, "repeats", None)
    if repeats:
        out["repeats"] = [list(r) for r in repeats]
    steps = getattr(trace, "steps", None)
    if steps:
        out["steps"] = [[s.start, s.end, s.first, s.count, s.last, s.rerun] for s in steps]
    return out


def _sources(diagnostics) -> dict:
    sources: dict = {}
    for d in diagnostics:
        if not d.file or not d.line or f"{d.file}:{d.line}" in sources:
            continue
        lines = linecache.getlines(d.file)
        if not 0 < d.line <= len(lines):
            continue
        start = max(1, min(d.lines or [d.line]) - CONTEXT)  # every line of one mistake
        end = max(d.lines or [d.line]) + CONTEXT
        shown = [line.rstrip("\n") for line in lines[start - 1:end]]
        sources[f"{d.file}:{d.line}"] = {"start": start, "lines": shown}
    return sources


def _axis_names(shape: str) -> list[str]:
    return [name.strip() for name in shape.strip("()").split(",") if name.strip()]


def _heads(trace, analysis) -> list[dict]:
    from ...base.ops import SDPA

    kept = getattr(trace, "head_weights", None) or {}
    attentions = {a.softmax.index for a in analysis.attentions}
    records = {rec.index: rec for rec in trace.records} if kept else {}
    heads = []
    for index in sorted(kept):
        rec = records.get(index)
        if rec is None:  # a record the report does not keep
            continue
        if rec.op == SDPA and len(rec.inputs) >= 2:
            rows = _axis_names(analysis.shape_of(rec.inputs[0]))[-2:-1]
            cols = _axis_names(analysis.shape_of(rec.inputs[1]))[-2:-1]
        elif index in attentions and rec.outputs:
            rows, cols = [[n] for n in _axis_names(analysis.shape_of(rec.outputs[0]))[-2:]]
        else:
            continue  # a softmax that no product contracts: not attention weights
        heads.append({"index": index, "op": rec.op, "module": rec.module, "file": rec.file,
                      "line": rec.line, "rows": rows[0] if rows else "",
                      "cols": cols[0] if cols else "", "weights": kept[index]})
    return heads


def _modules(trace, analysis) -> list[dict]:
    """Each module of the model: its path, type, depth, parameters (its own and its
    children's) and the shape of the last op it ran, which is its output in a forward that
    returns what it computed last."""
    model = getattr(trace, "model", None)
    if model is None:
        return []
    last: dict[str, object] = {}
    for rec in trace.records:
        path = rec.module
        while path and rec.outputs:
            last[path] = rec
            path = path.rpartition(".")[0]
    root = type(model).__name__
    rows = []
    for name, module in model.named_modules():
        path = f"{root}.{name}" if name else root
        rec = last.get(path)
        params = sum(p.numel() for p in module.parameters())
        if rec is None and not params:
            continue
        rows.append({"path": path, "type": type(module).__name__,
                     "depth": name.count(".") + 1 if name else 0, "params": params,
                     "trainable": sum(p.numel() for p in module.parameters() if p.requires_grad),
                     "output": analysis.shape_of(rec.outputs[0]) if rec is not None else None})
    return rows
