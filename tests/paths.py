#!/usr/bin/env python3
"""paths.py SOURCE_DIR — every link and every cited path in the docs exists.

  1. Every relative markdown link in README.md, docs/*.md and the READMEs
     under src/, bench/, apps/ and tests/ resolves: the file (or folder)
     exists, and an #anchor names a heading (GitHub's slug) or an
     <a id/name> of the target page.
  2. Every path those pages cite, and every path cited in a comment of a C
     file under src/, include/, apps/, bench/ or tests/, or of a shell,
     Python, meson or make file, exists (a program by its source): a token
     such as `src/x/y.c`, `docs/z.md`, `util/spsc.h`, `tests/a/b.sh`,
     `bench/...` is looked up against the repository root, src/, include/,
     the citing file's folder and each module's include/ folder.  A bare
     file name (`DESIGN.md`, `placement.h`) must be the name of some file
     in the tree.
  3. README.md's layout names every folder of src/ and include/.
  4. Paths that are not in the tree by design are skipped, each kind
     named in ALLOW below with its reason; absolute paths (/usr/...,
     /run/offcore/...) are the machine's, not the tree's, and never checked.

Exit 0 PASS, 1 FAIL (each failure named with file:line).
"""
import glob
import os
import re
import sys

# Extensions that make a token with a folder a citation of a file of the
# tree (`util/spsc.h`).  Others (`plugstack.conf.d/x.conf`, a data file)
# are checked only under a folder of ROOTS.
EXTS = ('c', 'h', 'md', 'sh', 'py', 'build', 'in', 'map', 'cross')
# A bare name (no folder) is a citation only with one of these: a user's
# own `job.sh` or `nvmf.conf` in an example is not the tree's.
BARE_EXTS = ('c', 'h', 'md', 'py')
# Top-level folders of the tree: a token starting with one is a citation
# even without an extension (`bench/router`, `tests/doctor/fixtures/`).
ROOTS = ('src', 'docs', 'tests', 'bench', 'apps', 'include', 'contrib',
         'scripts', 'debian', 'data')

# Not in the tree by design (prefix match on the token, or an exact bare
# name).  Keep each entry commented.
ALLOW_PREFIX = (
    'build/', 'build-asan/', 'build-fuzz/',  # build directories: binaries, generated files
    'ucp/', 'ucs/', 'uct/',                  # UCX's installed headers
    'linux/', 'sys/', 'netinet/', 'arpa/',   # libc and kernel headers
    'xdp/', 'bpf/', 'openssl/', 'slurm/',    # libxdp, libbpf, OpenSSL, Slurm headers
)
ALLOW_BARE = {
    # system and third-party headers cited by name
    'mpi.h', 'ucp.h', 'cuda.h', 'nccl.h', 'spank.h', 'rte_acl.h',
    'libxdp.h', 'liburing.h', 'pmix.h',
    # files named as they are installed or generated, not as in the tree
    'offcored.service', 'offcore-dp.service', 'offcore-nvmf.service',
    'config.h',      # meson's generated configuration header
    'version_gen.h', # made from its .in template by meson's vcs_tag
}

TOKEN = re.compile(
    r'(?<![\w./~$@:=-])'
    r'((?:[A-Za-z0-9_.+*-]+/)*[A-Za-z0-9_.+*-]*[A-Za-z0-9_*](?:/|\b))')
