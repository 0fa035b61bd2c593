/* SPDX-License-Identifier: GPL-2.0 */
/*
 * KVM's events of address space isolation, next to the VM-exit events:
 * entering a VM's isolated address space, and leaving it for one of KVM's
 * reasons.  Both fire on full kernel mappings, enter before the switch and
 * exit after it.  What the isolation layer leaves by itself (interrupts,
 * faults) is in its own trace system, asi.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kvm

#if !defined(_TRACE_KVM_ISOLATION_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_KVM_ISOLATION_H

#include <linux/tracepoint.h>

#include "isolation.h"

/* KVM_ISOLATION_EXIT_REASONS, the causes and their names, is in isolation.h. */
#undef EM
#undef EMe
#define EM(a, b)	TRACE_DEFINE_ENUM(a);
#define EMe(a, b)	TRACE_DEFINE_ENUM(a);

KVM_ISOLATION_EXIT_REASONS

#undef EM
#undef EMe
#define EM(a, b)	{ a, b },
#define EMe(a, b)	{ a, b }

TRACE_EVENT(kvm_isolation_enter,
	TP_PROTO(const char *name),
	TP_ARGS(name),

	TP_STRUCT__entry(
		__string(name, name)
	),

	TP_fast_assign(
		__assign_str(name, name);
	),

	TP_printk("%s", __get_str(name))
);

TRACE_EVENT(kvm_isolation_exit,
	TP_PROTO(unsigned int reason),
	TP_ARGS(reason),

	TP_STRUCT__entry(
		__field(unsigned int, reason)
	),

	TP_fast_assign(
		__entry->reason = reason;
	),

	TP_printk("reason %s", __print_symbolic(__entry->reason, KVM_ISOLATION_EXIT_REASONS))
);

#endif /* _TRACE_KVM_ISOLATION_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH ../../arch/x86/kvm
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE isolation_trace
#include <trace/define_trace.h>
