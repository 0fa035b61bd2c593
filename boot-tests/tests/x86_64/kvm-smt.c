// SPDX-License-Identifier: GPL-2.0
/*
 * SMT siblings and isolation.  Two vCPUs of one VM on the two threads of a
 * core: vCPU 0 (pinned to CPU 0) reads the in-kernel PIC in a loop, VM-exits
 * that stay inside isolation; vCPU 1 (pinned to CPU 1) writes port 0x80 in a
 * loop, each write a return to user space, so its thread leaves isolation
 * thousands of times while its sibling runs guest code.
 *
 * The kernel's checker (debug kernels) counts, at each VM-entry, a sibling
 * that runs host code or another VM, and at each leave, a sibling still in
 * guest mode.  With the sibling handling on (the default) both must stay
 * 0 while leaves kicked or held the sibling; with asi_smt=off (the control)
 * the same run must count violations, or the checker could not fail.
 *
 * In the control, also the flushes a sibling's move to host code asks
 * for: vCPU 0 of a VM of its own runs alone on CPU 0, never leaving but for
 * interrupts, while a thread on CPU 1 sleeps and wakes 100 us at a time.
 * Each wake-up from idle marks a trip on CPU 0, whose next VM-entry
 * flushes: more trips are flushed than the vCPU made itself.  (With the
 * sibling handling on, the wake-up also kicks vCPU 0 out of guest mode,
 * and the interrupt is a trip of its own, which would hide a missing
 * mark.)
 *
 * With the sibling handling on, also two VMs, one vCPU each, on the two
 * threads: each holds the other's entries while it is on its own table,
 * and only the holder's backoff (it leaves and sleeps after enough held
 * entries in a row) lets the other in.  Both must make progress, and the
 * checker must count no violation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define STOP_GPA	0x8000UL
#define LOOPS_GPA	0x8004UL	/* vCPU 0's loop count */
#define RUN_SECONDS	3

/* %rsi: the vCPU's index, set by the host. */
GUEST_CODE(smt_guest,
	"test %rsi, %rsi\n"
	"jnz 2f\n"
	/* vCPU 0: exits handled inside isolation. */
	"1: inb $0x21, %al\n"
	"incl 0x8004\n"
	"cmpl $0, 0x8000\n"
	"je 1b\n"
	"out %eax, $0xe0\n"
	"hlt\n"
	/* vCPU 1: exits to user space, each one a leave. */
	"2: out %al, $0x80\n"
	"cmpl $0, 0x8000\n"
	"je 2b\n"
	"out %eax, $0xe0\n"
	"hlt\n");

