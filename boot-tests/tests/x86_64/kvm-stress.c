// SPDX-License-Identifier: GPL-2.0
/*
 * Stress KVM isolation: a VM with more vCPUs than the host has CPUs, each
 * in an exit-heavy loop (CPUID, RDMSR, port I/O to an in-kernel device,
 * MMIO and port I/O to user space), for a minute, while other VMs are
 * created and destroyed in a loop, the threads running the vCPUs are
 * replaced, and NMIs are sent to all CPUs through sysrq.  Every value the
 * guests report is checked; at the end the page-table pages isolation owns
 * must be back to what they were before any VM existed.
 *
 * usage: kvm-stress [seconds [vcpus [nmis [churn [replace]]]]]   (60 4 1 1 1)
 * or asi.stress=seconds,vcpus,nmis,churn,replace on the kernel command line.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define PORT_REPORT	0xe0
#define PORT_DEVICE	0xe2
#define PORT_ERROR	0xe3

/*
 * Each vCPU: r12 counts iterations; r13 holds the expected CPUID.0 EAX and
 * r14 the expected IA32_APIC_BASE, which the guest checks itself.
 */
GUEST_CODE(stress_guest,
	"1: xor %eax, %eax\n"
	"xor %ecx, %ecx\n"
	"cpuid\n"
	"cmp %r13d, %eax\n"
	"jne 9f\n"
	"mov $0x1b, %ecx\n"
	"rdmsr\n"
	"cmp %r14d, %eax\n"
	"jne 9f\n"
	"mov %r12d, %eax\n"
	"out %eax, $0xe2\n"			/* ioeventfd: in the kernel */
	"mov %edi, %ebx\n"
	"shl $3, %ebx\n"
	"add $0x30000000, %ebx\n"
	"mov %r12d, (%rbx)\n"			/* MMIO to user space */
	"test $15, %r12d\n"
	"jnz 2f\n"
	"mov %r12d, %eax\n"
	"out %eax, $0xe0\n"			/* port I/O to user space */
	"2: inc %r12d\n"
	"jmp 1b\n"
	"9: out %eax, $0xe3\n"
	"hlt\n");

/* A short-lived VM: 100 CPUIDs, then HLT. */
GUEST_CODE(churn_guest,
	"mov $100, %r8d\n"
	"1: xor %eax, %eax\n"
	"cpuid\n"
	"dec %r8d\n"
	"jnz 1b\n"
	"mov $0x600d, %eax\n"
	"out %eax, $0xe0\n"
	"hlt\n");

struct vcpu_state {
	struct guest *g;
	int id;
	uint32_t next;			/* the counter value expected next */
	atomic_int stop;
	int errors;
	unsigned long exits;
};

static atomic_int stop_all;
static atomic_long churn_vms, churn_errors, nmis, replaced;

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void vcpu_error(struct vcpu_state *v, const char *fmt, unsigned long a, unsigned long b)
{
	if (v->errors++ < 5)
		ktap_diag(fmt, v->id, a, b);
}

/* Run a vCPU until told to stop; check everything it reports. */
static void *vcpu_thread(void *arg)
{
	struct vcpu_state *v = arg;
	struct guest_vcpu *gv = &v->g->vcpu[v->id];
	struct kvm_run *run = gv->run;
	uint32_t val;

	while (!atomic_load(&v->stop) && !atomic_load(&stop_all)) {
		if (guest_run(v->g, v->id)) {
			if (errno == EINTR)
				continue;
			vcpu_error(v, "vCPU %d: KVM_RUN failed %lu %lu", errno, 0);
			break;
		}
		v->exits++;
		switch (run->exit_reason) {
		case KVM_EXIT_MMIO:
			memcpy(&val, run->mmio.data, 4);
			if (!run->mmio.is_write || run->mmio.len != 4 ||
			    run->mmio.phys_addr != GUEST_MMIO_GPA + 8 * v->id || val != v->next)
				vcpu_error(v, "vCPU %d: MMIO %#lx, expected counter %lu",
					   run->mmio.phys_addr, v->next);
			v->next = val + 1;
			break;
		case KVM_EXIT_IO:
			val = guest_io_value(gv);
			if (run->io.port != PORT_REPORT || val + 1 != v->next)
				vcpu_error(v, "vCPU %d: port %#lx reported %lu", run->io.port, val);
			break;
		default:
			vcpu_error(v, "vCPU %d: exit %lu at counter %lu", run->exit_reason, v->next);
			atomic_store(&v->stop, 1);
			break;
		}
	}
	return NULL;
}

