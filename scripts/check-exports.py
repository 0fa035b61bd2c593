#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What the isolation layer (arch/x86/mm/asi*) and KVM's isolation code
export, read from the built x86_64 tree: every export is namespaced to KVM
and called by a KVM module, none is per-CPU data or other writable data (a
static key excepted), and none is entry code (.noinstr.text: the helpers
that write CR3 for NMI, #MC, #DB and page faults).  Known symbols must be
read as what they are, and a planted export of each kind must be caught,
or the checks could not fail.  KTAP to stdout.

usage: check-exports.py <object dir>
"""
import subprocess
import sys
from pathlib import Path

OBJECTS = ['arch/x86/mm/asi*.o', 'arch/x86/kvm/isolation*.o']
MODULES = ['arch/x86/kvm/kvm.ko', 'arch/x86/kvm/kvm-amd.ko', 'arch/x86/kvm/kvm-intel.ko']
# (name, section prefix, kind) that the object reading must get right.
ANCHORS = [('asi_enter', ('.text',), 'F'), ('asi_enabled_key', ('.data', '.bss'), 'O')]
NAMESPACE = 'KVM'
# Writable data that may be exported: a static key, which modules only test.
DATA_ALLOWED = {'asi_enabled_key'}


def defined_symbols(obj):
    """name -> (section, kind) of the global symbols @obj defines."""
    out = subprocess.run(['objdump', '-t', str(obj)], check=True, capture_output=True,
                         text=True).stdout
    syms = {}
    for line in out.splitlines():
        # 0000000000000000 g     F .text	0000000000000042 name
        parts = line.split()
        if len(parts) < 6 or ' g ' not in line[:20]:
            continue
        section = parts[-3]
        kind = 'F' if ' F ' in line else 'O' if ' O ' in line else '?'
        syms[parts[-1]] = (section, kind)
    return syms


def exports(symvers):
    """name -> namespace of every export in Module.symvers."""
    res = {}
    for line in symvers.read_text().splitlines():
        f = line.split('\t')
        if len(f) >= 4:
            res[f[1]] = f[4] if len(f) > 4 else ''
    return res


def undefined(ko):
    """The symbols a module takes from elsewhere."""
    out = subprocess.run(['nm', '-u', str(ko)], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def findings(ours, used):
    """The checks over {name: (section, kind, namespace)}: check -> bad names."""
    return {
        'exports_namespaced_to_kvm':
            sorted(n for n, (_, _, ns) in ours.items() if ns != NAMESPACE),
        'exports_used_by_kvm_modules':
            sorted(n for n in ours if n not in used),
        'no_per_cpu_data_exported':
            sorted(n for n, (sec, _, _) in ours.items() if sec.startswith('.data..percpu')),
        'no_writable_data_exported':
            sorted(n for n, (sec, kind, _) in ours.items()
                   if kind == 'O' and not sec.startswith('.rodata') and
                   not sec.startswith('.data..percpu') and n not in DATA_ALLOWED),
        'no_entry_code_exported':
            sorted(n for n, (sec, _, _) in ours.items() if sec.startswith('.noinstr')),
    }


def main():
    objdir = Path(sys.argv[1])
    symvers = objdir / 'Module.symvers'
    objects = sorted(o for pattern in OBJECTS for o in objdir.glob(pattern)
                     if not o.name.endswith('.mod.o'))
    missing = [m for m in MODULES if not (objdir / m).exists()]
    missing += [p for p in OBJECTS if not any(o.match(p) for o in objects)]
    print('KTAP version 1')
    print('# exports of the isolation layer and of KVM\'s isolation code')
    if missing or not symvers.exists():
        print('1..1')
        print(f'# not built: {" ".join(missing) or symvers}')
        print('not ok 1 exports_readable')
        return 1
    exported = exports(symvers)
    ours = {}
    syms = {}
    for o in objects:
        syms.update(defined_symbols(o))
    for name, (sec, kind) in syms.items():
        if name in exported:
            ours[name] = (sec, kind, exported[name])
    used = set().union(*(undefined(objdir / m) for m in MODULES))
    print(f'# {len(objects)} objects, {len(ours)} exports: {" ".join(sorted(ours))}')
    misread = [f'{n} ({syms.get(n)})' for n, sec, kind in ANCHORS
               if n not in ours or not syms[n][0].startswith(sec) or syms[n][1] != kind]
    res = findings(ours, used)
    # The positive control: one planted export of each kind, each caught by its check.
    planted = dict(ours)
    planted.update({'planted_plain': ('.text', 'F', ''),
                    'planted_unused': ('.text', 'F', NAMESPACE),
                    'planted_percpu': ('.data..percpu', 'O', NAMESPACE),
                    'planted_data': ('.data', 'O', NAMESPACE),
                    'planted_noinstr': ('.noinstr.text', 'F', NAMESPACE)})
    caught = findings(planted, used | (set(planted) - {'planted_unused'}))
    expect = {'exports_namespaced_to_kvm': 'planted_plain',
              'exports_used_by_kvm_modules': 'planted_unused',
              'no_per_cpu_data_exported': 'planted_percpu',
              'no_writable_data_exported': 'planted_data',
              'no_entry_code_exported': 'planted_noinstr'}
    print(f'1..{len(res) + 2}')
    rc = 0
    n = 1
    if misread:
        print(f'# read wrongly or not found: {" ".join(misread)}')
    print(f'{"not ok" if misread else "ok"} {n} known_exports_read_right')
    rc |= bool(misread)
    for check, bad in res.items():
        n += 1
        if bad:
            print(f'# {check}: {" ".join(bad)}')
        print(f'{"not ok" if bad else "ok"} {n} {check}')
        rc |= bool(bad)
    n += 1
    missed = [c for c, name in expect.items() if name not in caught[c]]
    if missed:
        print(f'# planted exports not caught by: {" ".join(missed)}')
    print(f'{"not ok" if missed else "ok"} {n} planted_exports_caught')
    rc |= bool(missed)
    return rc


if __name__ == '__main__':
    sys.exit(main())
