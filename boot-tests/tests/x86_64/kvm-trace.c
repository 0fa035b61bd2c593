// SPDX-License-Identifier: GPL-2.0
/*
 * Tracing switched on and off while a vCPU runs isolated.  The tracepoints
 * of the isolated path (KVM's own, interrupt-flag tracing, MSR accesses)
 * read probe arrays and write ring buffers that no VM's table maps, so
 * vCPUs must be out of isolation before the first event fires, and may go
 * back in once tracing is off, all within one KVM_RUN.  Passes on no
 * isolation fault, on events recorded while the vCPU ran (the control:
 * tracing really was on), and on VM-exits handled inside isolation again
 * after tracing went off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define TRACING		"/sys/kernel/tracing"
#define STOP_GPA	0x8000UL

/*
 * Read the in-kernel PIC's mask (an exit handled inside isolation on every
 * emulated CPU, NRIP save or not) until the host writes a non-zero word at
 * STOP_GPA.
 */
GUEST_CODE(trace_guest,
	"1: inb $0x21, %al\n"
	"cmpl $0, 0x8000\n"
	"je 1b\n"
	"out %eax, $0xe0\n"
	"hlt\n");

/* Events on the isolated path; the first three must exist. */
static const char *const events[] = {
	"kvm/kvm_entry", "kvm/kvm_exit", "kvm/kvm_pio",
	"preemptirq/irq_enable", "preemptirq/irq_disable", "msr/write_msr", "msr/read_msr",
};
#define REQUIRED_EVENTS	3

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	int ok;

	if (fd < 0)
		return -errno;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -EIO;
}

/* Switch every event on or off; how many of the required ones took it. */
static int set_events(const char *val)
{
	char path[128];
	unsigned int i;
	int n = 0;

	for (i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		snprintf(path, sizeof(path), TRACING "/events/%s/enable", events[i]);
		if (!write_file(path, val))
			n += i < REQUIRED_EVENTS;
		else if (i < REQUIRED_EVENTS)
			ktap_diag("cannot write %s to %s", val, path);
		else if (*val == '1')
			ktap_diag("%s: not in this kernel", events[i]);
	}
	return n;
}

/* Lines of the trace buffer that name @what. */
static long count_in_trace(const char *what)
{
	char line[512];
	long n = 0;
	FILE *f = fopen(TRACING "/trace", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, what);
	fclose(f);
	return n;
}

static int64_t stat_now(const char *name)
{
	struct iso_stats s;

	return iso_read_stats(&s) ? iso_stat(&s, name) : -1;
}

static void *run_vcpu(void *arg)
{
	guest_run(arg, 0);
	return NULL;
}

int main(void)
{
	int64_t before, faults0, faults1, inside0, inside1, mismatches;
	struct guest g;
	pthread_t t;
	long events_seen;
	int on, i;

	if (!iso_expected())
		ktap_skip_all("isolation not enabled on this boot");
	if (access(TRACING "/events", F_OK) &&
	    mount("nodev", TRACING, "tracefs", 0, NULL))
		ktap_skip_all("no tracefs: %s", strerror(errno));
	if (guest_create(&g, trace_guest_start, trace_guest_end - trace_guest_start) ||
	    ioctl(g.vm_fd, KVM_CREATE_IRQCHIP, 0) || guest_add_vcpu(&g))
		ktap_skip_all("cannot create a VM");
	ktap_plan(7);
	/*
	 * One KVM_RUN spans the whole test, and switching tracepoints on and
	 * off takes a minute of it on a debug kernel under Bochs.
	 */
	guest_set_run_limit(300);
	iso_reset_stats();
	write_file(TRACING "/trace", "");
	pthread_create(&t, NULL, run_vcpu, &g);

	/* The vCPU loops in isolation. */
	for (i = 0; i < 1000 && stat_now("vmexits_inside") < 1000; i++)
		usleep(10000);
	before = stat_now("vmexits_inside");
	faults0 = stat_now("faults");
	on = set_events("1");
	usleep(500000);
	set_events("0");
	events_seen = count_in_trace("kvm_pio");
	/*
	 * The last event's count-out runs from a work item, which a slow
	 * emulated CPU (Bochs, a debug kernel) may run seconds later.
	 */
	inside0 = stat_now("vmexits_inside");
	for (i = 0, inside1 = inside0; i < 200 && inside1 <= inside0; i++) {
		usleep(100000);
		inside1 = stat_now("vmexits_inside");
	}
	ktap_diag("VM-exits inside again %d ms after tracing went off", i * 100);
	faults1 = stat_now("faults");
	mismatches = stat_now("cr3_mismatches");

	*(volatile uint32_t *)(g.ram + STOP_GPA) = 1;
	pthread_join(t, NULL);

	ktap_result(on == REQUIRED_EVENTS, "kvm_events_switched_on_while_the_vcpu_ran");
	ktap_diag("%lld VM-exits inside before tracing; %ld kvm_pio events; isolation faults %lld -> %lld; VM-exits inside %lld -> %lld after tracing went off",
		  (long long)before, events_seen, (long long)faults0, (long long)faults1,
		  (long long)inside0, (long long)inside1);
	ktap_result(before >= 1000, "vcpu_ran_inside_isolation_before_tracing");
	ktap_result(events_seen > 0, "events_recorded_while_the_vcpu_ran");
	ktap_result(faults0 >= 0 && faults1 == faults0, "no_isolation_fault_while_tracing_went_on_and_off");
	ktap_result(inside0 >= 0 && inside1 > inside0, "vmexits_inside_isolation_again_after_tracing_went_off");
	ktap_result(mismatches <= 0, "every_vmexit_on_the_vms_table_or_the_full_one");
	ktap_result(g.vcpu[0].run->exit_reason == KVM_EXIT_IO && g.vcpu[0].run->io.port == 0xe0,
		    "vcpu_ran_to_the_end");
	guest_destroy(&g);
	return ktap_exit_code();
}
