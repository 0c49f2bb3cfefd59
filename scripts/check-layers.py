#!/usr/bin/env python3
"""The layer check: docs/ARCHITECTURE.md's tables, enforced.

  scripts/check-layers.py [--build DIR]

Reads two tables from docs/ARCHITECTURE.md (between the layers:begin/end and
programs:begin/end markers) and checks the tree against them:

  includes  every `#include "x/y.h"` in a tracked .c/.h file goes to the
            file's own directory or to one its row lists under "may include"
            (a file belongs to the deepest directory of the table that holds
            it);
  programs  with --build, each program's binary in DIR needs (ELF NEEDED)
            only the libraries its row lists, besides the C runtime, and
            holds no symbol with a prefix its row forbids (the SPIRE applier,
            root on the SPIRE host, carries no store and no SQLite).

Prints every violation with the file and line, and exits 1 when there is
one, 0 otherwise; 2 when the tables themselves cannot be read. Run by
.ci/run and by the `layers` test (tests/layers/test_check_layers.sh), which
also plants wrong-way edges and checks that they fail.
"""
import os
import re
import subprocess
import sys

# What every program may need whatever its row says: the C runtime, and
# the sanitizers' runtimes in a sanitizer build.
RUNTIME = re.compile(r"^(libc|libm|libpthread|libdl|librt|ld-linux[-\w]*|libgcc_s|"
                     r"libasan|libubsan|liblsan|libtsan|libstdc\+\+)\.so")

ROW = re.compile(r"^\|(.*)\|\s*$")


def cells(line):
    return [c.strip() for c in ROW.match(line).group(1).split("|")]


def names(cell):
    """`a/`, `b/` or — (none) or 'everything'."""
    cell = cell.strip()
    if cell in ("—", "-", ""):
        return []
    if cell == "everything":
        return ["*"]
    return [n.strip().strip("`") for n in cell.split(",") if n.strip()]


def table(text, tag):
    m = re.search(r"<!-- %s:begin -->(.*?)<!-- %s:end -->" % (tag, tag), text, re.S)
    if not m:
        raise ValueError("docs/ARCHITECTURE.md has no %s table (<!-- %s:begin -->)" % (tag, tag))
    rows = [l for l in m.group(1).splitlines() if ROW.match(l.strip())]
    out = []
    for l in rows[2:]:  # header, rule
        out.append(cells(l.strip()))
    if not out:
        raise ValueError("the %s table is empty" % tag)
    return out


def load(root):
    text = open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    layers = {}
    for c in table(text, "layers"):
        if len(c) < 3:
            raise ValueError("layers row needs directory | target | may include: %r" % c)
        for d in names(c[0]):
            layers[d.rstrip("/") + "/"] = [x.rstrip("/") + "/" if x != "*" else "*"
                                          for x in names(c[2])]
    programs = []
    for c in table(text, "programs"):
        if len(c) < 4:
            raise ValueError("programs row needs program | binary | may need | must not hold: %r" % c)
        programs.append((names(c[0])[0], names(c[1])[0], names(c[2]), names(c[3])))
    return layers, programs


def owner(layers, path):
    """The deepest table directory holding path."""
    best = None
    for d in layers:
        if path.startswith(d) and (best is None or len(d) > len(best)):
            best = d
    return best


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def check_includes(root, layers):
    # Tracked files and new ones not ignored: a file not yet added is checked too.
    git = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                          "*.c", "*.h"], cwd=root, capture_output=True, text=True)
    files = git.stdout.split() if git.returncode == 0 else []
    if not files:  # not a git tree (a copy): every .c/.h under root
        for dp, _, fs in os.walk(root):
            for f in fs:
                if f.endswith((".c", ".h")):
                    files.append(os.path.relpath(os.path.join(dp, f), root))
    bad = []
    for f in sorted(files):
        if not os.path.exists(os.path.join(root, f)):
            continue
        mine = owner(layers, f)
        if mine is None:
            bad.append("%s: in no directory of the layer table" % f)
            continue
        allowed = layers[mine]
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if "/" not in inc:  # a file beside it
                    continue
                theirs = owner(layers, inc)
                if theirs is None:
                    bad.append("%s:%d: includes %s, in no directory of the layer table"
                               % (f, n, inc))
                elif theirs != mine and "*" not in allowed and theirs not in allowed:
                    bad.append("%s:%d: %s may not include %s (%s is not in its row: %s)"
                               % (f, n, mine, inc, theirs, ", ".join(allowed) or "—"))
    return bad


def elf_needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def elf_symbols(path):
    out = subprocess.run(["nm", "-a", path], capture_output=True, text=True).stdout
    dyn = subprocess.run(["nm", "-D", path], capture_output=True, text=True).stdout
    syms = set()
    for line in (out + dyn).splitlines():
        parts = line.split()
        if parts:
            syms.add(parts[-1])
    return syms


def check_programs(build, programs):
    bad = []
    for prog, binary, may_need, forbidden in programs:
        path = os.path.join(build, binary)
        if not os.path.isfile(path):
            bad.append("%s: no binary at %s (build it first)" % (prog, path))
            continue
        allowed = [n.rstrip("*") for n in may_need]
        for lib in elf_needed(path):
            if RUNTIME.match(lib):
                continue
            if not any(lib.startswith(a) for a in allowed):
                bad.append("%s (%s) needs %s, which its row does not allow (%s)"
                           % (prog, binary, lib, ", ".join(may_need) or "—"))
        syms = elf_symbols(path)
        for prefix in forbidden:
            hits = sorted(s for s in syms if s.startswith(prefix))
            if hits:
                bad.append("%s (%s) holds %d symbol(s) starting %s, e.g. %s"
                           % (prog, binary, len(hits), prefix, hits[0]))
    return bad


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = None
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--build" and args:
            build = args.pop(0)
        elif a == "--root" and args:
            root = args.pop(0)
        else:
            print(__doc__.strip().splitlines()[2], file=sys.stderr)
            return 2
    try:
        layers, programs = load(root)
    except (OSError, ValueError) as e:
        print("check-layers: %s" % e, file=sys.stderr)
        return 2
    bad = check_includes(root, layers)
    if build:
        bad += check_programs(build, programs)
    for b in bad:
        print("check-layers: " + b)
    if bad:
        print("check-layers: %d violation(s) of docs/ARCHITECTURE.md" % len(bad))
        return 1
    print("check-layers: includes%s as docs/ARCHITECTURE.md allows"
          % (" and programs" if build else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
