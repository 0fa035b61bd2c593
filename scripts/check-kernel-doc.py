#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kernel-doc over every C file and header the series touches.

Two kinds of findings count, on lines the series added or in files it
created (series_diff):
- what the tree's scripts/kernel-doc -none -v reports (malformed
  comments, undescribed parameters or return values), except "contents
  before sections", which only flags a description between a function
  without parameters and its Return: section;
- a new non-static function definition whose name has no kernel-doc
  comment anywhere in the series' files: the generic hooks are documented
  once, at their __weak default, not again in each architecture.

usage: check-kernel-doc.py <tree> <ktap file>
Writes one KTAP case per file; exit status 1 on any finding.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from series_diff import SeriesDiff  # noqa: E402

# A function definition at column 0: a return type, the name, "(".
DEFINITION = re.compile(r'^(?!static\b|typedef\b|extern\b|struct\s+\w+\s*\{|#)'
                        r'[A-Za-z_][\w \t*]*?\b(\w+)\(')
DOC = re.compile(r'^/\*\*\s*\n \*\s*(?:function\s+)?(\w+)(?:\(\))?\s*-', re.M)
WARNING = re.compile(r'^(?:.*/)?([^:\s]+\.[ch]):(\d+): (?:warning|error): (.*)$')


def definitions(path, text, series):
    """New non-static function definitions in a C file: (line, name)."""
    lines = text.split('\n')
    for i, line in enumerate(lines, 1):
        if not series.ours(path, i):
            continue
        m = DEFINITION.match(line)
        if not m or line.rstrip().endswith(';'):
            continue
        # DEFINE_PER_CPU...(...) = {: a macro defining a variable.
        if m.group(1).isupper():
            continue
        # A definition when "{" comes before any ";" (prototypes, macros).
        rest = '\n'.join(lines[i - 1:i + 8])
        ends = [k for k in (rest.find('{'), rest.find(';')) if k >= 0]
        if ends and rest[min(ends)] == '{':
            yield i, m.group(1)


def main():
    tree, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    series = SeriesDiff(tree)
    files = [f for f in series.files() if re.search(r'\.[ch]$', f)]
    texts = {f: open(os.path.join(tree, f)).read() for f in files}
    documented = {name for t in texts.values() for name in DOC.findall(t)}

    findings = {f: [] for f in files}
    for f in files:
        run = subprocess.run([os.path.join(tree, 'scripts/kernel-doc'), '-none', '-v', f],
                             cwd=tree, capture_output=True, text=True)
        for line in (run.stdout + run.stderr).splitlines():
            m = WARNING.match(line)
            if (m and series.ours(f, int(m.group(2))) and
                    'contents before sections' not in m.group(3)):
                findings[f].append(line.strip())
        if f.endswith('.c'):
            for num, name in definitions(f, texts[f], series):
                if name not in documented:
                    findings[f].append('%s:%d: %s() is not static and has no kernel-doc'
                                       % (f, num, name))

    with open(out, 'w') as ktap:
        ktap.write('KTAP version 1\n# kernel-doc\n1..%d\n' % len(files))
        for i, f in enumerate(files, 1):
            for line in findings[f]:
                ktap.write('# %s\n' % line)
            ktap.write('%s %d kernel-doc:%s\n' % ('not ok' if findings[f] else 'ok', i, f))
    n = sum(len(v) for v in findings.values())
    for f in files:
        for line in findings[f]:
            print('    ' + line)
    print('==> kernel-doc: %d files the series touches, %d findings' % (len(files), n))
    return 1 if n else 0


if __name__ == '__main__':
    sys.exit(main())
