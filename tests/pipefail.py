#!/usr/bin/env python3
"""pipefail.py SOURCE_DIR — no shell script under tests/, nor a bench/
script that a meson test runs (with the bench libraries those source),
lets a failing pipeline pass: a file whose code has a pipeline (`a | b`,
also inside `$(...)`) runs under `set -o pipefail`, or, for a library that
tests source (no #! line), every script that sources it does.  dash has no
pipefail, so a file that sets it must start with #!/bin/bash.  The scanner
checks itself on known snippets first, so it cannot pass by finding
nothing.  Exit 0 PASS, 1 FAIL."""
import os
import re
import sys

CASE_PATTERN = re.compile(r"^\s*\(?[^\s()|;]+(\s*\|\s*[^\s()|;]+)+\s*\)")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
PIPEFAIL = re.compile(r"^\s*set\b[^#\n]*\s-[a-zA-Z]*o\s+pipefail\b", re.M)
MESON_SH = re.compile(r"'([^'\s]+\.sh)'")
# bench scripts that meson runs but that are not converted yet
ALLOW = set()


def code(text):
    """TEXT without its here-document bodies (another program's text)"""
    out, heredoc = [], None
    for line in text.split("\n"):
        if heredoc:
            out.append("")
            if line.strip() == heredoc:
                heredoc = None
            continue
        out.append(line)
        m = HEREDOC.search(line)
        if m and not line.lstrip().startswith("#"):
            heredoc = m.group(2)
    return "\n".join(out)


def opens(line, i):
    """the context that starts at line[i]: $( ${ or a backquote, else None"""
    return next((t for t in ("$(", "${", "`") if line.startswith(t, i)), None)


def pipelines(text):
    """line numbers (1-based) of the pipes in TEXT's shell code: not in
    comments, single quotes, plain double-quoted text, ${...}, case
    patterns, here-document bodies, nor `||`"""
    found = []
    stack = []  # open contexts: "'", '"', "$(", "`", "${"
    heredoc = None
    for no, line in enumerate(text.split("\n"), 1):
        if heredoc:
            if line.strip() == heredoc:
                heredoc = None
            continue
        if not stack and CASE_PATTERN.match(line):
            continue
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            top = stack[-1] if stack else None
            if top == "'":
                if c == "'":
                    stack.pop()
            elif top == '"':
                if c == "\\":
                    i += 1
                elif c == '"':
                    stack.pop()
                elif opens(line, i):
                    stack.append(opens(line, i))
                    i += len(stack[-1]) - 1
            elif top == "${":
                if c == "}":
                    stack.pop()
                elif c in "'\"":
                    stack.append(c)
            else:  # code: top level, $( ... ) or ` ... `
                if c == "\\":
                    i += 1
                elif c == "#" and (i == 0 or line[i - 1] in " \t;(|&"):
                    break
                elif c in "'\"":
                    stack.append(c)
                elif c == "`" and top == "`":
                    stack.pop()
                elif opens(line, i):
                    stack.append(opens(line, i))
                    i += len(stack[-1]) - 1
                elif c == ")" and top == "$(":
                    stack.pop()
                elif c == "(" and top == "$(":
                    stack.append("$(")  # a subshell or $((...)) inside
                elif line.startswith("||", i):
                    i += 1
                elif c == "|":
                    found.append(no)
                elif c == "<" and not stack:
                    m = HEREDOC.match(line, i)
                    if m:
                        heredoc = m.group(2)
                        i = m.end() - 1
            i += 1
    return sorted(set(found))


def self_test():
    bad = {
        "a | b": 1,
        "x=$(run | grep y)": 1,
        'x="$(run | grep y)"': 1,
        "if cmd |\n  grep -q x; then :; fi": 1,
        "f() { a | b; }  # c | d": 1,
        "cat <<EOF\n|\nEOF\na | b": 4,
        'x="`a | b`"': 1,
    }
    good = [
        "a || b",
        "echo 'a | b'",
        'echo "a | b"',
        "# a | b",
        "case $x in\n  a|b) ;;\nesac",
        "cat <<'EOF'\nx | y\nEOF",
        "python3 -c '\nprint(1 | 2)\n'",
        "echo ${x//|/,}",
        'grep -E "a|b" f',
    ]
    errs = []
    for snippet, line in bad.items():
        if line not in pipelines(snippet):
            errs.append(f"self-test: no pipe found on line {line} of {snippet!r}")
    for snippet in good:
        if pipelines(snippet):
            errs.append(f"self-test: a pipe found in {snippet!r}")
    for line, want in (("set -euo pipefail", True), ("set -u -o pipefail", True),
                       ("# set -o pipefail", False), ("cat <<EOF\nset -o pipefail\nEOF", False)):
        if (PIPEFAIL.search(code(line)) is not None) != want:
            errs.append(f"self-test: {line!r} {'not ' if want else ''}read as setting pipefail")
    tree = {"t.sh": "#!/bin/bash\n. ./lib1.sh", "lib1.sh": ". ./lib2.sh", "lib2.sh": "a | b"}
    if uncovered("lib2.sh", tree, set()) != ["t.sh"]:
        errs.append("self-test: a library sourced through another is not traced to its script")
    tree["t.sh"] = "#!/bin/bash\nset -o pipefail\n. ./lib1.sh"
    if uncovered("lib2.sh", tree, set()):
        errs.append("self-test: a library under a pipefail script is reported")
    build = ("# test('c', x, args : ['c.sh'])\nx = files('d.sh')\n"
             "test('a', find_program('sh'),\n  args : [files('a.sh', 'b.sh'), 'x'],\n"
             "  env : {'Y' : f('z')})\n")
    if meson_tests(build) != ["a.sh", "b.sh"]:
        errs.append(f"self-test: meson.build tests read as {meson_tests(build)}")
    return errs


