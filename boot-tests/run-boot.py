#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot one of our kernels in an emulator, run in-guest tests, and give a verdict.

Two back ends: QEMU (x86_64 and arm64; TCG) and Bochs (x86_64 only; the
one with Intel VMX and AMD SVM with NRIP save).  Both boot the same kernel
and initramfs and are judged by the same rules: the KTAP each test printed,
a clean console (no oops, warning, lockdep or KASAN report, panic, stall)
and a clean power-off within the timeout.  Exit status: 0 pass, 1 fail,
2 harness error.  Writes, under --results: NAME.console.log (the whole
serial console), NAME.TEST.ktap (each test's own KTAP) and NAME.ktap (the
boot's flat list of leaf results, which the check summary counts); Bochs
also leaves NAME.bochs.log (its own messages).
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
    r'rcu.*stall|blocked for more than|double fault|segfault at|'
    # Isolation's safety net caught an access to unmapped data: a path that
    # should have left isolation first.
    r'asi: page fault|'
    # The audit at a VM's end found pages the VM may not map.
    r'isolation audit:')

# Harmless lines that contain one of the words above.
BENIGN = re.compile(r'asi-init:|Unknown kernel command line|'
                    r'Lock dependency validator|lock debugging|'
                    r'\.\.\. MAX_|\.\.\. CHAINHASH|\.\.\. CLASSHASH|'
                    r'memory used by lock dependency info|per task-struct memory footprint')

# The booting kernel's banner, at the start of a console line.  Only the
# first column counts: a test may quote a nested guest's console ("#   Linux
# version ..."), and that is not this kernel booting again.
KERNEL_BANNER = re.compile(r'^(\[\s*\d+\.\d+\] )?Linux version ')

QEMU = {
    'x86_64': ('qemu-system-x86_64', ['-M', 'pc'], 'console=ttyS0'),
    'arm64': ('qemu-system-aarch64', ['-M', 'virt,virtualization=on,gic-version=3'],
              'console=ttyAMA0'),
}

# What Bochs prints when the guest powers off through ACPI: its panic
# action ends it with status 1, but this is the clean way out.
BOCHS_POWER_OFF = '>>PANIC<< ACPI control: soft power off'


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--emulator', choices=('qemu', 'bochs'), default='qemu',
                   help='qemu (TCG; default) or bochs (x86_64: VMX, SVM with NRIP save)')
    p.add_argument('--arch', required=True, choices=QEMU)
    p.add_argument('--kernel', required=True)
    p.add_argument('--initrd', required=True)
    p.add_argument('--name', required=True, help='name of this boot in results')
    p.add_argument('--tests', default='', help='comma-separated in-guest tests')
    p.add_argument('--cpu', help='QEMU -cpu (x86: qemu64,+svm,+npt; arm64: max) or Bochs '
                   'CPU model (corei7_haswell_4770: VMX; trinity_apu: SVM with NRIP save)')
    p.add_argument('--smp', type=int, help='vCPUs (QEMU: 2, Bochs: 1)')
    p.add_argument('--threads', type=int, default=1,
                   help='SMT threads per core, the --smp CPUs being the cores '
                   '(2: sibling threads; Bochs count=1:N:2, QEMU -smp '
                   '2N,sockets=1,cores=N,threads=2, which AMD models show only with '
                   'topoext)')
    p.add_argument('--mem', help='memory (QEMU: 2G, Bochs: 1G)')
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
    p.add_argument('--gdb', action='store_true', help='QEMU: wait for gdb on :1234')
    p.add_argument('--qemu', metavar='BINARY',
                   help='QEMU: the emulator binary (default: the architecture\'s, from PATH)')
    p.add_argument('--quiet', action='store_true', help='no progress lines')
    a = p.parse_args()
    if a.emulator == 'bochs' and (a.arch != 'x86_64' or a.gdb or a.tcg_thread or a.qemu):
        p.error('bochs: x86_64 only, and no --gdb, --tcg-thread or --qemu (Bochs has its own debugger)')
    return a