MD_LINK = re.compile(r'(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
MD_IMG = re.compile(r'!\[[^\]\n]*\]\(([^)\s]+)\)')


def slug(title):
    s = title.strip().lower()
    s = re.sub(r'[`*_]', lambda m: '_' if m.group(0) == '_' else '', s)
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, out = {}, set()
        fence = False
        with open(path, encoding='utf-8') as f:
            for line in f:
                if line.lstrip().startswith('```'):
                    fence = not fence
                    continue
                if fence:
                    continue
                m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
                if m:
                    s = slug(m.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    out.add(s if n == 0 else '%s-%d' % (s, n))
                for a in re.findall(r'<a\s+(?:id|name)="([^"]+)"', line):
                    out.add(a)
        _anchors[path] = out
    return _anchors[path]


class Checker:
    def __init__(self, root):
        self.root = root
        self.failures = []
        self.names = set()
        self.incdirs = []
        self.moddirs = []
        for dp, dns, fns in os.walk(root):
            dns[:] = [d for d in dns if not d.startswith('.')
                      and not (dp == root and d.startswith('build'))]
            self.names.update(fns)
            if os.path.basename(dp) == 'include' and \
                    dp.startswith(os.path.join(root, 'src')):
                self.incdirs.append(dp)
            if 'meson.build' in fns and \
                    dp.startswith(os.path.join(root, 'src') + os.sep):
                self.moddirs.append(dp)

    def fail(self, where, what):
        self.failures.append('%s: %s' % (where, what))

    def exists(self, base, rel):
        p = os.path.normpath(os.path.join(base, rel))
        if '*' in rel:
            return bool(glob.glob(p))
        # a program is named where its source is (tests/unit/test_metrics)
        return os.path.exists(p) or os.path.exists(p + '.c')

    def cited(self, token, citing_dir):
        """True when the cited token names something in the tree."""
        rel = token.rstrip('/')
        if '/' not in rel:
            return rel in self.names or rel in ALLOW_BARE or \
                any(n.endswith(rel) for n in ALLOW_BARE)
        bases = [self.root, os.path.join(self.root, 'src'),
                 os.path.join(self.root, 'include'), citing_dir] + self.incdirs
        # a module's folders: a header as the module's own files include
        # it (`tenant/tenant.h` in src/dp), or its include/ folder named
        # from the module (`include/runtime/settings.h`)
        bases += self.moddirs
        return any(self.exists(b, rel) for b in bases)

    def is_citation(self, token):
        t = token.rstrip('/')
        if not t or t.startswith(ALLOW_PREFIX) or t in ALLOW_BARE:
            return False
        if '...' in t or t.endswith('.') or '/' not in t and '*' in t:
            return False
        stem = t.rsplit('.', 1)[0]
        if re.search(r'[a-z]', stem) and \
                re.search(r'(?<![A-Za-z])[A-Z]{3,}(?![A-Za-z])', stem):
            return False   # a pattern: fuzz_NAME.c, src/ROOM/x.c
        base = t.rsplit('/', 1)[-1]
        ext = base.rsplit('.', 1)[-1] if '.' in base else ''
        if '/' not in t and ext not in BARE_EXTS:
            return False   # nvmf.conf, sweep-bundle.csv: files a user makes
        if ext in EXTS and base != '.' + ext:
            # a word ending in an extension is a file name only when it
            # looks like one (letters, digits, - _ + . *)
            return re.fullmatch(r'[A-Za-z0-9_+*-][A-Za-z0-9_.+*-]*', base) \
                is not None
        return '/' in t and t.split('/', 1)[0] in ROOTS

    def check_tokens(self, text, where, citing_dir):
        for m in TOKEN.finditer(text):
            tok = m.group(1)
            if self.is_citation(tok) and not self.cited(tok, citing_dir):
                self.fail(where, 'cites %s, which does not exist' % tok)

    def check_markdown(self, path):
        rel = os.path.relpath(path, self.root)
        d = os.path.dirname(path)
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
        fence = False
        for no, line in enumerate(lines, 1):
            where = '%s:%d' % (rel, no)
            if line.lstrip().startswith('```'):
                fence = not fence
            links = [] if fence else MD_LINK.findall(line) + MD_IMG.findall(line)
            for target in links:
                if re.match(r'[a-z]+:', target):
                    continue                     # http:, https:, mailto:
                file, _, anchor = target.partition('#')
                tpath = os.path.normpath(os.path.join(d, file)) if file else path
                if not os.path.exists(tpath):
                    self.fail(where, 'link to %s: no such file' % target)
                    continue
                if anchor and tpath.endswith('.md') and \
                        anchor not in anchors(tpath):
                    self.fail(where, 'link to %s: no heading #%s in %s' % (
                        target, anchor, os.path.relpath(tpath, self.root)))
            # link targets were checked above; the rest is prose
            prose = MD_LINK.sub('', line) if not fence else line
            self.check_tokens(prose, where, d)

    def check_c(self, path):
        rel = os.path.relpath(path, self.root)
        d = os.path.dirname(path)
        with open(path, encoding='utf-8', errors='replace') as f:
            src = f.read()
        # comments only (strings are left alone: they hold what the program
        # prints or opens, which may be machine paths)
        for m in re.finditer(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                             r"'(?:\\.|[^'\\\n])*'", src, re.S):
            c = m.group(0)
            if c[0] in '"\'':
                continue
            line0 = src.count('\n', 0, m.start()) + 1
            for i, line in enumerate(c.split('\n')):
                self.check_tokens(line, '%s:%d' % (rel, line0 + i), d)

    def check_layout(self):
        """README's layout names every folder of src/ (and include/)."""
        with open(os.path.join(self.root, 'README.md'), encoding='utf-8') as f:
            readme = f.read()
        m = re.search(r'^## Layout\n(.*?)(?=^## |\Z)', readme, re.M | re.S)
        if not m:
            self.fail('README.md', 'no "## Layout" section')
            return
        layout = m.group(1)
        for top in ('src', 'include'):
            for d in sorted(os.listdir(os.path.join(self.root, top))):
                if os.path.isdir(os.path.join(self.root, top, d)) and \
                        not re.search(r'^%s/%s/' % (top, d), layout, re.M):
                    self.fail('README.md', 'its layout does not name %s/%s/'
                              % (top, d))

    def check_hash_comments(self, path):
        """'#' comments of shell, Python, meson and make files."""
        rel = os.path.relpath(path, self.root)
        d = os.path.dirname(path)
        with open(path, encoding='utf-8', errors='replace') as f:
            lines = f.read().split('\n')
        for no, line in enumerate(lines, 1):
            if line.startswith('#!'):
                continue
            if re.match(r'\s*#\s*(include|define|if|ifn?def|endif|else|pragma)\b',
                        line):
                continue                 # C in a here-document
            m = re.search(r'(?:^|\s)#(.*)$', line)
            if m:
                self.check_tokens(m.group(1), '%s:%d' % (rel, no), d)

    def run(self):
        self.check_layout()
        md = [os.path.join(self.root, 'README.md')]
        md += sorted(glob.glob(os.path.join(self.root, 'docs', '*.md')))
        for top in ('src', 'bench', 'apps', 'tests'):
            md += sorted(glob.glob(os.path.join(self.root, top, '**',
                                                'README.md'), recursive=True))
        for p in md:
            self.check_markdown(p)
        cs = []
        for top in ('src', 'include', 'apps', 'bench', 'tests', 'contrib'):
            cs += glob.glob(os.path.join(self.root, top, '**', '*.[ch]'),
                            recursive=True)
        for p in sorted(cs):
            self.check_c(p)
        hs = [os.path.join(self.root, n) for n in ('Makefile', 'meson.build')]
        for top in ('src', 'apps', 'bench', 'tests', 'scripts', 'debian',
                    'contrib'):
            for dp, _, fns in os.walk(os.path.join(self.root, top)):
                hs += [os.path.join(dp, n) for n in fns
                       if n.endswith(('.sh', '.py')) or n == 'meson.build']
        for p in sorted(hs):
            if os.path.isfile(p):
                self.check_hash_comments(p)
        return len(md), len(cs) + len(hs)


def main():
    if len(sys.argv) != 2:
        print('usage: paths.py SOURCE_DIR', file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    if not os.path.isfile(os.path.join(root, 'README.md')):
        print('paths.py: %s has no README.md: not the source root' % root,
              file=sys.stderr)
        return 2
    c = Checker(root)
    nmd, nc = c.run()
    for f in c.failures:
        print('FAIL ' + f)
    if c.failures:
        print('FAIL: %d wrong links or cited paths (%d pages, %d source files)' % (
            len(c.failures), nmd, nc))
        return 1
    print('PASS: every link and cited path exists (%d pages, %d source files)' % (
        nmd, nc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
