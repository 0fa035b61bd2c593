#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot one of our kernels in QEMU, run in-guest tests, and give a verdict.

The verdict combines the KTAP each test printed, a clean console (no oops,
warning, lockdep or KASAN report, panic, stall) and a clean power-off within
the timeout.  Exit status: 0 pass, 1 fail, 2 harness error.  Writes, under
--results: NAME.console.log (the whole serial console), NAME.TEST.ktap (each
test's own KTAP) and NAME.ktap (the boot's flat list of leaf results, which
the check summary counts).
"""

import argparse
import os
import re
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ktap  # noqa: E402

BADNESS = re.compile(
    r'BUG:|WARNING:|Oops|Call Trace|Call trace:|Kernel panic|kernel BUG|'
    r'general protection fault|Unable to handle kernel|'
    r'INFO: (possible|trying to register|task|rcu)|KASAN|UBSAN|soft lockup|hard LOCKUP|'
    r'rcu.*stall|blocked for more than|double fault|segfault at')

# Harmless lines that contain one of the words above.
BENIGN = re.compile(r'asi-init:|Unknown kernel command line|'
                    r'Lock dependency validator|lock debugging|'
                    r'\.\.\. MAX_|\.\.\. CHAINHASH|\.\.\. CLASSHASH|'
                    r'memory used by lock dependency info|per task-struct memory footprint')

QEMU = {
    'x86_64': ('qemu-system-x86_64', ['-M', 'pc'], 'console=ttyS0'),
    'arm64': ('qemu-system-aarch64', ['-M', 'virt,virtualization=on,gic-version=3'],
              'console=ttyAMA0'),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--arch', required=True, choices=QEMU)
    p.add_argument('--kernel', required=True)
    p.add_argument('--initrd', required=True)
    p.add_argument('--name', required=True, help='name of this boot in results')
    p.add_argument('--tests', default='', help='comma-separated in-guest tests')
    p.add_argument('--cpu', help='QEMU -cpu (x86: qemu64,+svm,+npt; arm64: max)')
    p.add_argument('--smp', type=int, default=2)
    p.add_argument('--mem', default='2G')
    p.add_argument('--tcg-thread', choices=('multi', 'single'),
                   help='QEMU TCG threading: one host thread per vCPU, or one for all '
                   '(default: single on x86_64, see README "Known limits"; multi on arm64)')
    p.add_argument('--append', default='', help='extra kernel parameters')
    p.add_argument('--timeout', type=int, default=900, help='seconds for the whole boot')
    p.add_argument('--test-timeout', type=int, default=600, help='seconds per in-guest test')
    p.add_argument('--results', default='build/results')
    p.add_argument('--allow-trace', action='append', default=[], metavar='REGEX',
                   help='a console line that starts an expected stack trace '
                        '(accepted up to the next </TASK>)')
    p.add_argument('--baseline', action='append', default=[], metavar='TEST=FILE',
                   help='judge TEST against recorded verdicts: only regressions fail')
    p.add_argument('--gdb', action='store_true', help='wait for gdb on :1234')
    p.add_argument('--quiet', action='store_true', help='no progress lines')
    return p.parse_args()


def qemu_command(a):
    binary, machine, console = QEMU[a.arch]
    cpu = a.cpu or ('qemu64,+svm,+npt' if a.arch == 'x86_64' else 'max,pauth-impdef=on')
    append = (f'{console} panic=-1 oops=panic loglevel=7 '
              f'asi.tests={a.tests} asi.timeout={a.test_timeout} {a.append}').strip()
    # x86_64: QEMU 7.2 with one thread per vCPU now and then runs stale
    # code after the guest kernel patched a static branch, and corrupts
    # nested-paging guests of 4 vCPUs; both go away with one thread.
    thread = a.tcg_thread or ('single' if a.arch == 'x86_64' else 'multi')
    cmd = [binary, *machine, '-accel', f'tcg,thread={thread}', '-cpu', cpu,
           '-smp', str(a.smp), '-m', a.mem, '-kernel', a.kernel, '-initrd', a.initrd,
           '-append', append, '-display', 'none', '-monitor', 'none',
           '-serial', 'stdio', '-no-reboot']
    if a.gdb:
        cmd += ['-s', '-S']
    return cmd


def run(cmd, log_path, timeout, quiet):
    """Run QEMU, copying its console to log_path; return (lines, rc, timed_out)."""
    lines, buf = [], b''
    deadline = time.monotonic() + timeout
    with open(log_path, 'w', errors='replace') as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        fd = proc.stdout.fileno()
        timed_out = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                proc.kill()
                break
            ready, _, _ = select.select([fd], [], [], min(left, 5))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            *complete, buf = buf.split(b'\n')
            for raw in complete:
                line = raw.decode('utf-8', 'replace').rstrip('\r')
                lines.append(line)
                log.write(line + '\n')
                if not quiet and (line.startswith('asi-init: running') or
                                  (BADNESS.search(line) and not BENIGN.search(line))):
                    print(f'    | {line}', flush=True)
            log.flush()
        if buf:
            line = buf.decode('utf-8', 'replace').rstrip('\r')
            lines.append(line)
            log.write(line + '\n')
        rc = proc.wait()
    return lines, rc, timed_out


def console_problems(lines, allow):
    """Badness lines outside the KTAP dump and outside allowed traces."""
    bad, in_dump, allowed_left = [], False, 0
    allow_re = [re.compile(r) for r in allow]
    for line in lines:
        if line.startswith('ASI-KTAP-BEGIN'):
            in_dump = True
        elif line.startswith('ASI-KTAP-END'):
            in_dump = False
            continue
        if in_dump:
            continue
        if any(r.search(line) for r in allow_re):
            allowed_left = 200
        if allowed_left:
            allowed_left -= 1
            if '</TASK>' in line:
                allowed_left = 0
            continue
        if BADNESS.search(line) and not BENIGN.search(line):
            bad.append(line)
    return bad


def test_blocks(lines):
    """{test: (ktap text, rc)} from the ASI-KTAP-BEGIN/END markers."""
    blocks, cur, body = {}, None, []
    for line in lines:
        m = re.match(r'^ASI-KTAP-BEGIN (\S+)$', line)
        if m:
            cur, body = m.group(1), []
            continue
        m = re.match(r'^ASI-KTAP-END (\S+) rc=(\d+)$', line)
        if m and cur == m.group(1):
            blocks[cur] = ('\n'.join(body) + '\n', int(m.group(2)))
            cur = None
            continue
        if cur:
            body.append(line)
    return blocks


def test_cases(name, text, rc, judged_later=False):
    """The KTAP cases of one in-guest test, plus an '.exit' case for each way
    its exit status disagrees with them.  A test judged against a baseline
    reports failures and exits 0 by design (@judged_later)."""
    cases, problems = ktap.parse(text, prefix=f'{name}.')
    c = ktap.counts(cases)
    if rc == 0 and c['fail'] and not judged_later:
        problems.append('exited 0 but reported failures')
    elif rc == 4 and (c['pass'] or c['fail']) and not c['skip']:
        problems.append('exited 4 (skip) but reported results')
    elif rc not in (0, 1, 4):
        problems.append(f'exited {rc}' + (' (timed out)' if rc in (124, 137, 143) else ''))
    elif rc == 1 and not c['fail']:
        problems.append('exited 1 (fail) with no failed case')
    for p in problems:
        cases.append(ktap.Case(f'{name}.exit', 'fail', p))
    return cases


RANK = {'fail': 0, 'skip': 1, 'pass': 2}


def against_baseline(test, cases, path):
    """Turn raw verdicts into regressions against the baseline file.

    A case no worse than its baseline passes (or is a skip if it skipped or
    failed as recorded); a worse one fails; a recorded case that did not run
    fails.  The raw verdict stays in the detail.
    """
    base = {}
    for line in open(path):
        line = line.split('#', 1)[0].split()
        if len(line) == 2:
            base[f'{test}.{line[0]}'] = line[1]
    out, seen = [], set()
    for c in cases:
        want = base.get(c.name)
        seen.add(c.name)
        if want is None:
            out.append(ktap.Case(c.name, c.status, f'not in baseline; {c.detail}'.strip('; ')))
        elif RANK[c.status] < RANK[want]:
            out.append(ktap.Case(c.name, 'fail', f'regression: baseline {want}, now {c.status} {c.detail}'.strip()))
        elif c.status == 'pass':
            out.append(ktap.Case(c.name, 'pass', '' if want == 'pass' else f'baseline {want}'))
        else:
            out.append(ktap.Case(c.name, 'skip', f'{c.status} as in baseline {c.detail}'.strip()))
    for name in sorted(set(base) - seen):
        out.append(ktap.Case(name, 'fail', f'in baseline ({base[name]}) but did not run'))
    return out


def write_boot_ktap(path, name, cases):
    with open(path, 'w') as f:
        f.write(f'KTAP version 1\n# {name}\n1..{len(cases)}\n')
        for i, c in enumerate(cases, 1):
            ok = 'not ok' if c.status == 'fail' else 'ok'
            directive = ' # SKIP' + (f' {c.detail}' if c.detail else '') if c.status == 'skip' else (
                f' # {c.detail}' if c.detail else '')
            f.write(f'{ok} {i} {c.name}{directive}\n')


def main():
    a = parse_args()
    os.makedirs(a.results, exist_ok=True)
    cmd = qemu_command(a)
    for path in (a.kernel, a.initrd):
        if not os.path.isfile(path):
            print(f'run-qemu: {path} does not exist', file=sys.stderr)
            return 2
    if not shutil.which(cmd[0]):
        print(f'run-qemu: {cmd[0]} not found (run "make deps")', file=sys.stderr)
        return 2

    log_path = os.path.join(a.results, f'{a.name}.console.log')
    if not a.quiet:
        print(f'==> booting {a.name}: {a.arch} -cpu {cmd[cmd.index("-cpu") + 1]} '
              f'-smp {a.smp}, tests: {a.tests or "none"}', flush=True)
    start = time.monotonic()
    lines, rc, timed_out = run(cmd, log_path, a.timeout, a.quiet)
    secs = time.monotonic() - start

    if rc != 0 and not timed_out and not any('Linux version' in ln for ln in lines):
        print(f'run-qemu: QEMU exited {rc} before the kernel printed anything:', file=sys.stderr)
        print('\n'.join(lines[-20:]), file=sys.stderr)
        return 2

    baselines = dict(b.split('=', 1) for b in a.baseline)
    cases = []
    blocks = test_blocks(lines)
    for t in [t for t in a.tests.split(',') if t]:
        if t not in blocks:
            cases.append(ktap.Case(f'{t}.exit', 'fail', 'no result (test did not finish)'))
            continue
        text, trc = blocks[t]
        with open(os.path.join(a.results, f'{a.name}.{t}.ktap'), 'w') as f:
            f.write(text)
        if t in baselines:
            cases += against_baseline(t, test_cases(t, text, trc, True), baselines[t])
        else:
            cases += test_cases(t, text, trc)

    bad = console_problems(lines, a.allow_trace)
    cases.append(ktap.Case('console_clean', 'fail' if bad else 'pass',
                           f'{len(bad)} bad lines, first: {bad[0]}' if bad else ''))
    powered_off = (not timed_out and rc == 0 and any('ASI-INIT-DONE' in ln for ln in lines)
                   and any('reboot: Power down' in ln for ln in lines))
    why = (f'timed out after {a.timeout}s' if timed_out else
           f'QEMU exited {rc}' if rc else 'no clean power-off (panic or reboot?)')
    cases.append(ktap.Case('clean_poweroff', 'pass' if powered_off else 'fail',
                           '' if powered_off else why))

    write_boot_ktap(os.path.join(a.results, f'{a.name}.ktap'), a.name, cases)
    c = ktap.counts(cases)
    verdict = 'FAIL' if c['fail'] else 'PASS'
    print(f'{verdict} {a.name}: {c["pass"]} passed, {c["fail"]} failed, {c["skip"]} skipped '
          f'in {secs:.0f}s (console: {log_path})', flush=True)
    for case in cases:
        if case.status == 'fail':
            print(f'    not ok {case.name}' + (f' # {case.detail}' if case.detail else ''))
    return 1 if c['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
