#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Emit the whole series, pristine tree to our tip, as git format-patch output
# in build/patches/, with the cover letter from cover-letter.txt if present.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$BUILD/patches
rm -rf "$out"
n=$(git -C "$TREE" rev-list --count pristine..asi)
[ "$n" -gt 0 ] || die "the series is empty"
args=(--output-directory "$out" --no-signature)
[ -f "$TOP/cover-letter.txt" ] && args+=(--cover-letter)
git -C "$TREE" format-patch -q "${args[@]}" pristine..asi
if [ -f "$TOP/cover-letter.txt" ]; then
	# First line of cover-letter.txt is the subject, the rest after a blank line the text.
	python3 - "$out/0000-cover-letter.patch" "$TOP/cover-letter.txt" <<'PY'
import sys
cover, text = sys.argv[1], open(sys.argv[2]).read().split('\n', 2)
s = open(cover).read()
s = s.replace('*** SUBJECT HERE ***', text[0]).replace('*** BLURB HERE ***', text[2].rstrip())
open(cover, 'w').write(s)
PY
fi
say "$n patches in $out"
ls "$out"
