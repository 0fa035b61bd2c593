// SPDX-License-Identifier: GPL-2.0
/*
 * KVM's switch for address space isolation, read at boot.  The kvm module
 * loads long after the kernel laid out what a VM maps besides KVM's own
 * objects (task structs and SRCU data on pages of their own, kernel
 * mappings that are not global without PTI), which the layer does only
 * when asked at boot: KVM's parameter on the kernel command line asks for
 * it.  Built in, whether KVM is a module or not.
 */
#include <linux/init.h>
#include <linux/kstrtox.h>
#include <linux/percpu.h>

#include <asm/asi.h>

static int __init kvm_isolation_boot_param(char *arg)
{
	/* A bool module parameter without a value is true. */
	bool on = true;

	if (arg && kstrtobool(arg, &on))
		return -EINVAL;
	if (on)
		asi_request_at_boot();
	return 0;
}
early_param("kvm.address_space_isolation", kvm_isolation_boot_param);
