#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Developer tool: after editing files in the prepared tree (build/linux),
# rewrite the diff of one of our patches from the tree, keeping its header
# and message.  The diff is taken against the tree's commit made from the
# entry before it in the series, for the files the patch touches: on the
# checked-out branch, asi normally, or partial when a patch did not apply
# (see README, "A new Debian point release"), or the entry's own commit
# when later entries change the same files.
# usage: refresh-patch.sh <component>/<entry>      (a .patch or an overlay's .patch)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

entry=${1:?usage: refresh-patch.sh <component>/<entry>}
comp=${entry%%/*}
name=${entry#*/}
name=${name%.patch}
file=$TOP/$comp/$name.patch
[ -f "$file" ] || die "$file does not exist"

# The commit made from the entry before this one: walk the series in order.
prev=pristine
n=0
while read -r e; do
	[ "${e%.patch}" = "$comp/$name" ] && break
	n=$((n + 1))
done < <(series_entries)
[ "$n" = 0 ] || prev=$(git -C "$TREE" rev-list --reverse pristine..HEAD | sed -n "${n}p")
[ -n "$prev" ] || die "the prepared tree has fewer commits than the series (run 'make prepare')"

files=$(patch_files "$file")
[ -n "$files" ] || die "$file touches no file"
# The diff is taken from the work tree: a later entry that changes the same
# files would leak into it.  Then edit with this entry's commit checked out.
this=$(git_t rev-list --reverse pristine..HEAD | sed -n "$((n + 1))p")
if [ -n "$this" ]; then
	# shellcheck disable=SC2086
	later=$(git_t log --format='    %s' "$this..HEAD" -- $files)
	[ -z "$later" ] || die "later entries change the same files:
$later
check out this entry's commit (git -C $TREE checkout $this), edit, then refresh"
fi
# shellcheck disable=SC2086
diff=$(git -C "$TREE" diff "$prev" -- $files)
[ -n "$diff" ] || die "no difference for $files against $(git -C "$TREE" log -1 --format=%s "$prev")"
header=$(awk '/^diff --git /{ exit } { print }' "$file")
if grep -q '^---$' <<<"$header"; then
	header=$(awk '/^---$/{ print; exit } { print }' "$file")
fi
{ echo "$header"; echo "$diff"; } >"$file.new"
mv "$file.new" "$file"
say "refreshed $comp/$name.patch against $(git -C "$TREE" log -1 --format=%s "$prev")"
