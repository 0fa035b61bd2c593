#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make series`: the whole change as a numbered git format-patch series in
# build/series/, made from the prepared tree's commits (pristine..asi), with
# a cover letter from cover-letter.txt (summary, test method, benchmark
# table) and To:/Cc: from the tree's scripts/get_maintainer.pl.
#
# usage: series.sh [--quiet]     PREFIX="PATCH v2" changes the subject prefix
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PREFIX=${PREFIX:-RFC PATCH}
out=$BUILD/series
quiet=${1:-}

n=$(git_t rev-list --count pristine..asi)
[ "$n" -gt 0 ] || die "the series is empty (run 'make prepare')"

# Lists go to To:, people to Cc:, as get_maintainer.pl finds them for the
# whole change in the tree's own MAINTAINERS.
git_t diff pristine asi >"$BUILD/series.diff"
recipients=$(cd "$TREE" && perl scripts/get_maintainer.pl --no-git --no-git-fallback \
	--no-rolestats --no-tree "$BUILD/series.diff") ||
	die "scripts/get_maintainer.pl failed on the series"
addr=()
while IFS= read -r r; do
	[ -n "$r" ] || continue
	case "$r" in *'<'*) addr+=(--cc="$r") ;; *) addr+=(--to="$r") ;; esac
done <<<"$recipients"

# The cover letter comes from the series' author, not the tree's build user.
author=$(git_t log -1 --format='%an <%ae>' "$(git_t rev-list --reverse pristine..asi | head -n 1)")

rm -rf "$out"
GIT_COMMITTER_NAME=${author% <*} GIT_COMMITTER_EMAIL=$(echo "$author" | sed 's/.*<\(.*\)>/\1/') \
	git_t format-patch -q --cover-letter --numbered --no-signature \
	--subject-prefix="$PREFIX" --output-directory "$out" "${addr[@]}" pristine..asi

# The benchmark table: from the last `make bench` if it ran on this very
# tree, else the run recorded in the README.
tip=$(git_t rev-parse asi)
if [ "$(cat "$RESULTS/bench.tree" 2>/dev/null)" = "$tip" ] && [ -s "$RESULTS/bench.txt" ]; then
	bench=$RESULTS/bench.txt
	source="make bench on this tree, $(date -u -r "$bench" +%Y-%m-%d)"
else
	bench=$BUILD/series.bench
	sed -n '/^<!-- bench-table -->$/,/^<!-- \/bench-table -->$/p' "$TOP/README.md" |
		sed '1d;$d;s/^    //' | sed '/./,$!d' >"$bench"
	[ -s "$bench" ] || die "README.md has no bench table between <!-- bench-table --> markers"
	source="the run recorded in the README"
fi
version=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || echo unknown)
base="Debian's linux-source-6.1 $version (Linux $(git_t log -1 --format=%s pristine | awk '{print $NF}'))"

/usr/bin/python3 - "$out/0000-cover-letter.patch" "$TOP/cover-letter.txt" "$bench" \
	"$base" "$source" <<'PY'
import sys
cover, template, bench, base, source = sys.argv[1:]
subject, _, blurb = open(template).read().partition('\n\n')
bench_text = ''.join('    ' + l if l.strip() else l for l in open(bench))
blurb = (blurb.rstrip().replace('@BASE@', base).replace('@BENCH_SOURCE@', source)
         .replace('@BENCH@', bench_text.rstrip()))
s = open(cover).read()
for mark in ('*** SUBJECT HERE ***', '*** BLURB HERE ***'):
    if mark not in s:
        sys.exit(f'error: git format-patch cover letter has no "{mark}"')
s = s.replace('*** SUBJECT HERE ***', subject.strip()).replace('*** BLURB HERE ***', blurb)
open(cover, 'w').write(s)
PY
grep -q '@[A-Z_]*@' "$out/0000-cover-letter.patch" &&
	die "cover letter has unfilled placeholders: $(grep -o '@[A-Z_]*@' "$out/0000-cover-letter.patch" | sort -u | tr '\n' ' ')"

if [ "$quiet" != --quiet ]; then
	say "$n patches and a cover letter in $out (bench table: $source)"
	ls "$out" | sed 's/^/    /'
	echo "    send with: git send-email $out/*.patch"
fi