static void set_expectations(struct guest *g, int id)
{
	const struct kvm_cpuid_entry2 *leaf0 = guest_cpuid_entry(g, 0);
	struct kvm_regs regs;

	ioctl(g->vcpu[id].fd, KVM_GET_REGS, &regs);
	regs.r12 = 0;
	regs.r13 = leaf0 ? leaf0->eax : 0;
	regs.r14 = 0xfee00800 | (id == 0 ? 0x100 : 0);
	ioctl(g->vcpu[id].fd, KVM_SET_REGS, &regs);
}

/* Create, run and destroy small VMs until the end. */
static void *churn_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_all)) {
		struct guest g;
		int ok;

		if (guest_create(&g, churn_guest_start, churn_guest_end - churn_guest_start)) {
			atomic_fetch_add(&churn_errors, 1);
			continue;
		}
		ok = guest_add_vcpu(&g) == 0 && guest_run(&g, 0) == 0 &&
		     g.vcpu[0].run->exit_reason == KVM_EXIT_IO && guest_io_value(&g.vcpu[0]) == 0x600d &&
		     guest_run(&g, 0) == 0 && g.vcpu[0].run->exit_reason == KVM_EXIT_HLT;
		if (!ok)
			atomic_fetch_add(&churn_errors, 1);
		guest_destroy(&g);
		atomic_fetch_add(&churn_vms, 1);
	}
	return NULL;
}

/* NMIs to every CPU: sysrq's backtrace of all CPUs, every two seconds. */
static void *nmi_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_all)) {
		int fd = open("/proc/sysrq-trigger", O_WRONLY);

		if (fd >= 0) {
			if (write(fd, "l", 1) == 1)
				atomic_fetch_add(&nmis, 1);
			close(fd);
		}
		sleep(2);
	}
	return NULL;
}

/* asi.stress=seconds,vcpus,nmis from the kernel command line, if given. */
static void cmdline_args(int *seconds, int *nr, int *nmi, int *churn, int *replace)
{
	char arg[64];

	if (cmdline_value("asi.stress", arg, sizeof(arg)))
		sscanf(arg, "%d,%d,%d,%d,%d", seconds, nr, nmi, churn, replace);
}

