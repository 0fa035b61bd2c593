#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build the x86_64 kernel after every patch of the series, in order, so that
# `git bisect` never lands on a commit that does not build.  A worktree of
# the prepared tree (build/each/linux) steps from commit to commit; git
# rewrites only the files that differ, so every step after the first is an
# incremental build in build/each/x86_64.  Each step uses the configuration
# of the x86_64 kernel, option on, so a patch builds with the option as
# soon as it exists.  A step fails on an error or on any compiler warning.
# Writes build/results/bisect.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

each=$BUILD/each
wt=$each/linux
# The object directory sits next to its tree as build/x86_64 does next to
# build/linux: with CCACHE_BASEDIR=$BUILD (kmake) both build with the same
# relative paths, so the first step reuses ccache's results for every file
# the series does not change.
obj=$each/x86_64
out=$RESULTS/bisect.ktap

"$TOP/scripts/config.sh" x86_64		# the configuration every step starts from
mkdir -p "$each" "$RESULTS"
if ! git -C "$wt" rev-parse -q --verify HEAD >/dev/null 2>&1; then
	say "creating the worktree $wt"
	rm -rf "$wt"
	git_t worktree prune
	git_t worktree add -q --detach "$wt" pristine
fi

mapfile -t commits < <(git_t rev-list --reverse pristine..asi)
n=${#commits[@]}
[ "$n" -gt 0 ] || die "the series is empty (run 'make prepare')"
{
	echo "KTAP version 1"
	echo "# bisect: x86_64 build after each patch"
	echo "1..$n"
} >"$out"

say "building x86_64 after each of the $n patches in $obj"
start=$(date +%s)
rc=0
i=0
for c in "${commits[@]}"; do
	i=$((i + 1))
	subject=$(git_t log -1 --format=%s "$c")
	log=$each/build-$i.log
	git -C "$wt" checkout -q --detach -f "$c"
	t0=$(date +%s)
	# The option appears with the patch that adds it; olddefconfig drops it
	# before, so each step starts again from the full configuration.
	mkdir -p "$obj"
	cp "$BUILD/x86_64/.config" "$obj/.config"
	ok=1
	TREE=$wt kmake x86_64 "$obj" -s olddefconfig >"$log" 2>&1 || ok=0
	[ $ok = 1 ] && { TREE=$wt kmake x86_64 "$obj" -j"$NPROC" bzImage modules >>"$log" 2>&1 || ok=0; }
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