def mebibytes(size):
    """'2G', '512M' or '512' (MiB) as MiB."""
    m = re.fullmatch(r'(\d+)([MG]?)', size.upper())
    if not m:
        raise ValueError(f'bad memory size {size!r}')
    return int(m.group(1)) * (1024 if m.group(2) == 'G' else 1)


def kernel_append(a, console):
    return (f'{console} panic=-1 oops=panic loglevel=7 '
            f'asi.tests={a.tests} asi.timeout={a.test_timeout} {a.append}').strip()


class Qemu:
    """QEMU with TCG: the kernel and initramfs given directly, console on stdout."""

    def __init__(self, a, log_dir):
        binary, machine, console = QEMU[a.arch]
        self.a = a
        self.cpu = a.cpu or ('qemu64,+svm,+npt' if a.arch == 'x86_64' else 'max,pauth-impdef=on')
        self.smp = a.smp or 2
        # x86_64: QEMU 7.2 with one thread per vCPU now and then runs stale
        # code after the guest kernel patched a static branch, and corrupts
        # nested-paging guests of 4 vCPUs; both go away with one thread.
        thread = a.tcg_thread or ('single' if a.arch == 'x86_64' else 'multi')
        self.cmd = [a.qemu or binary, *machine, '-accel', f'tcg,thread={thread}', '-cpu', self.cpu,
                    '-smp', self.topology(), '-m', a.mem or '2G', '-kernel', a.kernel,
                    '-initrd', a.initrd, '-append', kernel_append(a, console),
                    '-display', 'none', '-monitor', 'none', '-serial', 'stdio', '-no-reboot']
        if a.gdb:
            self.cmd += ['-s', '-S']
        self.proc = None

    def topology(self):
        """-smp: the vCPUs, or cores of sibling threads in one socket."""
        t = self.a.threads
        if t > 1:
            return f'{self.smp * t},sockets=1,cores={self.smp},threads={t}'
        return str(self.smp)

    def version(self):
        out = subprocess.run([self.cmd[0], '--version'], capture_output=True, text=True).stdout
        return f'{shutil.which(self.cmd[0])}: {out.splitlines()[0] if out else "no version"}'

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)

    def read(self, wait):
        """Console bytes; b'' when none came within @wait seconds; None at the end."""
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            return b''
        return os.read(fd, 65536) or None

    def powered_off(self, rc):
        return rc == 0


