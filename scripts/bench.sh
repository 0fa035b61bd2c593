#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: boot the x86_64 kernel twice with the same QEMU settings,
# isolation off then on, run kvm-bench in each, and print the table that
# pairs them (also in build/results/bench.json, and bench.txt for the
# cover letter of `make series`).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
build_x86_64
for iso in off on; do
	extra=
	[ $iso = on ] && extra=kvm.address_space_isolation=1
	boot x86-bench-$iso x86_64 x86_64 qemu64,+svm,+npt kvm-bench \
		--append "pti=on kvm.page_fault_stack=0 $extra" --timeout 900
done
say "exits per second, isolation off and on (median of the pairs, spread), per 1000 VM-exits"
rc=0
# bench.txt and the tree it measured go into the cover letter of `make series`.
rm -f "$RESULTS/bench.txt" "$RESULTS/bench.tree"
"$TOP/boot-tests/bench.py" "$RESULTS/x86-bench-off.kvm-bench.ktap" \
	"$RESULTS/x86-bench-on.kvm-bench.ktap" "$RESULTS/bench.json" |
	tee "$RESULTS/bench.txt" || rc=$?
[ "$rc" = 0 ] && git -C "$TREE" rev-parse asi >"$RESULTS/bench.tree"
summarize || rc=1
say "make bench took $(( $(date +%s) - start ))s"
exit $rc
