#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Configure one of our kernels: tinyconfig, then the fragments merged with the
# kernel's merge_config.sh, then olddefconfig.  Kconfig silently drops options
# whose dependencies are unmet, so every option a fragment asked for is checked
# in the final .config and a missing one fails the build.
#
# usage: config.sh <kernel>      kernel: x86_64 | x86_64-noasi | x86_64-debug | x86_64-production | x86_64-pristine | arm64
#                                        | cross/<arch> (cross-check.sh's KVM builds)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:?usage: config.sh <kernel>}
obj=$BUILD/$kernel
case "$kernel" in
x86_64)       arch=x86_64; frags="defconfigs/x86_64.config Kconfig.fragment" ;;
x86_64-noasi) arch=x86_64; frags="defconfigs/x86_64.config Kconfig.fragment defconfigs/noasi.config" ;;
x86_64-debug) arch=x86_64; frags="defconfigs/x86_64.config Kconfig.fragment defconfigs/debug.config" ;;
x86_64-production) arch=x86_64; frags="defconfigs/x86_64.config Kconfig.fragment defconfigs/production.config" ;;
x86_64-pristine) arch=x86_64; frags="defconfigs/x86_64.config" ;;	# the tree without our series
arm64)        arch=arm64;  frags="defconfigs/arm64.config" ;;
cross/*)      arch=${kernel#cross/}; frags="defconfigs/cross/$arch.config"
	[ -f "$TOP/$frags" ] || die "no fragment $frags for '$kernel'" ;;
*) die "unknown kernel '$kernel' (x86_64, x86_64-noasi, x86_64-debug, x86_64-production, x86_64-pristine, arm64, cross/<arch>)" ;;
esac

mkdir -p "$obj"
stamp=$(cd "$TOP" && { git -C "$TREE" rev-parse HEAD; cat $frags; } | sha256sum | cut -c1-64)
if [ -f "$obj/.config" ] && [ "$(cat "$obj/.asi-config-stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

say "configuring $kernel: tinyconfig + $frags"
kmake "$arch" "$obj" -s tinyconfig >/dev/null 2>&1 || die "make tinyconfig failed for $kernel"
(cd "$TOP" && "$TREE/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" $frags) >"$obj/merge_config.log" 2>&1 ||
	{ cat "$obj/merge_config.log" >&2; die "merge_config.sh failed for $kernel"; }
kmake "$arch" "$obj" -s olddefconfig >/dev/null

# Every request must have survived: "=value" present as is, "=n" or "is not
# set" absent.  Later fragments override earlier ones, as in merge_config.
bad=0
while IFS='=' read -r sym val; do
	if [ "$val" = n ]; then
		if grep -q "^$sym=" "$obj/.config"; then
			echo "  $sym: asked for n, got $(grep "^$sym=" "$obj/.config")" >&2
			bad=1
		fi
	elif ! grep -qx "$sym=$val" "$obj/.config"; then
		got=$(grep -E "^($sym=|# $sym is not set)" "$obj/.config" || echo "absent (dependencies unmet or no such symbol)")
		echo "  $sym: asked for $val, got $got" >&2
		bad=1
	fi
done < <(cd "$TOP" && cat $frags |
	sed -nE 's/^(CONFIG_[A-Za-z0-9_]+)=(.*)$/\1=\2/p; s/^# (CONFIG_[A-Za-z0-9_]+) is not set$/\1=n/p' |
	awk -F= '{ v[$1] = $0; if (!($1 in o)) { o[$1] = n++ } } END { for (k in o) print o[k] " " v[k] }' |
	sort -n | cut -d' ' -f2-)
[ "$bad" = 0 ] || die "kernel config $kernel lost options its fragments asked for (see above)"
echo "$stamp" >"$obj/.asi-config-stamp"
