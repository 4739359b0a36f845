#!/usr/bin/env python3
"""test_dashboards.py SOURCE_DIR: every PromQL query the project ships for
operators -- the Grafana dashboard (contrib/grafana/offcore.json) and the
alert rules in docs/operations.md -- names only metric families that exist
(src/metrics/include/metrics/names.h) and only labels the agent writes
(src/agent/agent_metrics.c) or Prometheus adds (instance, job, and
exported_job: offcore's own `job` label once scraped).  Also the labels the
legends and alert texts print.  No network.  Exit 0 PASS, 1 FAIL."""
import json
import re
import sys

PROM_METRICS = {"up"}  # Prometheus's own series of every target
PROM_LABELS = {"instance", "job", "exported_job", "le"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right",
            "and", "or", "unless", "bool", "offset", "inf", "nan"}


def families(src):
    text = open(f"{src}/src/metrics/include/metrics/names.h").read()
    names = set(re.findall(r'#define\s+OC_M_\w+\s+"([a-z_:][a-z0-9_:]*)"', text))
    if len(names) < 20:
        sys.exit(f"FAIL: only {len(names)} families parsed from names.h")
    return names


def agent_labels(src):
    text = open(f"{src}/src/agent/agent_metrics.c").read()
    labels = set(re.findall(r'LBL\("([a-z_]+)"', text))
    labels |= set(re.findall(r'OC_PROM_(?:COUNTER|GAUGE),\s*"([a-z_]+)"', text))
    if not {"job", "thread", "reason", "peer", "class"} <= labels:
        sys.exit(f"FAIL: the agent's labels did not parse: {sorted(labels)}")
    return labels | PROM_LABELS


def strip(expr):
    """expr without strings and durations; returns (rest, labels used)."""
    used = set()
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    for body in re.findall(r"\{([^}]*)\}", expr):
        used |= set(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", body))
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    for body in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
        used |= set(re.findall(r"[a-zA-Z_]\w*", body))
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\$\w+", " ", expr)
    return expr, used


def check(where, expr, names, labels, errors):
    rest, used = strip(expr)
    metrics = []
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", rest):
        tok = m.group(0)
        after = rest[m.end():].lstrip()
        if after.startswith("(") or tok.lower() in KEYWORDS:
            continue  # a function or an aggregation, or a keyword
        if re.fullmatch(r"\d.*", tok):
            continue
        metrics.append(tok)
    if not metrics:
        errors.append(f"{where}: names no metric: {expr}")
    for tok in metrics:
        base = re.sub(r"_(bucket|sum|count)$", "", tok)
        if tok not in names and base not in names and tok not in PROM_METRICS:
            errors.append(f"{where}: no metric family '{tok}' in names.h: {expr}")
    for lab in used - labels:
        errors.append(f"{where}: no label '{lab}' on the agent's metrics: {expr}")
    return metrics


def printed_labels(where, text, labels, errors):
    for lab in re.findall(r"\{\{\s*(\w+)\s*\}\}", text):
        if lab not in labels:
            errors.append(f"{where}: prints label '{lab}', which no metric has: {text}")


def walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def grafana(src, names, labels, errors):
    dash = json.load(open(f"{src}/contrib/grafana/offcore.json"))
    n = 0
    for d in walk(dash):
        title = d.get("title", "")
        for t in d.get("targets", []):
            check(f"grafana '{title}'", t["expr"], names, labels, errors)
            printed_labels(f"grafana '{title}' legend", t.get("legendFormat", ""),
                           labels, errors)
            n += 1
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", q)
        if not m:
            errors.append(f"grafana variable {v.get('name')}: query not understood: {q}")
            continue
        check(f"grafana variable {v['name']}", m.group(1), names, labels, errors)
        if m.group(2) not in labels:
            errors.append(f"grafana variable {v['name']}: no label {m.group(2)}")
    return n


def alert_rules(src, names, labels, errors):
    doc = open(f"{src}/docs/operations.md").read()
    n = 0
    for block in re.findall(r"```yaml\n(.*?)```", doc, re.S):
        for m in re.finditer(r"^\s*expr:\s*(.+)$", block, re.M):
            check("docs/operations.md alert", m.group(1), names, labels, errors)
            n += 1
        for m in re.finditer(r"^\s*summary:\s*(.+)$", block, re.M):
            for lab in re.findall(r"\$labels\.(\w+)", m.group(1)):
                if lab not in labels:
                    errors.append(f"docs/operations.md alert text prints label '{lab}', which no metric has")
    return n


def main():
    src = sys.argv[1]
    names, labels = families(src), agent_labels(src)
    # the checker itself must catch a wrong name and a wrong label
    errors = []
    check("self-test", 'rate(offcore_no_such_total{clas="rdma"}[5m])', names, labels, errors)
    if len(errors) != 2:
        print(f"FAIL: the checker missed a wrong name or label: {errors}")
        return 1
    errors = []
    ng = grafana(src, names, labels, errors)
    na = alert_rules(src, names, labels, errors)
    if ng < 10 or na < 5:
        errors.append(f"too few queries found (dashboard {ng}, alert rules {na}): did the files' format change?")
    for e in errors:
        print("FAIL:", e)
    if errors:
        return 1
    print(f"PASS: {ng} dashboard queries and {na} alert rules name only "
          f"families of names.h and labels the agent writes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
