#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# sparse (C=2) and W=1 over every x86 C file the series touches, in a copy
# of the x86_64 build so the real one keeps its flags.  A warning counts
# against the series when it points at a line the series added, or into a
# file it created; the kernel's own warnings in files we only hook into
# are left alone.  Writes build/results/sparse.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$RESULTS/sparse.ktap
obj=$BUILD/x86_64-w1
mkdir -p "$RESULTS"
[ -f "$BUILD/x86_64/vmlinux" ] || die "build the x86_64 kernel first"

# The C files of the x86 build the series touches (KUnit tests are
# #included by the file they test).
files=
for f in $(git -C "$TREE" diff --name-only pristine..asi -- '*.c' |
	   grep -E '^(arch/x86|virt/kvm|kernel|mm)/' | grep -v '_test\.c$'); do
	# Hooks in code the test configuration does not build (the MCE core).
	if [ -f "$BUILD/x86_64/${f%.c}.o" ]; then
		files="$files $f"
	else
		say "not built in the x86_64 configuration, not checked: $f"
	fi
done
objs=$(echo "$files" | sed 's/\.c$/.o/')

say "sparse and W=1 on $(echo "$files" | wc -w) files the series touches"
rm -rf "$obj"
cp -a "$BUILD/x86_64" "$obj"
kmake x86_64 "$obj" C=2 W=1 $objs >"$obj/w1.log" 2>&1 ||
	{ tail -20 "$obj/w1.log" >&2; die "the W=1 build failed: $obj/w1.log"; }

/usr/bin/python3 - "$TOP/scripts" "$obj/w1.log" "$TREE" "$out" $files <<'PY'
import re
import sys

sys.path.insert(0, sys.argv[1])
from series_diff import SeriesDiff

log, tree, out, files = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
series = SeriesDiff(tree)

findings = {}
for line in open(log):
    m = re.match(r'(?:%s/)?([^:\s]+):(\d+):(?:\d+:)? (warning|error): (.*)' % re.escape(tree), line)
    if not m:
        continue
    path, num = m.group(1), int(m.group(2))
    if series.ours(path, num):
        findings.setdefault(path, []).append(line.strip())

# One case per C file, and one for the headers they include.
headers = sorted({h for p, hs in findings.items() if p.endswith('.h') for h in hs})
cases = [(p, findings.get(p, [])) for p in files] + [('headers', headers)]
with open(out, 'w') as f:
    f.write('KTAP version 1\n# sparse and W=1\n1..%d\n' % len(cases))
    for i, (name, hits) in enumerate(cases, 1):
        for h in hits:
            f.write('# %s\n' % h)
        f.write('%s %d %s\n' % ('not ok' if hits else 'ok', i, name))
n = sum(len(v) for v in findings.values())
print('==> sparse and W=1: %d files, %d warnings on lines the series added' % (len(files), n))
sys.exit(1 if n else 0)
PY
