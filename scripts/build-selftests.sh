#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build KVM's own selftests for x86_64 from the prepared tree, statically, so
# they run in the test initramfs.  Some tests of this tree do not build
# (dirty_log_test and steal_time in 6.1.192); the rest are built with -k and
# the ones that built are listed in tests.list.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# usage: build-selftests.sh [kernel]     default x86_64; its headers are used
kernel=${1:-x86_64}
obj=$BUILD/$kernel
out=$BUILD/selftests/$kernel
src=$TREE/tools/testing/selftests/kvm
[ -d "$obj/usr/include/linux" ] || die "no uapi headers in $obj (build the $kernel kernel first)"
stamp=$(git -C "$TREE" rev-parse HEAD)
if [ -f "$out/tests.list" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
	say "KVM selftests up to date: $(wc -l <"$out/tests.list") built"
	exit 0
fi

say "building KVM selftests (x86_64, static) in $out"
mkdir -p "$out"
make -C "$src" -k -j"$NPROC" OUTPUT="$out" CC="ccache gcc" EXTRA_CFLAGS=-static \
	INSTALL_HDR_PATH="$obj/usr" KHDR_INCLUDES="-isystem $obj/usr/include" \
	>"$out/build.log" 2>&1 || true

# Every program the Makefile wants for x86_64, and which of them exist.
wanted=$(sed -nE 's/^TEST_GEN_PROGS(_EXTENDED)?_x86_64 \+?= *//p' "$src/Makefile")
: >"$out/tests.list"
failed=
for t in $wanted; do
	if [ -x "$out/$t" ] && file "$out/$t" | grep -q 'statically linked'; then
		echo "$t" >>"$out/tests.list"
	else
		failed="$failed ${t##*/}"
	fi
done
# Nothing in the source tree may have been written by the selftests build.
[ -z "$(git -C "$TREE" status --porcelain)" ] ||
	die "the selftests build wrote into $TREE: $(git -C "$TREE" status --porcelain | head -3)"
say "KVM selftests: $(wc -l <"$out/tests.list") of $(echo "$wanted" | wc -w) built; did not build:${failed:- none}"
[ -s "$out/tests.list" ] || die "no KVM selftest built; see $out/build.log"
echo "$stamp" >"$out/.stamp"
