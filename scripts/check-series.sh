#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check-series`: is the series ready for the mailing list?  It is
# emitted with `make series`, then: every patch applies exactly (no fuzz,
# no offset), checkpatch.pl --strict on every patch, sparse and W=1 on the
# C files it touches, kernel-doc on everything it touches, and the x86_64
# kernel built after every patch in order.  Ends with "N passed, N failed,
# N skipped" over all of them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

start=$(date +%s)
"$TOP/scripts/deps.sh"
"$TOP/scripts/prepare.sh"
"$TOP/scripts/build-kernel.sh" x86_64
BOOTS=("$RESULTS/apply.ktap" "$RESULTS/checkpatch.ktap" "$RESULTS/sparse.ktap"
       "$RESULTS/docs.ktap" "$RESULTS/kernel-doc.ktap" "$RESULTS/bisect.ktap")
mkdir -p "$RESULTS"
rm -f "${BOOTS[@]}"		# a check that dies early must not leave an old verdict
"$TOP/scripts/series.sh"
"$TOP/scripts/check-apply.sh" || true
"$TOP/scripts/checkpatch.sh" || true
"$TOP/scripts/check-sparse.sh" || true
"$TOP/scripts/check-docs.sh" || true
"$TOP/scripts/bisect-build.sh" || true
say "make check-series took $(( $(date +%s) - start ))s"
summarize
