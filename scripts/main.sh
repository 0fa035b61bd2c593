#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make`: install what is missing, prepare the tree, build the x86_64 kernel,
# boot it in QEMU on emulated AMD SVM and run the smoke test.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
"$TOP/scripts/deps.sh"
"$TOP/scripts/prepare.sh"
"$TOP/scripts/build-kernel.sh" x86_64
"$TOP/scripts/mkinitramfs.sh" x86_64 "$BUILD/initramfs/x86_64.cpio.gz"
mkdir -p "$RESULTS"
boot x86-smoke x86_64 x86_64 qemu64,+svm,+npt kunit,kvm-smoke --timeout 600
summarize
say "done in $(( $(date +%s) - start ))s"
