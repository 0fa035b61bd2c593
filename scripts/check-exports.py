#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What the isolation layer (arch/x86/mm/asi*) and KVM's isolation code
export, and what they build, read from a built x86_64 object directory.

Every export is namespaced (the layer's to ASI, KVM's own to KVM) and
called by a KVM module; none is per-CPU or other writable data (a static
key excepted) and none is entry code (.noinstr.text: the helpers that write
CR3 for NMI, #MC, #DB and page faults), but for the trip's flushes and
whether they cover L1D, which VM-entry's noinstr code calls.  Known symbols must be read as what they
are, and a planted export of each kind must be caught, or the checks could
not fail.

With --production (a configuration without the debugging aids and tests),
none of the debugging aids' symbols may be defined, in the layer or in
KVM: the audit, the search, the canary, the CR3 check, the debugfs check.
Without it, every one of them must be (the control: the symbol list still
names what the debugging option builds).

Exports are read from the objects themselves (__ksymtab_* entries and
their namespace strings), callers from the KVM modules' composite objects,
so that a directory built only in part (arch/x86/mm and arch/x86/kvm, as
check-production.sh builds it) can be checked.  KTAP to stdout.

usage: check-exports.py [--production] <object dir>
"""
import re
import subprocess
import sys
from pathlib import Path

OBJECTS = {'arch/x86/mm/asi*.o': 'ASI', 'arch/x86/kvm/isolation*.o': 'KVM'}
MODULES = ['arch/x86/kvm/kvm.o', 'arch/x86/kvm/kvm-amd.o', 'arch/x86/kvm/kvm-intel.o']
# (name, section prefix, kind) that the object reading must get right.
ANCHORS = [('asi_enter', ('.text',), 'F'), ('asi_enabled_key', ('.data', '.bss'), 'O')]
# Writable data that may be exported: a static key, which modules only test.
DATA_ALLOWED = {'asi_enabled_key'}
# noinstr code that may be exported: what VM-entry's noinstr code calls.
NOINSTR_ALLOWED = {'__asi_flush_trip', '__asi_covers_l1d', 'asi_vmexit_ibpb'}
# What CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG alone builds.
DEBUG_SYMBOLS = ['asi_audit', 'asi_find', 'asi_maps_any', 'asi_maps_allocation',
                 'asi_ranges_show', 'asi_show_summary', 'asi_ptdump', 'asi_arm_canary',
                 'asi_touch_canary', 'asi_check_cr3', 'kvm_x86_isolation_debug_init',
                 'kvm_x86_isolation_audit', 'kvm_x86_isolation_plant_audit_control']


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def defined_symbols(obj):
    """name -> (section, kind) of the global symbols @obj defines."""
    syms = {}
    for line in run('objdump', '-t', str(obj)).splitlines():
        # 0000000000000000 g     F .text	0000000000000042 name
        parts = line.split()
        if len(parts) < 6 or ' g ' not in line[:20]:
            continue
        kind = 'F' if ' F ' in line else 'O' if ' O ' in line else '?'
        syms[parts[-1]] = (parts[-3], kind)
    return syms


def exports(obj):
    """name -> namespace of every symbol @obj exports."""
    strings = {}
    for line in run('readelf', '-p', '__ksymtab_strings', str(obj)).splitlines():
        m = re.match(r'\s*\[\s*([0-9a-f]+)\]\s+(\S+)', line)
        if m:
            strings[int(m.group(1), 16)] = m.group(2)
    res = {}
    for line in run('objdump', '-t', str(obj)).splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        name = parts[-1]
        if name.startswith('__ksymtab_') and not name.startswith('__ksymtab_strings'):
            res.setdefault(name[len('__ksymtab_'):], '')
        elif name.startswith('__kstrtabns_'):
            res[name[len('__kstrtabns_'):]] = strings.get(int(parts[0], 16), '?')
    return res


def undefined(obj):
    """The symbols an object takes from elsewhere."""
    return {line.split()[-1] for line in run('nm', '-u', str(obj)).splitlines() if line.strip()}


def findings(ours, used):
    """The checks over {name: (section, kind, namespace, expected)}: check -> bad names."""
    return {
        'exports_namespaced':
            sorted(n for n, (_, _, ns, want) in ours.items() if ns != want),
        'exports_used_by_kvm_modules':
            sorted(n for n in ours if n not in used),
        'no_per_cpu_data_exported':
            sorted(n for n, (sec, _, _, _) in ours.items()
                   if sec.startswith('.data..percpu') and n not in DATA_ALLOWED),
        'no_writable_data_exported':
            sorted(n for n, (sec, kind, _, _) in ours.items()
                   if kind == 'O' and not sec.startswith('.rodata') and n not in DATA_ALLOWED),
        'no_entry_code_exported':
            sorted(n for n, (sec, _, _, _) in ours.items()
                   if sec.startswith('.noinstr') and n not in NOINSTR_ALLOWED),
    }


def main():
    args = sys.argv[1:]
    production = '--production' in args
    args = [a for a in args if a != '--production']
    objdir = Path(args[0])
    objects = {o: ns for pattern, ns in OBJECTS.items() for o in sorted(objdir.glob(pattern))
               if not o.name.endswith('.mod.o')}
    missing = [m for m in MODULES if not (objdir / m).exists()]
    missing += [p for p in OBJECTS if not any(o.match(p) for o in objects)]
    config = 'production' if production else 'test'
    print('KTAP version 1')
    print(f'# exports of the isolation layer and of KVM\'s isolation code ({config} configuration)')
    if missing:
        print('1..1')
        print(f'# not built: {" ".join(missing)}')
        print('not ok 1 exports_readable')
        return 1
    ours = {}
    syms = {}
    for o, want in objects.items():
        defined = defined_symbols(o)
        syms.update(defined)
        for name, ns in exports(o).items():
            sec, kind = defined.get(name, ('?', '?'))
            ours[name] = (sec, kind, ns, want)
    used = set().union(*(undefined(objdir / m) for m in MODULES))
    print(f'# {len(objects)} objects, {len(ours)} exports: {" ".join(sorted(ours))}')
    misread = [f'{n} ({syms.get(n)})' for n, sec, kind in ANCHORS
               if n not in ours or not syms[n][0].startswith(sec) or syms[n][1] != kind]
    res = findings(ours, used)
    # The positive control: one planted export of each kind, each caught by its check.
    planted = dict(ours)
    planted.update({'planted_plain': ('.text', 'F', '', 'ASI'),
                    'planted_unused': ('.text', 'F', 'ASI', 'ASI'),
                    'planted_percpu': ('.data..percpu', 'O', 'ASI', 'ASI'),
                    'planted_data': ('.data', 'O', 'ASI', 'ASI'),
                    'planted_noinstr': ('.noinstr.text', 'F', 'ASI', 'ASI')})
    caught = findings(planted, used | (set(planted) - {'planted_unused'}))
    expect = {'exports_namespaced': 'planted_plain',
              'exports_used_by_kvm_modules': 'planted_unused',
              'no_per_cpu_data_exported': 'planted_percpu',
              'no_writable_data_exported': 'planted_data',
              'no_entry_code_exported': 'planted_noinstr'}
    debug_defined = sorted(s for s in DEBUG_SYMBOLS if s in syms)
    debug_missing = sorted(s for s in DEBUG_SYMBOLS if s not in syms)
    print(f'1..{len(res) + 3}')
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
    n += 1
    if production:
        if debug_defined:
            print(f'# built without the debugging option, yet defined: {" ".join(debug_defined)}')
        print(f'{"not ok" if debug_defined else "ok"} {n} no_debugging_aids_built')
        rc |= bool(debug_defined)
    else:
        if debug_missing:
            print(f'# built with the debugging option, yet not defined: {" ".join(debug_missing)}')
        print(f'{"not ok" if debug_missing else "ok"} {n} debugging_aids_built')
        rc |= bool(debug_missing)
    return rc


if __name__ == '__main__':
    sys.exit(main())
