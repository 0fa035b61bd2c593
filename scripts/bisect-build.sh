#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the x86_64 kernel after every patch of the series, in order, so that
# `git bisect` never lands on a commit that does not build.  The prepared
# tree (build/linux, a git repository on the series' last commit) steps
# back to the first patch and forward to the last, and each step builds in
# build/x86_64: git rewrites only the files that differ, so a step rebuilds
# only what they touch.  The first patch is the only one that changes
# headers nearly every file includes, and every later commit has it too,
# so no step rebuilds the whole tree.  Each step uses the configuration of
# the x86_64 kernel, option on, so a patch builds with the option as soon
# as it exists.  A step fails on an error or on any compiler warning.  The
# tree ends on asi again (prepare.sh puts it back if this is killed) and
# build/x86_64 is the x86_64 kernel again.  Writes build/results/bisect.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

obj=$BUILD/x86_64
out=$RESULTS/bisect.ktap
config=$BUILD/bisect.config

"$TOP/scripts/config.sh" x86_64		# the configuration every step starts from
cp "$obj/.config" "$config"
mkdir -p "$RESULTS"
[ "$(git_t symbolic-ref -q HEAD)" = refs/heads/asi ] || die "$TREE is not on asi (run 'make prepare')"
git_t diff --quiet HEAD || die "$TREE has local changes (commit or drop them first)"
# Back on the last commit however this ends, with the full configuration.
restore() {
	git_t checkout -q -f asi
	cp "$config" "$obj/.config"
}
trap restore EXIT

mapfile -t commits < <(git_t rev-list --reverse pristine..asi)
n=${#commits[@]}
[ "$n" -gt 0 ] || die "the series is empty (run 'make prepare')"
{
	echo "KTAP version 1"
	echo "# bisect: x86_64 build after each patch"
	echo "1..$n"
} >"$out"

say "building x86_64 after each of the $n patches, in place in ${TREE#"$TOP"/} and ${obj#"$TOP"/}"
start=$(date +%s)
rc=0
i=0
for c in "${commits[@]}"; do
	i=$((i + 1))
	subject=$(git_t log -1 --format=%s "$c")
	log=$BUILD/bisect-$i.log
	git_t checkout -q --detach -f "$c"
	t0=$(date +%s)
	# The option appears with the patch that adds it; olddefconfig drops it
	# before, so each step starts again from the full configuration.
	cp "$config" "$obj/.config"
	ok=1
	kmake x86_64 "$obj" -s olddefconfig >"$log" 2>&1 || ok=0
	[ $ok = 1 ] && { kmake x86_64 "$obj" -j"$NPROC" bzImage modules >>"$log" 2>&1 || ok=0; }
	warnings=$(grep -E '(warning|error):' "$log" | sort -u || true)
	secs=$(( $(date +%s) - t0 ))
	iso=$(grep -q '^CONFIG_KVM_ADDRESS_SPACE_ISOLATION=y' "$obj/.config" && echo "option on" || echo "option absent")
	if [ $ok = 1 ] && [ -z "$warnings" ]; then
		printf '    [%d/%d] ok      %4ss  %s (%s)\n' "$i" "$n" "$secs" "$subject" "$iso"
		printf '# %ss, %s\nok %d %s\n' "$secs" "$iso" "$i" "$subject" >>"$out"
	else
		printf '    [%d/%d] FAILED  %4ss  %s (%s); log: %s\n' "$i" "$n" "$secs" "$subject" "$iso" "$log"
		detail=$(echo "${warnings:-$(tail -n 20 "$log")}" | head -n 20)
		sed 's/^/    /' <<<"$detail" >&2
		{ sed 's/^/# /' <<<"$detail"; echo "not ok $i $subject"; } >>"$out"
		rc=1
	fi
done
say "bisect build: $(grep -c '^ok' "$out") of $n steps build without warnings, in $(( $(date +%s) - start ))s"
exit $rc