def meson_tests(text):
    """the .sh names inside the test(...) calls of a meson.build TEXT"""
    text = "\n".join(l.split("#", 1)[0] for l in text.split("\n"))
    names, i = [], 0
    while True:
        i = text.find("test(", i)
        if i < 0:
            return names
        depth, j = 0, i + 4
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        names += MESON_SH.findall(text[i:j])
        i = j


def sourced(scripts, name):
    """whether a script of SCRIPTS sources a file named NAME"""
    src_re = re.compile(r"^\s*(\.|source)\s+[^\n#]*(?<![\w.-])" + re.escape(name) + r"\b", re.M)
    return any(src_re.search(code(t)) for t in scripts.values())


def bench_scripts(src):
    """bench/**/*.sh that a meson test under bench/ runs, and the bench
    libraries (no #!) those source, by path: text"""
    found, libs = {}, {}
    for d, _, fs in os.walk(os.path.join(src, "bench")):
        if "meson.build" in fs:
            for n in meson_tests(open(os.path.join(d, "meson.build")).read()):
                p = os.path.normpath(os.path.join(d, n))
                if os.path.exists(p):
                    found[p] = open(p, encoding="utf-8", errors="replace").read()
        for f in fs:
            p = os.path.normpath(os.path.join(d, f))
            if f.endswith(".sh") and p not in found:
                text = open(p, encoding="utf-8", errors="replace").read()
                if not text.startswith("#!"):
                    libs[p] = text
    added = True
    while added:  # a library sourced by a test, or by a library it sources
        added = False
        for p in [p for p in libs if sourced(found, os.path.basename(p))]:
            found[p] = libs.pop(p)
            added = True
    return found


def sets_pipefail(text):
    return PIPEFAIL.search(code(text)) is not None


def uncovered(p, scripts, seen):
    """the scripts through which P runs without pipefail: P itself when it
    is a program (#!) or a library nothing sources; else, for a library
    (sourced, no #!), those of the scripts that source it, transitively"""
    text = scripts[p]
    if sets_pipefail(text) or p in seen:
        return []
    if text.startswith("#!"):
        return [p]
    seen.add(p)
    name = re.escape(os.path.basename(p))
    src_re = re.compile(r"^\s*(\.|source)\s+[^\n#]*(?<![\w.-])" + name + r"\b", re.M)
    users = [q for q, t in scripts.items() if q != p and src_re.search(code(t))]
    if not users:
        return [p]
    return sorted({r for q in users for r in uncovered(q, scripts, seen)})


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    fails = self_test()
    scripts = {}
    for d, _, fs in os.walk(os.path.join(src, "tests")):
        for f in fs:
            if f.endswith(".sh"):
                p = os.path.join(d, f)
                scripts[p] = open(p, encoding="utf-8", errors="replace").read()
    if not scripts:
        fails.append(f"no tests/**/*.sh under {src}")
    bench = bench_scripts(src)
    if os.path.isdir(os.path.join(src, "bench")) and not bench:
        fails.append(f"no bench/*.sh that a meson test runs under {src}")
    for p, text in bench.items():
        if os.path.relpath(p, src) in ALLOW:
            print(f"allowed: {os.path.relpath(p, src)} (not converted yet)")
        else:
            scripts[p] = text
    for p, text in sorted(scripts.items()):
        rel = os.path.relpath(p, src)
        if sets_pipefail(text) and text.startswith("#!/bin/sh"):
            fails.append(f"{rel}: sets pipefail under #!/bin/sh (dash has none): make it #!/bin/bash")
        pipes = pipelines(text)
        if not pipes:
            continue
        bare = uncovered(p, scripts, set())
        if bare:
            why = ("no set -o pipefail" if bare == [p] else "sourced by " +
                   ", ".join(os.path.relpath(q, src) for q in bare) + " (no pipefail)")
            fails.append(f"{rel}: pipeline on line(s) {', '.join(map(str, pipes[:8]))}, {why}")
    for f in fails:
        print("FAIL:", f)
    if fails:
        return 1
    print(f"PASS: {len(scripts)} test scripts ({len(bench)} under bench/): "
          "every pipeline runs under pipefail")
    return 0


if __name__ == "__main__":
    sys.exit(main())
