#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Build one of our kernels (incrementally, out of tree, through ccache).
# usage: build-kernel.sh <kernel>      kernel: x86_64 | x86_64-noasi | x86_64-debug | arm64
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: build-kernel.sh <kernel>}
obj=$BUILD/$kernel
# The option built out changes about 60 of the x86_64 kernel's objects:
# started as a copy of that build, kbuild rebuilds only those.
case "$kernel" in
x86_64-noasi) seed=$BUILD/x86_64 ;;
*)            seed= ;;
esac
if [ -n "$seed" ] && [ ! -e "$obj/vmlinux" ] && [ -e "$seed/vmlinux" ]; then
	say "starting $kernel from a copy of ${seed#"$TOP"/}"
	rm -rf "$obj"
	cp -a "$seed" "$obj"
	rm -f "$obj/.asi-config-stamp"
	# objtool's build records its absolute output path; a path changed
	# would rebuild it, and every object with it.
	grep -rlI --null -F "$seed/" "$obj/tools" | xargs -0r sed -i "s|$seed/|$obj/|g"
fi
"$TOP/scripts/config.sh" "$kernel"
case "$kernel" in
arm64) arch=arm64; image=arch/arm64/boot/Image ;;
*)     arch=x86_64; image=arch/x86/boot/bzImage ;;
esac

say "building $kernel kernel ($(kmake "$arch" "$obj" -s kernelversion), -j$NPROC) in $obj"
start=$(date +%s)
log=$obj/build.log
if ! kmake "$arch" "$obj" -j"$NPROC" "${image##*/}" modules headers >"$log" 2>&1; then
	grep -E 'error|Error' "$log" | head -40 >&2
	die "building $kernel failed; full log: $log"
fi
grep -E '(warning|error):' "$log" | sort -u | head -20 | sed 's/^/    /' || true
rm -rf "$obj/modules-install"
kmake "$arch" "$obj" -s INSTALL_MOD_PATH="$obj/modules-install" INSTALL_MOD_STRIP=1 \
	modules_install >/dev/null 2>&1 || die "modules_install failed for $kernel"
say "built $kernel in $(( $(date +%s) - start ))s: $obj/$image"
