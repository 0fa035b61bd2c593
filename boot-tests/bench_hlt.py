#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judge the boots of make bench-hlt: one KTAP result per boot.

usage: bench_hlt.py <results dir> <runs>

A boot passes when it passed as a boot (its KTAP, console and power-off)
and its hlt run took at most twice the median time of all runs.
"""

import json
import os
import re
import statistics
import sys


def main():
    out, runs = sys.argv[1], int(sys.argv[2])
    boots = []
    for n in range(1, runs + 1):
        name = f'hlt-{n}'
        ktap = os.path.join(out, f'{name}.ktap')
        bench = os.path.join(out, f'{name}.kvm-bench.ktap')
        ok = os.path.exists(ktap) and not re.search(r'^not ok', open(ktap).read(), re.M)
        run = None
        if os.path.exists(bench):
            for line in open(bench):
                if line.startswith('# bench '):
                    run = json.loads(line[len('# bench '):])
        boots.append((name, ok and run is not None, run))
    times = [r['secs'] for _, _, r in boots if r]
    median = statistics.median(times) if times else 0
    print('KTAP version 1')
    print(f'# hlt class, {runs} boots: median {median:.3f} s per run, '
          f'slowest {max(times, default=0):.3f} s, {sum(1 for b in boots if not b[1])} boots failed')
    if times:
        rates = [r['vmexits'] / r['secs'] for _, _, r in boots if r and r['secs']]
        print(f'# VM-exits/s: median {statistics.median(rates):.0f}, lowest {min(rates):.0f}; '
              f'enters per 1000 exits: median '
              f'{statistics.median(1000 * r["enters"] / max(r["vmexits"], 1) for _, _, r in boots if r):.1f}')
    print(f'1..{runs}')
    for i, (name, ok, run) in enumerate(boots, 1):
        why = ''
        if not ok:
            why = f'boot failed (see {name}.console.log)'
        elif run['secs'] > 2 * median:
            why = f'took {run["secs"]:.3f} s, more than twice the median {median:.3f} s'
        detail = (f'{run["secs"]:.3f} s, {run["vmexits"]} VM-exits, {run["faults"]} faults'
                  if run else 'no run')
        print(f'{"not ok" if why else "ok"} {i} {name} # {why or detail}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
