#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The isolation option as a distribution would ship it, without the layer's
# debugging aids and tests (defconfigs/production.config): build what the
# option builds -- arch/x86/mm and the KVM modules, with W=1 -- in
# build/x86_64-production, then check it with check-exports.py
# --production: exports only what KVM's modules call, and none of the
# debugging aids (audit, search, canary, CR3 check, the debugfs check) in
# the objects.  The rest of that kernel is the x86_64 kernel's.  KTAP in
# $RESULTS/production.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

obj=$BUILD/x86_64-production
out=$RESULTS/production.ktap
mkdir -p "$RESULTS"
fail() {
	printf 'KTAP version 1\n1..1\n# %s (log: %s)\nnot ok 1 production_build\n' "$1" "$obj/build.log" >"$out"
	echo "error: production configuration: $1; see $obj/build.log" >&2
	exit 1
}
"$TOP/scripts/config.sh" x86_64-production || fail "configuring failed"
say "production configuration: building arch/x86/mm and KVM without the debugging aids (W=1)"
kmake x86_64 "$obj" -j"$(nproc)" prepare >"$obj/build.log" 2>&1 || fail "make prepare failed"
kmake x86_64 "$obj" -j"$(nproc)" W=1 arch/x86/mm/ arch/x86/kvm/ >>"$obj/build.log" 2>&1 ||
	fail "the build failed"
# W=1 on our files: a warning there fails as the x86_64 build's would.
if grep -E '(arch/x86/mm/asi|arch/x86/kvm/isolation)[^:]*:[0-9]+:[0-9]+: warning' "$obj/build.log"; then
	fail "W=1 warnings in the option's files"
fi
"$TOP/scripts/check-exports.py" --production "$obj" >"$out" ||
	{ echo "error: production configuration: see $out" >&2; exit 1; }
