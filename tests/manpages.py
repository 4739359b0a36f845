#!/usr/bin/env python3
"""The section-5 pages (the config formats) as a user reads them: each was
made, renders under groff without a warning, and names every directive of
its docs/ table (src/tools/mdman.py; a dropped or mangled row fails here).
Usage: manpages.py BUILD_DIR SOURCE_ROOT
"""
import os
import re
import shutil
import subprocess
import sys

# the page, its docs/ page and the sections it is made of (as in
# src/tools/meson.build)
PAGES = {"offcore-dp.conf.5": ("docs/dp.md", ["The configuration file"]),
         "offcore-nvmf.conf.5": ("docs/nvmf.md", ["Configuration"])}


def directives(doc, sections):
    """the first word of the first cell of each table row in @sections"""
    out, cur = set(), None
    for ln in open(doc, encoding="utf-8"):
        if ln.startswith("## "):
            cur = ln[3:].strip()
        m = re.match(r"\|\s*`([a-z_-]+)[ `]", ln)
        if m and cur in sections:
            out.add(m.group(1))
    return out


def main():
    build, src = sys.argv[1], sys.argv[2]
    bad = []
    groff = shutil.which("groff")
    for page, (doc, sections) in PAGES.items():
        path = os.path.join(build, "src", "tools", page)
        if not os.path.exists(path):
            bad.append("%s: not built" % page)
            continue
        text = open(path, encoding="ascii", errors="replace").read()
        if "\ufffd" in text:
            bad.append("%s: raw bytes outside ASCII" % page)
        if groff:
            p = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", path],
                               capture_output=True, text=True, timeout=60)
            if p.returncode != 0 or p.stderr.strip():
                bad.append("%s: groff: %s" % (page, p.stderr.strip()[:300]))
            shown = subprocess.run([groff, "-man", "-Tascii", "-P-c", path],
                                   capture_output=True, text=True,
                                   timeout=60).stdout
            shown = re.sub(r".\x08", "", shown)
        else:
            shown = text.replace("\\-", "-")
        want = directives(os.path.join(src, doc), sections)
        if len(want) < 5:
            bad.append("%s: found only %d directives in its table" % (doc,
                                                                     len(want)))
        for d in sorted(want):
            # a row is a tagged paragraph: its tag starts a line at the
            # page's indent (groff) or as the line after .TP (troff source)
            tag = (r"^ {7}%s( .*)?\n( {7}\S.*\n)? {14}\S" if groff
                   else r"^\.TP\n\\fB%s[\s\\]")
            if not re.search(tag % re.escape(d), shown, re.M):
                bad.append("%s: directive '%s' of %s is missing" % (page, d,
                                                                    doc))
    for b in bad:
        print("FAIL:", b)
    if not groff:
        print("note: groff not installed: rendering not checked")
    print("ok" if not bad else "FAIL (%d)" % len(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
