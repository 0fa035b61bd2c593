#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Pair the kvm-bench runs of a boot with isolation off and one with it on.

Reads the "# bench {...}" lines of both boots' KTAP, pairs runs by kind,
class, VMs, vCPUs and repetition, and prints per class: VM-exits per second
off and on (median and spread over the repetitions), the on/off ratio
(computed pair by pair), isolation enters and exits per 1000 VM-exits,
isolation faults, and per 1000 VM-exits of the run with isolation on: trips
flushed at VM-entry, and the flushes performed by kind (L1D: the isolation
layer's and VMX's own; VERW: the layer's, besides KVM's VERW on every
VM-entry where the CPU needs it, which is not counted).  Writes the runs
and the summary to JSON.  Exit status 1 when a criterion fails.

With a third run (--against-always FILE: isolation off, VMX flushing L1D
on every VM-entry), a second table compares it with the run with
isolation on, which flushes only after trips: what isolation buys.
"""

import json
import statistics
import sys

CLASS_ORDER = ['cpuid', 'msr', 'pio_kernel', 'pio_user', 'mmio_user', 'hlt', 'page_fault']


def runs(path):
    out = []
    for line in open(path):
        if line.startswith('# bench '):
            out.append(json.loads(line[len('# bench '):]))
    return out


def med(values):
    return statistics.median(values) if values else 0.0


def spread(values):
    return (min(values), max(values)) if values else (0.0, 0.0)


def ibpb_per_1000(r):
    """IBPBs per 1000 VM-exits where the kernel asks one after each VM-exit:
    one per VM-exit that did not defer it, one per move out that ran the
    deferred ones; None where it does not ask."""
    if not r.get('ibpb_on_vmexit'):
        return None
    return 1000.0 * (r['vmexits'] - r['ibpb_deferred'] + r['flush_ibpb']) / r['vmexits']


def summarize(off, on):
    key = lambda r: (r['kind'], r['class'], r['vms'], r['vcpus'], r['rep'])
    offs = {key(r): r for r in off}
    groups = {}
    for r in on:
        o = offs.get(key(r))
        if not o or not r['secs'] or not o['secs'] or not r['vmexits'] or not o['vmexits']:
            continue
        g = groups.setdefault((r['kind'], r['class'], r['vms'], r['vcpus']), [])
        rate_on, rate_off = r['vmexits'] / r['secs'], o['vmexits'] / o['secs']
        g.append({
            'rate_off': rate_off, 'rate_on': rate_on, 'ratio': rate_on / rate_off,
            'enters_per_1000': 1000.0 * r['enters'] / r['vmexits'],
            'exits_per_1000': 1000.0 * r['iso_exits'] / r['vmexits'],
            'faults': r['faults'],
            'trips_per_1000': 1000.0 * r['trips_flushed'] / r['vmexits'],
            'l1d_per_1000': 1000.0 * (r['flush_l1d'] + r['vmx_l1d_flushes']) / r['vmexits'],
            'verw_per_1000': 1000.0 * r['flush_verw'] / r['vmexits'],
            'l1d_off_per_1000': 1000.0 * (o['flush_l1d'] + o['vmx_l1d_flushes']) / o['vmexits'],
            'inside_share': r['vmexits_inside'] / max(1, r['vmexits_inside'] + r['vmexits_outside']),
            'holds_per_1000': 1000.0 * r['smt_holds'] / r['vmexits'],
            'held_us_per_1000': 1000.0 * r['smt_held_us'] / r['vmexits'],
            'kicks_per_1000': 1000.0 * r['smt_kicks'] / r['vmexits'],
            'ibpb_off_per_1000': ibpb_per_1000(o),
            'ibpb_per_1000': ibpb_per_1000(r),
        })
    summary = []
    for (kind, cls, vms, vcpus), g in groups.items():
        row = {'kind': kind, 'class': cls, 'vms': vms, 'vcpus': vcpus, 'pairs': len(g)}
        for f in ('rate_off', 'rate_on', 'ratio', 'enters_per_1000', 'exits_per_1000',
                  'trips_per_1000', 'l1d_per_1000', 'verw_per_1000', 'l1d_off_per_1000',
                  'inside_share', 'holds_per_1000', 'held_us_per_1000', 'kicks_per_1000',
                  'ibpb_off_per_1000', 'ibpb_per_1000'):
            vals = [p[f] for p in g if p[f] is not None]
            row[f] = med(vals) if vals else None
            row[f + '_spread'] = spread(vals)
        row['faults'] = sum(p['faults'] for p in g)
        summary.append(row)
    order = {c: i for i, c in enumerate(CLASS_ORDER)}
    summary.sort(key=lambda r: ({'class': 0, 'vcpus': 1, 'vms': 2}[r['kind']],
                                order.get(r['class'], 99), r['vms'], r['vcpus']))
    return summary


def table(summary):
    smt = any(r['holds_per_1000'] or r['kicks_per_1000'] for r in summary)
    ibpb = any(r['ibpb_per_1000'] is not None for r in summary)
    head = (f'{"class":<12} {"VMs":>3} {"vCPU":>4} {"exits/s off":>12} {"exits/s on":>11} '
            f'{"on/off":>15} {"enter/1k":>8} {"exit/1k":>8} {"faults":>6} {"trip/1k":>7} '
            f'{"L1D/1k":>7} {"VERW/1k":>7} {"inside":>6}')
    if smt:
        head += f' {"hold/1k":>8} {"held us/1k":>10} {"kick/1k":>7}'
    if ibpb:
        head += f' {"IBPB/1k off":>11} {"IBPB/1k on":>10}'
    lines = [head, '-' * len(head)]
    kind = None
    for r in summary:
        if r['kind'] != kind and kind is not None:
            lines.append('')
        kind = r['kind']
        lo, hi = r['ratio_spread']
        lines.append(f'{r["class"]:<12} {r["vms"]:>3} {r["vcpus"]:>4} {r["rate_off"]:>12.0f} '
                     f'{r["rate_on"]:>11.0f} {r["ratio"]:>5.2f} ({lo:.2f}-{hi:.2f}) '
                     f'{r["enters_per_1000"]:>8.1f} {r["exits_per_1000"]:>8.1f} {r["faults"]:>6} '
                     f'{r["trips_per_1000"]:>7.1f} {r["l1d_per_1000"]:>7.1f} '
                     f'{r["verw_per_1000"]:>7.1f} {100 * r["inside_share"]:>5.1f}%'
                     + (f' {r["holds_per_1000"]:>8.1f} {r["held_us_per_1000"]:>10.1f} '
                        f'{r["kicks_per_1000"]:>7.1f}' if smt else '')
                     + (f' {r["ibpb_off_per_1000"] or 0:>11.1f} {r["ibpb_per_1000"] or 0:>10.1f}'
                        if ibpb else ''))
    return '\n'.join(lines)


def table_against_always(summary):
    """Isolation off flushing on every VM-entry, against isolation on."""
    head = (f'{"class":<12} {"VMs":>3} {"vCPU":>4} {"exits/s always":>14} {"exits/s on":>11} '
            f'{"on/always":>15} {"L1D/1k always":>13} {"L1D/1k on":>9}')
    lines = [head, '-' * len(head)]
    for r in summary:
        if r['kind'] != 'class':
            continue
        lo, hi = r['ratio_spread']
        lines.append(f'{r["class"]:<12} {r["vms"]:>3} {r["vcpus"]:>4} {r["rate_off"]:>14.0f} '
                     f'{r["rate_on"]:>11.0f} {r["ratio"]:>5.2f} ({lo:.2f}-{hi:.2f}) '
                     f'{r["l1d_off_per_1000"]:>13.1f} {r["l1d_per_1000"]:>9.1f}')
    return '\n'.join(lines)


def criteria(summary, next_rip):
    """The criteria of the benchmark: [(text, ok or None if not applicable)]."""
    out = []
    classes = [r for r in summary if r['kind'] == 'class']
    steady = [r for r in classes if r['class'] != 'page_fault']
    faults = sum(r['faults'] for r in steady)
    out.append((f'no isolation fault in steady state, page-fault class aside: {faults}', faults == 0))
    for r in classes:
        if r['class'] in ('cpuid', 'msr'):
            switches = r['enters_per_1000'] + r['exits_per_1000']
            text = f'{r["class"]}: isolation switches per 1000 VM-exits below 20: {switches:.1f}'
            if not next_rip:
                text += ' (not applicable: no NRIP save, skipping the instruction emulates it)'
            out.append((text, switches < 20 if next_rip else None))
    return out


def main():
    args = sys.argv[1:]
    always_path = None
    if '--against-always' in args:
        i = args.index('--against-always')
        always_path = args[i + 1]
        del args[i:i + 2]
    off_path, on_path, json_path = args[:3]
    # VMX, or SVM with NRIP save, give the next RIP with the exit.
    next_rip = '# next_rip yes' in open(on_path).read()
    off, on = runs(off_path), runs(on_path)
    summary = summarize(off, on)
    print(table(summary))
    print()
    failed = False
    crit = criteria(summary, next_rip)
    for text, ok in crit:
        print(f'  {"PASS" if ok else "FAIL" if ok is False else "n/a "}  {text}')
        failed |= ok is False
    against = []
    if always_path:
        against = summarize(runs(always_path), on)
        print('Isolation off with an L1D flush on every VM-entry (vmentry_l1d_flush=always),')
        print('against isolation on, flushing after trips only:')
        print(table_against_always(against))
        print()
    with open(json_path, 'w') as f:
        json.dump({'runs_off': off, 'runs_on': on, 'summary': summary,
                   'against_always': against,
                   'criteria': [{'text': t, 'ok': ok} for t, ok in crit]}, f, indent=1)
    if not summary:
        print('no paired runs', file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
