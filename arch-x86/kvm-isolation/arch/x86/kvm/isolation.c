// SPDX-License-Identifier: GPL-2.0
/*
 * KVM address space isolation, KVM's side: the run-time switch and what
 * each VM maps.  The restricted page tables themselves are built into the
 * kernel (arch/x86/mm/kvm_isolation.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kvm_host.h>
#include <linux/module.h>

#include "isolation.h"

/* Built in, isolation is used only when asked for. */
static bool __read_mostly address_space_isolation;
module_param(address_space_isolation, bool, 0444);

/*
 * Build the core address space once the vendor module is known: its code
 * and data are part of what every VM maps.  A failure leaves KVM working,
 * without isolation; kvm_isolation_setup() said why.
 */
void kvm_x86_isolation_setup(struct kvm_x86_init_ops *ops)
{
	if (address_space_isolation &&
	    kvm_isolation_setup(THIS_MODULE, ops->runtime_ops))
		address_space_isolation = false;
}

void kvm_x86_isolation_teardown(void)
{
	if (address_space_isolation)
		kvm_isolation_teardown();
}
