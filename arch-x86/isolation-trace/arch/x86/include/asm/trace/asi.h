/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of the isolation layer (address space isolation, asi): what
 * it does by itself, without its user asking.  It leaves the restricted
 * page table for an interrupt or a page fault, and logs the fault.  Both
 * fire on full kernel mappings, after the switch back.  Entering, and the
 * exits its user asks for, are its user's events (kvm:kvm_isolation_*).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM asi

#if !defined(_TRACE_ASI_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_ASI_H

#include <linux/tracepoint.h>

TRACE_EVENT(asi_exit,
	TP_PROTO(bool fault),
	TP_ARGS(fault),

	TP_STRUCT__entry(
		__field(bool, fault)
	),

	TP_fast_assign(
		__entry->fault = fault;
	),

	TP_printk("reason %s", __entry->fault ? "fault" : "interrupt")
);

TRACE_EVENT(asi_fault,
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

#endif /* _TRACE_ASI_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH asm/trace/
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE asi
#include <trace/define_trace.h>
