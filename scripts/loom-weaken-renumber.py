#!/usr/bin/env python3
"""Renumbers scripts/loom-weaken.sh after an edit to the files it weakens.

loom-weaken.sh edits orderings by line number. Usage:

    scripts/loom-weaken-renumber.py COMMIT

maps each row's line numbers from the files as they were at COMMIT (when
the numbers were right) to the working tree, by diffing the two versions,
and prints every target line so it can be checked by eye. A line that was
itself edited cannot be mapped: it is reported, and left for a hand fix.
"""
import difflib
import re
import subprocess
import sys

if len(sys.argv) != 2:
    sys.exit("usage: loom-weaken-renumber.py COMMIT (the commit the numbers were right at)")
base = sys.argv[1]
script = "scripts/loom-weaken.sh"
row = re.compile(r'^"(W\d+)\|([^|]*)\|\$R/([a-z_]+\.rs)\|(.*)"$')
maps = {}


def line_map(name):
    if name not in maps:
        path = "crates/ringtrace-ring/src/" + name
        old = subprocess.run(["git", "show", f"{base}:{path}"], capture_output=True,
                             text=True, check=True).stdout.splitlines()
        new = open(path).read().splitlines()
        m = {}
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, _ in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    m[i1 + k + 1] = j1 + k + 1
        maps[name] = (m, new)
    return maps[name]


out, unmapped = [], 0
for line in open(script).read().splitlines():
    found = row.match(line)
    if not found:
        out.append(line)
        continue
    wid, what, name, expr = found.groups()
    m, new = line_map(name)

    def renumber(x):
        global unmapped
        n = int(x.group(1))
        if n not in m:
            unmapped += 1
            print(f"{wid}: line {n} of {name} was edited; fix it by hand")
            return x.group(0)
        return f"{m[n]}s/"

    expr = re.sub(r"(\d+)s/", renumber, expr)
    for n in re.findall(r"(\d+)s/", expr):
        print(f"{wid} {name}:{n}: {new[int(n) - 1].strip()[:80]}")
    out.append(f'"{wid}|{what}|$R/{name}|{expr}"')
open(script, "w").write("\n".join(out) + "\n")
sys.exit(1 if unmapped else 0)
