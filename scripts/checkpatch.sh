#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run the kernel's checkpatch.pl --strict on every patch of the series, as
# `make series` emits it, and write the verdicts as KTAP to
# build/results/checkpatch.ktap (one case per patch).  Findings listed in
# checkpatch.exceptions, and named in the patch's message, are ignored.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

"$TOP/scripts/series.sh" --quiet
mkdir -p "$RESULTS"
# checkpatch runs spdxcheck.py with the system's python3 and its python3-ply.
export PATH=/usr/bin:/bin:$PATH
patches=("$BUILD"/series/0*.patch)
out=$RESULTS/checkpatch.ktap
rc=0
{
	echo "KTAP version 1"
	echo "# checkpatch"
	echo "1..$(ls "$BUILD"/series/0*.patch | grep -vc cover-letter)"
} >"$out"
i=0
for p in "${patches[@]}"; do
	case "$p" in *cover-letter*) continue ;; esac
	i=$((i + 1))
	name=$(basename "$p" .patch)
	ignore=$(awk -v n="${name#*-}" '$1 == n { printf "%s,", $2 }' "$TOP/checkpatch.exceptions")
	if report=$("$TREE/scripts/checkpatch.pl" --strict --quiet --no-summary \
			${ignore:+--ignore "$ignore"} "$p" 2>&1) &&
	   [ -z "$report" ]; then
		echo "ok $i $name" >>"$out"
	else
		echo "$report" | sed 's/^/# /' >>"$out"
		echo "not ok $i $name" >>"$out"
		echo "checkpatch: $name:" >&2
		echo "$report" | sed 's/^/    /' >&2
		rc=1
	fi
done
say "checkpatch --strict: $i patches, $(grep -c '^not ok' "$out") with findings"
exit $rc
