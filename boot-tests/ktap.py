# SPDX-License-Identifier: GPL-2.0
"""KTAP parsing shared by the QEMU runner and the check summary.

Only what our tests and KUnit print is understood: "KTAP version 1", plans
("1..N", optionally "# SKIP reason"), results ("ok N name # SKIP reason",
"not ok N name", "not ok N name # TODO reason"), diagnostics ("# ..."), and nesting by four-space indent.
"""

import re

RESULT = re.compile(r'^(?P<indent> *)(?P<ok>not ok|ok) (?P<num>\d+)(?: -)? ?(?P<name>[^#]*?)\s*(?:#\s*(?P<directive>.*))?$')
PLAN = re.compile(r'^(?P<indent> *)1\.\.(?P<n>\d+)\s*(?:#\s*(?P<directive>.*))?$')


class Case:
    """One leaf result."""

    def __init__(self, name, status, detail=''):
        self.name = name
        self.status = status          # 'pass' | 'fail' | 'skip'
        self.detail = detail

    def __repr__(self):
        return f'{self.status}: {self.name}'


def _status(ok, directive):
    d = (directive or '').strip().upper()
    # A TODO case is a known failure, counted with the skips; one that
    # passes is a pass.
    if d.startswith('SKIP') or (d.startswith('TODO') and ok != 'ok'):
        return 'skip'
    return 'pass' if ok == 'ok' else 'fail'


def parse(text, prefix=''):
    """Return (leaf cases, problems) for one KTAP document.

    A result line is a leaf unless deeper-indented KTAP lines came before it
    since the previous result at its level; then it closes a subtest.  A
    subtest reported "not ok" whose children all passed counts as a failure
    of its own.  Problems are top-level plan mismatches (a crashed or
    truncated test prints fewer results than it planned).
    """
    cases, problems = [], []
    open_blocks = {}         # indent -> index into cases where its children began
    names = {}               # indent -> "# Subtest:" name at that indent
    top_indent, top_plan, top_results = None, None, 0

    def note_line(ind):
        # Any KTAP line at indent ind opens a child block for shallower levels.
        for k in range(0, ind, 2):
            open_blocks.setdefault(k, len(cases))

    for raw in text.splitlines():
        line = raw.rstrip()
        m = PLAN.match(line)
        if m:
            ind = len(m.group('indent'))
            if top_indent is None or ind < top_indent:
                top_indent, top_plan = ind, int(m.group('n'))
                if top_plan == 0:
                    why = re.sub(r'^SKIP\s*', '', (m.group('directive') or '').strip())
                    cases.append(Case(prefix.rstrip('.') or 'all', 'skip', why))
            else:
                note_line(ind)
            continue
        m = re.match(r'^( *)# Subtest: (.*)$', line)
        if m:
            ind = len(m.group(1))
            names[ind] = m.group(2).strip()
            note_line(ind)
            continue
        m = RESULT.match(line)
        if not m:
            continue
        ind = len(m.group('indent'))
        note_line(ind)
        if top_indent is not None and ind == top_indent:
            top_results += 1
        name = m.group('name').strip() or m.group('num')
        first_child = open_blocks.pop(ind, None)
        for k in [k for k in open_blocks if k > ind]:
            del open_blocks[k]
        path = [names[k] for k in sorted(names) if k <= ind]
        for k in [k for k in names if k > ind]:
            del names[k]
        full = prefix + '.'.join(path + [name])
        if first_child is not None:
            children = cases[first_child:]
            if m.group('ok') == 'not ok' and not any(c.status == 'fail' for c in children):
                cases.append(Case(full, 'fail', 'subtest failed with no failed case'))
            continue
        cases.append(Case(full, _status(m.group('ok'), m.group('directive')),
                          (m.group('directive') or '').strip()))
    if top_plan is None:
        problems.append('no KTAP plan')
    elif top_plan and top_results != top_plan:
        problems.append(f'plan says {top_plan} results, got {top_results}')
    return cases, problems


def counts(cases):
    c = {'pass': 0, 'fail': 0, 'skip': 0}
    for case in cases:
        c[case.status] += 1
    return c