struct vcpu_thread {
	struct guest *g;
	int vcpu;
	int cpu;
	long user_exits;
	int done;		/* reached port 0xe0 */
	int ret;		/* guest_run()'s last */
	uint32_t exit_reason;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void *run_vcpu(void *arg);

static volatile int sleeper_stop;

/* On CPU 1: halt and wake, each wake-up a move from idle to host code. */
static void *sleeper(void *arg)
{
	long *wakeups = arg;

	if (pin(1))
		ktap_diag("sleeper: cannot pin to CPU 1: %s", strerror(errno));
	while (!sleeper_stop) {
		usleep(100);
		(*wakeups)++;
	}
	return NULL;
}

/* One vCPU of each of two VMs on the two threads; false if they could not run. */
static bool two_vms_phase(void)
{
	struct vcpu_thread t[2];
	struct iso_stats s0, s1;
	uint32_t loops[2];
	struct guest g[2];
	pthread_t th[2];
	int i;

	for (i = 0; i < 2; i++) {
		if (guest_create(&g[i], smt_guest_start, smt_guest_end - smt_guest_start) ||
		    ioctl(g[i].vm_fd, KVM_CREATE_IRQCHIP, 0) || guest_add_vcpu(&g[i]) != 0)
			return false;
	}
	iso_read_stats(&s0);
	for (i = 0; i < 2; i++) {
		t[i] = (struct vcpu_thread) { .g = &g[i], .vcpu = 0, .cpu = i };
		pthread_create(&th[i], NULL, run_vcpu, &t[i]);
	}
	sleep(2);
	for (i = 0; i < 2; i++)
		*(volatile uint32_t *)(g[i].ram + STOP_GPA) = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	iso_read_stats(&s1);
	for (i = 0; i < 2; i++) {
		loops[i] = *(volatile uint32_t *)(g[i].ram + LOOPS_GPA);
		guest_destroy(&g[i]);
	}
	ktap_diag("two VMs on one core, 2 s: %u and %u PIC reads; holds %lld, kicks %lld; violations at entry %lld, at leave %lld",
		  loops[0], loops[1],
		  (long long)iso_stat_delta(&s0, &s1, "smt_holds"),
		  (long long)iso_stat_delta(&s0, &s1, "smt_kicks"),
		  (long long)iso_stat_delta(&s0, &s1, "smt_violations"),
		  (long long)iso_stat_delta(&s0, &s1, "smt_leave_violations"));
	ktap_result(t[0].done && t[1].done && loops[0] > 0 && loops[1] > 0,
		    "two_vms_on_one_core_both_ran");
	ktap_result(!iso_stat_delta(&s0, &s1, "smt_violations") &&
		    !iso_stat_delta(&s0, &s1, "smt_leave_violations"),
		    "two_vms_on_one_core_no_violation");
	return true;
}

/* vCPU 0 alone beside an idling and waking sibling; false if it could not run. */
static bool idle_sibling_phase(void)
{
	struct vcpu_thread t = { .vcpu = 0, .cpu = 0 };
	int64_t trips, flushed;
	struct iso_stats s0, s1;
	pthread_t th, sl;
	long wakeups = 0;
	struct guest g;

	if (guest_create(&g, smt_guest_start, smt_guest_end - smt_guest_start) ||
	    ioctl(g.vm_fd, KVM_CREATE_IRQCHIP, 0) || guest_add_vcpu(&g) != 0)
		return false;
	t.g = &g;
	iso_read_stats(&s0);
	pthread_create(&sl, NULL, sleeper, &wakeups);
	pthread_create(&th, NULL, run_vcpu, &t);
	sleep(1);
	*(volatile uint32_t *)(g.ram + STOP_GPA) = 1;
	pthread_join(th, NULL);
	sleeper_stop = 1;
	pthread_join(sl, NULL);
	iso_read_stats(&s1);
	guest_destroy(&g);
	trips = iso_stat_delta(&s0, &s1, "trips");
	flushed = iso_stat_delta(&s0, &s1, "trips_flushed");
	ktap_diag("vCPU 0 alone, CPU 1 woke %ld times: trips %lld, trips flushed %lld",
		  wakeups, (long long)trips, (long long)flushed);
	ktap_result(t.done && wakeups > 0 && flushed > trips, "a_waking_siblings_trips_flushed_at_vm_entry");
	return true;
}

static void *run_vcpu(void *arg)
{
	struct vcpu_thread *t = arg;
	struct kvm_run *run = t->g->vcpu[t->vcpu].run;

	if (pin(t->cpu))
		ktap_diag("vCPU %d: cannot pin to CPU %d: %s", t->vcpu, t->cpu, strerror(errno));
	for (;;) {
		t->ret = guest_run(t->g, t->vcpu);
		if (t->ret == -EINTR)
			continue;
		t->exit_reason = run->exit_reason;
		if (t->ret || run->exit_reason != KVM_EXIT_IO)
			break;
		if (run->io.port == 0xe0) {
			t->done = 1;
			break;
		}
		t->user_exits++;
	}
	if (!t->done)
		ktap_diag("vCPU %d stopped: KVM_RUN %d, exit reason %s", t->vcpu, t->ret,
			  exit_reason_str(t->exit_reason));
	return NULL;
}

int main(void)
{
	struct vcpu_thread t[2];
	struct iso_stats s0, s1;
	int64_t holds, kicks, timeouts, checks, viol, leave_viol, inside, trips, flushed;
	bool control = cmdline_has("asi_smt=off");
	pthread_t th[2];
	char list[64];
	struct guest g;
	int i;

	if (!iso_expected())
		ktap_skip_all("isolation not enabled on this boot");
	if (!cpus_0_1_siblings(list, sizeof(list)))
		ktap_skip_all("CPU 0's sibling threads are \"%s\", not 0-1", list);
	if (guest_create(&g, smt_guest_start, smt_guest_end - smt_guest_start) ||
	    ioctl(g.vm_fd, KVM_CREATE_IRQCHIP, 0) || guest_add_vcpu(&g) != 0 ||
	    guest_add_vcpu(&g) != 1)
		ktap_skip_all("cannot create a VM with two vCPUs");
	/* With the in-kernel local APIC, vCPU 1 would wait for INIT and SIPI. */
	if (ioctl(g.vcpu[1].fd, KVM_SET_MP_STATE, &(struct kvm_mp_state){ KVM_MP_STATE_RUNNABLE }))
		ktap_skip_all("cannot make vCPU 1 runnable: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		struct kvm_regs regs;

		if (ioctl(g.vcpu[i].fd, KVM_GET_REGS, &regs))
			ktap_skip_all("KVM_GET_REGS: %s", strerror(errno));
		regs.rsi = i;
		if (ioctl(g.vcpu[i].fd, KVM_SET_REGS, &regs))
			ktap_skip_all("KVM_SET_REGS: %s", strerror(errno));
	}
	ktap_plan(control ? 3 : 9);
	if (!iso_read_stats(&s0)) {
		ktap_result(0, "stats_readable # cannot read " ISO_DIR "/stats");
		return ktap_exit_code();
	}
	for (i = 0; i < 2; i++) {
		t[i] = (struct vcpu_thread) { .g = &g, .vcpu = i, .cpu = i };
		pthread_create(&th[i], NULL, run_vcpu, &t[i]);
	}
	sleep(RUN_SECONDS);
	*(volatile uint32_t *)(g.ram + STOP_GPA) = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	iso_read_stats(&s1);

	holds = iso_stat_delta(&s0, &s1, "smt_holds");
	kicks = iso_stat_delta(&s0, &s1, "smt_kicks");
	timeouts = iso_stat_delta(&s0, &s1, "smt_timeouts");
	checks = iso_stat_delta(&s0, &s1, "smt_checks");
	viol = iso_stat_delta(&s0, &s1, "smt_violations");
	leave_viol = iso_stat_delta(&s0, &s1, "smt_leave_violations");
	inside = iso_stat_delta(&s0, &s1, "vmexits_inside");
	trips = iso_stat_delta(&s0, &s1, "trips");
	flushed = iso_stat_delta(&s0, &s1, "trips_flushed");
	ktap_diag("siblings %s%s: vCPU 0 returned to user space %ld times, vCPU 1 %ld times; %lld VM-exits inside; "
		  "holds %lld, kicks %lld, timeouts %lld; checked entries %lld, violations at entry %lld, at leave %lld",
		  list, control ? " (asi_smt=off)" : "", t[0].user_exits, t[1].user_exits,
		  (long long)inside,
		  (long long)holds, (long long)kicks, (long long)timeouts, (long long)checks,
		  (long long)viol, (long long)leave_viol);
	ktap_diag("trips %lld (this thread's own leaves and NMIs), trips flushed %lld; flushes: L1D %lld by MSR, %lld by software, VERW %lld",
		  (long long)trips, (long long)flushed,
		  (long long)iso_stat_delta(&s0, &s1, "flush_l1d_msr"),
		  (long long)iso_stat_delta(&s0, &s1, "flush_l1d_sw"),
		  (long long)iso_stat_delta(&s0, &s1, "flush_verw"));

	ktap_result(t[0].done && t[1].done && !t[0].user_exits && t[1].user_exits > 0,
		    "both_vcpus_ran_to_the_end");
	if (control) {
		ktap_result(viol + leave_viol > 0, "control_without_sibling_handling_counts_violations");
	} else {
		ktap_result(checks > 0, "checker_ran_at_vm_entries");
		ktap_result(viol == 0, "no_sibling_ran_host_code_at_vm_entry");
		ktap_result(leave_viol == 0, "no_sibling_in_guest_mode_after_a_leave");
		ktap_result(holds + kicks > 0, "siblings_were_held_or_kicked");
		ktap_result(timeouts == 0, "every_kicked_sibling_left_guest_mode");
		ktap_result(inside > 0, "vcpu_0_ran_inside_isolation");
	}
	guest_destroy(&g);
	if (!control && !two_vms_phase()) {
		ktap_result(0, "two_vms_on_one_core_both_ran # cannot create the VMs");
		ktap_result(0, "two_vms_on_one_core_no_violation # cannot create the VMs");
	}
	if (control && !idle_sibling_phase())
		ktap_result(0, "a_waking_siblings_trips_flushed_at_vm_entry # cannot create the VM");
	return ktap_exit_code();
}
