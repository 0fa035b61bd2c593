#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Sum the boot KTAP files written by run-boot.py into one line:
"N passed, N failed, N skipped".  Boots that wrote no KTAP count as one
failure each.  Exit status 1 if anything failed."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap  # noqa: E402


def main(paths):
    total = {'pass': 0, 'fail': 0, 'skip': 0}
    for path in paths:
        if not os.path.isfile(path):
            print(f'not ok {os.path.basename(path)} # no results (boot did not run)')
            total['fail'] += 1
            continue
        cases, problems = ktap.parse(open(path).read())
        for case in cases:
            total[case.status] += 1
            if case.status == 'fail':
                print(f'not ok {os.path.basename(path)[:-5]}: {case.name}'
                      + (f' # {case.detail}' if case.detail else ''))
        for p in problems:
            print(f'not ok {path}: {p}')
            total['fail'] += 1
    print(f'{total["pass"]} passed, {total["fail"]} failed, {total["skip"]} skipped')
    return 1 if total['fail'] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
