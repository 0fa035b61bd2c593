#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every patch of the series applies exactly where it says: GNU patch, given
# the files a patch touches as they are in the commit before it, must apply
# it with no fuzz and no offset.  (Preparation's git apply already refuses
# fuzz; offsets creep in when an earlier entry changes and this one is not
# refreshed.)  Writes build/results/apply.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$RESULTS/apply.ktap
mkdir -p "$RESULTS"
mapfile -t commits < <(git_t rev-list --reverse pristine..asi)
mapfile -t entries < <(series_entries)
[ ${#entries[@]} = ${#commits[@]} ] ||
	die "the prepared tree has ${#commits[@]} commits for ${#entries[@]} series entries (run 'make prepare')"

tmp=$BUILD/apply-check
rc=0
prev=pristine
{
	echo "KTAP version 1"
	echo "# apply: each patch applies with no fuzz and no offset"
	echo "1..${#entries[@]}"
} >"$out"
for k in "${!entries[@]}"; do
	e=${entries[$k]}
	p=$TOP/$e
	[ -d "$p" ] && p=$p.patch
	if [ -f "$p" ]; then
		rm -rf "$tmp" && mkdir -p "$tmp"
		# shellcheck disable=SC2046
		git_t archive "$prev" -- $(patch_files "$p") |
			tar -x -C "$tmp"
		if report=$(cd "$tmp" && patch -p1 --dry-run -F0 <"$p" 2>&1) &&
		   ! grep -qi 'offset\|fuzz' <<<"$report"; then
			echo "ok $((k + 1)) $e" >>"$out"
		else
			{ sed 's/^/# /' <<<"$report"; echo "not ok $((k + 1)) $e"; } >>"$out"
			echo "$e does not apply exactly:" >&2
			sed 's/^/    /' <<<"$report" >&2
			rc=1
		fi
	else
		echo "ok $((k + 1)) $e # SKIP an overlay of new files only" >>"$out"
	fi
	prev=${commits[$k]}
done
rm -rf "$tmp"
say "apply: $(grep -c '^ok' "$out") of ${#entries[@]} entries apply exactly"
exit $rc
