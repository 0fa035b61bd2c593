#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make bench-hlt`: kvm-bench's HLT class alone (an x2APIC periodic timer
# wakes a halted vCPU) in RUNS boots of the x86_64 kernel with isolation
# on, two at a time.  A boot fails when its run fails (a KVM_RUN that does
# not come back is reported by the KVM_RUN watchdog) or takes more than
# twice the median time of all runs.  Writes build/results/bench-hlt.ktap.
# usage: bench-hlt.sh [RUNS]      (50)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

runs=${1:-50}
build_x86_64
out=$RESULTS/bench-hlt
rm -rf "$out"
mkdir -p "$out"
say "kvm-bench's hlt class in $runs boots with isolation on, two at a time"
start=$(date +%s)
seq 1 "$runs" | xargs -P 2 -I{} "$TOP/boot-tests/run-boot.py" --arch x86_64 \
	--kernel "$BUILD/x86_64/arch/x86/boot/bzImage" --initrd "$BUILD/initramfs/x86_64.cpio.gz" \
	--cpu qemu64,+svm,+npt --qemu "$OUTER_QEMU" --tests kvm-bench --name "hlt-{}" --results "$out" --quiet \
	--append "pti=on kvm.address_space_isolation=1 asi.bench=0.2,1 asi.bench_only=hlt" \
	--timeout 300 >/dev/null || true
"$TOP/boot-tests/bench_hlt.py" "$out" "$runs" >"$RESULTS/bench-hlt.ktap"
sed -n 's/^# //p' "$RESULTS/bench-hlt.ktap"
say "bench-hlt took $(( $(date +%s) - start ))s"
BOOTS=("$RESULTS/bench-hlt.ktap")
summarize
