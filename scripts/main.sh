#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make`: install what is missing, prepare the tree, build the x86_64 kernel,
# boot it in QEMU on emulated AMD SVM with isolation on, run the smoke test
# and a guest workload, and print what isolation did.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
build_x86_64
boot x86-main x86_64 x86_64 qemu64,+svm,+npt kvm-smoke,kvm-report \
	--append "pti=on $ISO" --timeout 600
echo
sed -n 's/^# //p' "$RESULTS/x86-main.kvm-report.ktap" 2>/dev/null ||
	echo "(no report: see $RESULTS/x86-main.console.log)"
echo
summarize
say "done in $(( $(date +%s) - start ))s"
