/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of KVM address space isolation, in the kvm trace system next
 * to the VM-exit events.  All fire on full kernel mappings: enter before
 * the switch, exit and fault after the switch back.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kvm

#if !defined(_TRACE_KVM_ISOLATION_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_KVM_ISOLATION_H

#include <linux/tracepoint.h>
#include <asm/kvm_isolation.h>

#define KVM_ISOLATION_EXIT_REASONS				\
	EM(KVM_ISOLATION_EXIT_USER, "user")			\
	EM(KVM_ISOLATION_EXIT_PUT, "put")			\
	EM(KVM_ISOLATION_EXIT_SCHEDULE, "schedule")		\
	EM(KVM_ISOLATION_EXIT_MMU, "mmu")			\
	EM(KVM_ISOLATION_EXIT_WRITE_GUEST, "write_guest")	\
	EM(KVM_ISOLATION_EXIT_EMULATE, "emulate")		\
	EM(KVM_ISOLATION_EXIT_NESTED, "nested")			\
	EM(KVM_ISOLATION_EXIT_REQUEST, "request")		\
	EM(KVM_ISOLATION_EXIT_RESET, "reset")			\
	EM(KVM_ISOLATION_EXIT_APIC, "apic")			\
	EM(KVM_ISOLATION_EXIT_IO, "io")				\
	EM(KVM_ISOLATION_EXIT_INTERRUPT, "interrupt")		\
	EMe(KVM_ISOLATION_EXIT_FAULT, "fault")

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

TRACE_EVENT(kvm_isolation_fault,
	TP_PROTO(unsigned long ip, unsigned long address, unsigned long error_code),
	TP_ARGS(ip, address, error_code),

	TP_STRUCT__entry(
		__field(unsigned long, ip)
		__field(unsigned long, address)
		__field(unsigned long, error_code)
	),

	TP_fast_assign(
		__entry->ip = ip;
		__entry->address = address;
		__entry->error_code = error_code;
	),

	TP_printk("at %pS on %#lx error %#lx", (void *)__entry->ip, __entry->address,
		  __entry->error_code)
);

#endif /* _TRACE_KVM_ISOLATION_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH asm/trace/
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kvm_isolation
#include <trace/define_trace.h>