int main(int argc, char **argv)
{
	int seconds = 60, nr = 4, nmi = 1, churn = 1, replace = 1;
	struct vcpu_state v[GUEST_MAX_VCPUS];
	pthread_t vt[GUEST_MAX_VCPUS], ct, nt;
	struct kvm_ioeventfd ioev;
	struct iso_stats idle, end, running;
	int64_t deadline, faults, inside, outside, pages_idle, pages_end, pages_peak = -1;
	int64_t enters, trips, requests, flushed, leaves;
	bool expected = iso_expected();
	int i, ok, efd, errors = 0;
	unsigned long exits = 0;
	struct guest g;

	cmdline_args(&seconds, &nr, &nmi, &churn, &replace);
	if (argc > 1)
		seconds = atoi(argv[1]);
	if (argc > 2)
		nr = atoi(argv[2]);
	if (argc > 3)
		nmi = atoi(argv[3]);
	if (argc > 4)
		churn = atoi(argv[4]);
	if (argc > 5)
		replace = atoi(argv[5]);
	if (nr < 1 || nr > GUEST_MAX_VCPUS)
		nr = 4;
	if (guest_create(&g, stress_guest_start, stress_guest_end - stress_guest_start) == -ENOENT)
		kvm_missing();
	guest_destroy(&g);
	ktap_plan(9);

	/* The idle value: no VM exists now.  With isolation on, stats must be readable. */
	ok = iso_read_stats(&idle);
	pages_idle = ok ? iso_stat(&idle, "pagetable_pages") : -1;
	if (expected && !ok)
		ktap_diag("cannot read " ISO_DIR "/stats");

	ok = guest_create(&g, stress_guest_start, stress_guest_end - stress_guest_start) == 0;
	for (i = 0; ok && i < nr; i++) {
		ok = guest_add_vcpu(&g) == i;
		if (ok)
			set_expectations(&g, i);
	}
	efd = eventfd(0, EFD_NONBLOCK);
	ioev = (struct kvm_ioeventfd) { .addr = PORT_DEVICE, .len = 4, .fd = efd,
					.flags = KVM_IOEVENTFD_FLAG_PIO };
	ok = ok && efd >= 0 && ioctl(g.vm_fd, KVM_IOEVENTFD, &ioev) == 0;
	if (!ktap_result(ok, "create_vm_%d_vcpus", nr))
		return KSFT_FAIL;
	ktap_diag("running %d vCPUs for %d s with VM churn, thread replacement and NMIs",
		  nr, seconds);

	memset(v, 0, sizeof(v));
	for (i = 0; i < nr; i++) {
		v[i] = (struct vcpu_state) { .g = &g, .id = i };
		pthread_create(&vt[i], NULL, vcpu_thread, &v[i]);
	}
	if (churn)
		pthread_create(&ct, NULL, churn_thread, NULL);
	if (nmi)
		pthread_create(&nt, NULL, nmi_thread, NULL);

	/* Replace one vCPU's thread every half second. */
	deadline = now_ms() + seconds * 1000LL;
	for (i = 0; now_ms() < deadline; i = (i + 1) % nr) {
		usleep(500000);
		/* The VMs' tables exist while they run: the peak must exceed idle. */
		if (iso_read_stats(&running) && iso_stat(&running, "pagetable_pages") > pages_peak)
			pages_peak = iso_stat(&running, "pagetable_pages");
		if (!replace)
			continue;
		atomic_store(&v[i].stop, 1);
		pthread_join(vt[i], NULL);
		atomic_store(&v[i].stop, 0);
		pthread_create(&vt[i], NULL, vcpu_thread, &v[i]);
		atomic_fetch_add(&replaced, 1);
	}
	atomic_store(&stop_all, 1);
	for (i = 0; i < nr; i++)
		pthread_join(vt[i], NULL);
	if (churn)
		pthread_join(ct, NULL);
	if (nmi)
		pthread_join(nt, NULL);

	for (i = 0; i < nr; i++) {
		ktap_diag("vCPU %d: %lu exits to user space, counter %u, %d errors",
			  i, v[i].exits, v[i].next, v[i].errors);
		errors += v[i].errors + (v[i].next == 0);
		exits += v[i].exits;
	}
	ktap_result(!errors, "vcpu_results");
	ktap_diag("%ld VMs created and destroyed, %ld with errors; %ld vCPU threads replaced; %ld NMI rounds",
		  atomic_load(&churn_vms), atomic_load(&churn_errors), atomic_load(&replaced),
		  atomic_load(&nmis));
	if (churn)
		ktap_result(atomic_load(&churn_vms) > 0 && !atomic_load(&churn_errors),
			    "vm_churn");
	else
		ktap_skip("vm_churn (churn off)");
	if (replace || nmi)
		ktap_result((atomic_load(&replaced) > 0 || !replace) &&
			    (atomic_load(&nmis) > 0 || !nmi), "threads_replaced_and_nmis_sent");
	else
		ktap_skip("threads_replaced_and_nmis_sent (both off)");

	guest_destroy(&g);
	close(efd);

	ok = iso_read_stats(&end);
	faults = ok ? iso_stat(&end, "faults") - iso_stat(&idle, "faults") : -1;
	enters = ok ? iso_stat(&end, "enters") - iso_stat(&idle, "enters") : -1;
	inside = ok ? iso_stat(&end, "vmexits_inside") - iso_stat(&idle, "vmexits_inside") : 0;
	outside = ok ? iso_stat(&end, "vmexits_outside") - iso_stat(&idle, "vmexits_outside") : 0;
	pages_end = ok ? iso_stat(&end, "pagetable_pages") : -1;
	trips = ok ? iso_stat(&end, "paranoid_trips") - iso_stat(&idle, "paranoid_trips") : -1;
	requests = ok ? iso_stat(&end, "trips") - iso_stat(&idle, "trips") : -1;
	flushed = ok ? iso_stat(&end, "paranoid_flushed") - iso_stat(&idle, "paranoid_flushed") : -1;
	leaves = ok ? iso_stat_sum(&end, "exits_") - iso_stat_sum(&idle, "exits_") : -1;
	if (ok) {
		char *line, *save, name[64];
		long long val;

		/* What the run moved: every counter's difference (end.text is consumed). */
		for (line = strtok_r(end.text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (sscanf(line, "%63s %lld", name, &val) == 2 &&
			    strncmp(name, "mapped_kib_", 11) && strncmp(name, "pagetable_pages", 15) &&
			    strcmp(name, "enabled") && strcmp(name, "instances"))
				ktap_diag("stats: %s +%lld", name, val - iso_stat(&idle, name));
		ktap_diag("VM-exits handled inside isolation: %.1f%%",
			  inside + outside ? 100.0 * inside / (inside + outside) : 0.0);
	}
	if (expected) {
		ktap_diag("isolation entered %lld times, %lld faults", (long long)enters,
			  (long long)faults);
		ktap_result(enters > 0, "isolation_entered");
		ktap_result(faults == 0, "no_isolation_faults");
	} else {
		ktap_skip("isolation_entered (isolation off)");
		ktap_skip("no_isolation_faults (isolation off)");
	}
	/*
	 * NMIs that hit a CPU while isolated (in guest mode, or handling an
	 * exit inside) run on full mappings: each is a trip as a leave is,
	 * and every trip is a leave's or such an NMI's.  Each NMI's trip is
	 * flushed on its way back to the restricted table, before whatever
	 * it interrupted (the last instructions before VM-entry, maybe) goes
	 * on.
	 */
	if (expected && nmi) {
		ktap_diag("%ld NMI rounds; %lld NMI, #MC or #DB taken while isolated; %lld trips for %lld leaves; %lld flushed at their return",
			  atomic_load(&nmis), (long long)trips, (long long)requests, (long long)leaves,
			  (long long)flushed);
		ktap_result(ok && trips >= 1 && requests == leaves + trips && flushed == trips,
			    "nmis_while_isolated_request_flushes");
	} else {
		ktap_skip("nmis_while_isolated_request_flushes (isolation or NMIs off)");
	}
	ktap_diag("page-table pages: %lld idle, %lld at the peak of the run, %lld after it",
		  (long long)pages_idle, (long long)pages_peak, (long long)pages_end);
	if (expected) {
		/* Readable values (not -1 == -1), tables built, and all freed. */
		ktap_result(pages_idle >= 0 && pages_peak > pages_idle,
			    "pagetable_pages_above_idle_while_running");
		ktap_result(pages_idle >= 0 && pages_end == pages_idle,
			    "pagetable_pages_back_to_idle");
	} else {
		ktap_skip("pagetable_pages_above_idle_while_running (isolation off)");
		ktap_result(pages_end == pages_idle, "pagetable_pages_back_to_idle");
	}
	return ktap_exit_code();
}
