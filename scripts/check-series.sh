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
"$TOP/scripts/series.sh"
series_static_checks
series_bisect_check
say "make check-series took $(( $(date +%s) - start ))s"
summarize