class Bochs:
    """Bochs: boots an ISO (isolinux, the kernel, the initramfs) made for
    this boot, console from COM1 through a file, its own messages in
    NAME.bochs.log.  Debian's Bochs has its debugger built in and stops
    before the first instruction: it is told to continue, then to quit."""

    def __init__(self, a, log_dir):
        self.cpu = a.cpu or 'corei7_haswell_4770'
        self.smp = a.smp or 1
        self.dir = os.path.join(log_dir, f'{a.name}.bochs')
        self.log_path = os.path.join(log_dir, f'{a.name}.bochs.log')
        self.com1 = os.path.join(self.dir, 'com1')
        self.a = a
        self.cmd = ['bochs', '-q', '-f', os.path.join(self.dir, 'bochsrc'),
                    '-rc', os.path.join(self.dir, 'debugger.rc')]
        self.proc = self.fd = self.log = None

    def count(self):
        """Bochs's processors:cores:threads, or the plain count without SMT."""
        if self.a.threads > 1:
            return f'1:{self.smp}:{self.a.threads}'
        return str(self.smp)

    def version(self):
        out = subprocess.run(['dpkg-query', '-W', '-f=${Version}', 'bochs'], capture_output=True,
                             text=True).stdout
        return f'{shutil.which("bochs")}: Bochs, Debian package {out or "(unknown version)"}'

    def make_iso(self):
        iso_root = os.path.join(self.dir, 'iso')
        os.makedirs(iso_root)
        for src in ('/usr/lib/ISOLINUX/isolinux.bin', '/usr/lib/syslinux/modules/bios/ldlinux.c32'):
            shutil.copy(src, iso_root)
        shutil.copy(self.a.kernel, os.path.join(iso_root, 'bzImage'))
        shutil.copy(self.a.initrd, os.path.join(iso_root, 'initrd.gz'))
        with open(os.path.join(iso_root, 'isolinux.cfg'), 'w') as f:
            f.write('serial 0 115200\ndefault linux\nprompt 0\nlabel linux\n'
                    '  kernel /bzImage\n'
                    f'  append initrd=/initrd.gz {kernel_append(self.a, "console=ttyS0,115200")}\n')
        iso = os.path.join(self.dir, 'boot.iso')
        subprocess.run(['xorriso', '-as', 'mkisofs', '-quiet', '-o', iso, '-b', 'isolinux.bin',
                        '-c', 'boot.cat', '-no-emul-boot', '-boot-load-size', '4',
                        '-boot-info-table', iso_root], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(iso_root)
        return iso

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        iso = self.make_iso()
        rc = f'''megs: {mebibytes(self.a.mem or '1G')}
cpu: model={self.cpu}, count={self.count()}, ips=100000000, reset_on_triple_fault=1, ignore_bad_msrs=1
romimage: file=/usr/share/bochs/BIOS-bochs-latest, options=fastboot
vgaromimage: file=/usr/share/vgabios/vgabios.bin
pci: enabled=1, chipset=i440fx
ata0-master: type=cdrom, path={iso}, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev={self.com1}
clock: sync=none, time0=local
display_library: rfb, options="timeout=0"
mouse: enabled=0
speaker: enabled=0
panic: action=fatal
error: action=report
info: action=ignore
debug: action=ignore
# No sound: the mixer thread of Debian's Bochs 2.7 aborts without a sound card.
sound: driver=dummy
'''
        with open(os.path.join(self.dir, 'bochsrc'), 'w') as f:
            f.write(rc)
        with open(os.path.join(self.dir, 'debugger.rc'), 'w') as f:
            f.write('c\nq\n')
        open(self.com1, 'w').close()
        self.fd = os.open(self.com1, os.O_RDONLY)
        self.log = open(self.log_path, 'w')
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def read(self, wait):
        """Console bytes; b'' when none came within @wait seconds; None at the end."""
        chunk = os.read(self.fd, 65536)
        if chunk:
            return chunk
        if self.proc.poll() is not None:
            return os.read(self.fd, 65536) or None
        time.sleep(min(wait, 0.2))
        return b''

    def powered_off(self, rc):
        self.log.flush()
        with open(self.log_path, errors='replace') as f:
            said_off = BOCHS_POWER_OFF in f.read()
        return rc == 0 or (rc == 1 and said_off)


def run(emu, name, log_path, timeout, quiet):
    """Run the emulator, copying its console to log_path.

    Returns (lines, rc, why): why is '' when it ended by itself, else
    what stopped it (the timeout, or a second kernel boot: a reboot).
    """
    lines, buf, why, boots = [], b'', '', 0
    deadline = time.monotonic() + timeout
    with open(log_path, 'w', errors='replace') as log:
        log.write(f'# emulator: {emu.version()}\n')
        emu.start()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = f'timed out after {timeout}s'
                break
            chunk = emu.read(min(left, 5))
            if chunk is None:
                break
            buf += chunk
            *complete, buf = buf.split(b'\n')
            for raw in complete:
                line = raw.decode('utf-8', 'replace').rstrip('\r')
                lines.append(line)
                log.write(line + '\n')
                boots += bool(KERNEL_BANNER.match(line))
                if not quiet and (line.startswith('asi-init: running') or
                                  (BADNESS.search(line) and not BENIGN.search(line))):
                    print(f'    | {name}: {line}', flush=True)
            log.flush()
            # Bochs resets instead of stopping (QEMU has -no-reboot).
            if boots > 1:
                why = 'the kernel rebooted (panic, or a triple fault)'
                break
        if why:
            emu.proc.kill()
        if buf:
            line = buf.decode('utf-8', 'replace').rstrip('\r')
            lines.append(line)
            log.write(line + '\n')
        rc = emu.proc.wait()
    return lines, rc, why


# Lines a kernel stack dump is made of (x86 and arm64): an allowed trace
# covers these and nothing else.
TRACE_LINE = re.compile(
    r'^(\s|CPU: \d|Hardware name:|Workqueue: |Modules linked in:|RIP: |Code: |RSP: |'
    r'RAX: |RDX: |RBP: |R1[03]: |'
    r'FS: |CS: |CR2: |DR[036]: |PKRU: |Call [Tt]race:|Sending NMI from|'
    r'pc : |lr : |sp : |pstate: |x\d+: )')


def console_problems(lines, allow):
    """Badness lines outside the KTAP dump and outside allowed traces.

    An allowed trace starts at a line matching one of @allow and ends after
    its </TASK>, or before the first line that is not part of a stack dump
    (a one-line "NMI backtrace ... skipped" has no body at all).
    """
    bad, in_dump, in_trace = [], False, False
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
            in_trace = True
            continue
        if in_trace and TRACE_LINE.match(line):
            in_trace = '</TASK>' not in line
            continue
        in_trace = False
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


AUDIT_PARAM = re.compile(r'(^|\s)kvm\.isolation_audit=(1|y|Y)(\s|$)')
AUDITS = re.compile(r'asi-init: isolation audits: (.*)')
AUDIT_COUNTS = re.compile(r'(\d+) VMs audited, (\d+) with findings$')


def audit_case(append, lines):
    """With kvm.isolation_audit=1, every VM was audited as it went: at
    least one, and none with a finding (a finding also prints an error).
    Nothing excuses a missing audit."""
    if not AUDIT_PARAM.search(append):
        return []
    found = [m for m in map(AUDITS.search, lines) if m]
    if not found:
        return [ktap.Case('isolation_audit', 'fail', 'no audit report (asi-init did not say)')]
    said = found[-1].group(1).strip()
    m = AUDIT_COUNTS.fullmatch(said)
    if not m:
        return [ktap.Case('isolation_audit', 'fail', said)]
    audited, findings = int(m.group(1)), int(m.group(2))
    if not audited:
        return [ktap.Case('isolation_audit', 'fail', 'no VM was audited')]
    return [ktap.Case('isolation_audit', 'fail' if findings else 'pass',
                      f'{audited} VMs audited, {findings} with findings')]


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
    emu = (Bochs if a.emulator == 'bochs' else Qemu)(a, a.results)
    for path in (a.kernel, a.initrd):
        if not os.path.isfile(path):
            print(f'run-boot: {path} does not exist', file=sys.stderr)
            return 2
    if not shutil.which(emu.cmd[0]):
        print(f'run-boot: {emu.cmd[0]} not found (run "make deps")', file=sys.stderr)
        return 2

    log_path = os.path.join(a.results, f'{a.name}.console.log')
    if not a.quiet:
        print(f'==> booting {a.name}: {a.arch} on {a.emulator}, cpu {emu.cpu}, '
              f'{emu.smp} vCPU(s){f" x {a.threads} threads" if a.threads > 1 else ""}, '
              f'tests: {a.tests or "none"}', flush=True)
    start = time.monotonic()
    lines, rc, why = run(emu, a.name, log_path, a.timeout, a.quiet)
    secs = time.monotonic() - start

    if not why and not emu.powered_off(rc) and not any(KERNEL_BANNER.match(ln) for ln in lines):
        print(f'run-boot: {a.emulator} exited {rc} before the kernel printed anything:',
              file=sys.stderr)
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

    cases += audit_case(a.append, lines)
    bad = console_problems(lines, a.allow_trace)
    cases.append(ktap.Case('console_clean', 'fail' if bad else 'pass',
                           f'{len(bad)} bad lines, first: {bad[0]}' if bad else ''))
    powered_off = (not why and emu.powered_off(rc) and any('ASI-INIT-DONE' in ln for ln in lines)
                   and any('reboot: Power down' in ln for ln in lines))
    why = why or (f'{a.emulator} exited {rc}' if not emu.powered_off(rc) else
                  'no clean power-off (panic or reboot?)')
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
