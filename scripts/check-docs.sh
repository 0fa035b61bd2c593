#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The documentation the series adds is valid reStructuredText (docutils),
# and the kernel-doc of every C file and header it touches is complete and
# parses without warnings (check-kernel-doc.py).  Writes
# build/results/docs.ktap and build/results/kernel-doc.ktap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$RESULTS/docs.ktap
mkdir -p "$RESULTS"
rst=Documentation/virt/kvm/x86/address-space-isolation.rst
rc=0
{
	echo "KTAP version 1"
	echo "# docs"
	echo "1..1"
	# Sphinx adds roles and directives docutils does not know; the page uses none.
	if /usr/bin/python3 - "$TREE/$rst" >"$BUILD/docs.err" 2>&1 <<'PY'
import sys
import docutils.core
docutils.core.publish_doctree(open(sys.argv[1]).read(), source_path=sys.argv[1],
                              settings_overrides={'report_level': 2, 'halt_level': 2})
PY
	then
		echo "ok 1 rst:${rst##*/}"
	else
		sed 's/^/# /' "$BUILD/docs.err"
		echo "not ok 1 rst:${rst##*/}"
		rc=1
	fi
} >"$out"
say "documentation: ${rst##*/} is $([ $rc = 0 ] && echo valid || echo INVALID) reStructuredText"
/usr/bin/python3 "$TOP/scripts/check-kernel-doc.py" "$TREE" "$RESULTS/kernel-doc.ktap" || rc=1
exit $rc
