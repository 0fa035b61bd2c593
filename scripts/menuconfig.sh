#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Open menuconfig on our configuration of the prepared tree.  Changes stay in
# build/<kernel>/.config until a fragment changes; `make` then rebuilds it.
# usage: menuconfig.sh x86_64|x86_64-noasi|arm64
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kernel=${1:-x86_64}
case "$kernel" in
arm64) arch=arm64 ;;
x86_64|x86_64-noasi) arch=x86_64 ;;
*) die "menuconfig: ARCH must be x86_64 or arm64, not '$kernel'" ;;
esac
"$TOP/scripts/config.sh" "$kernel"
kmake "$arch" "$BUILD/$kernel" menuconfig
