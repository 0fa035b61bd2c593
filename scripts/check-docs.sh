#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The documentation the series adds is valid reStructuredText (docutils),
# and the kernel-doc comments of its C files parse without warnings.
# Writes build/results/docs.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$RESULTS/docs.ktap
mkdir -p "$RESULTS"
rst=Documentation/virt/kvm/x86/address-space-isolation.rst
csrc="arch/x86/mm/kvm_isolation.c arch/x86/mm/kvm_isolation_switch.c
arch/x86/mm/kvm_isolation_debugfs.c arch/x86/kvm/isolation.c"
n=0
rc=0
result() {	# <ok?> <name> <detail file>
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		sed 's/^/# /' "$3"
		echo "not ok $n $2"
		rc=1
	fi
}
{
	echo "KTAP version 1"
	echo "# docs"
	echo "1..$(( 1 + $(echo $csrc | wc -w) ))"
	# Sphinx adds roles and directives docutils does not know; the page uses none.
	if /usr/bin/python3 - "$TREE/$rst" >"$BUILD/docs.err" 2>&1 <<'PY'
import sys
import docutils.core
docutils.core.publish_doctree(open(sys.argv[1]).read(), source_path=sys.argv[1],
                              settings_overrides={'report_level': 2, 'halt_level': 2})
PY
	then result 0 "rst:${rst##*/}"; else result 1 "rst:${rst##*/}" "$BUILD/docs.err"; fi
	for f in $csrc; do
		"$TREE/scripts/kernel-doc" -none "$TREE/$f" >"$BUILD/docs.err" 2>&1 || true
		if [ -s "$BUILD/docs.err" ]; then
			result 1 "kernel-doc:${f##*/}" "$BUILD/docs.err"
		else
			result 0 "kernel-doc:${f##*/}"
		fi
	done
} >"$out"
say "documentation: $(grep -c '^ok' "$out") of $n checks pass"
exit $rc
