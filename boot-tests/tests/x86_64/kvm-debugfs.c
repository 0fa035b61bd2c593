// SPDX-License-Identifier: GPL-2.0
/*
 * What a user reads of KVM isolation matches what the test did: the stats
 * counters move by what a guest's exits to user space imply, the fault log
 * is empty, the ranges list holds the VM's, vCPU's and task's structures
 * while the VM exists and nothing of it afterwards, the ptdump view parses
 * and its totals match the stats and lie within the ranges, and the
 * tracepoints fire once per enter and exit.  With kvm.isolation_audit=1,
 * the audit at a VM's end finds a page planted shared in it (its positive
 * control) and counts no finding for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

#define EXITS		100
#define TRACING		"/sys/kernel/tracing"

/* 100 exits to user space. */
GUEST_CODE(dbg_guest,
	"mov $100, %r8d\n"
	"1: out %al, $0xe0\n"
	"dec %r8d\n"
	"jnz 1b\n"
	"hlt\n");

static char *slurp(const char *path)
{
	size_t size = 1 << 16, len = 0;
	char *buf = malloc(size);
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((n = read(fd, buf + len, size - len - 1)) > 0) {
		len += n;
		if (len + 1 == size) {
			char *bigger = realloc(buf, size *= 2);

			if (!bigger)
				break;
			buf = bigger;
		}
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	int ok = fd >= 0 && write(fd, s, strlen(s)) == (ssize_t)strlen(s);

	if (fd >= 0)
		close(fd);
	return ok;
}

static int run_guest(struct guest *g)
{
	int i;

	for (i = 0; i < EXITS; i++)
		if (guest_run(g, 0) || g->vcpu[0].run->exit_reason != KVM_EXIT_IO)
			return 0;
	return !guest_run(g, 0) && g->vcpu[0].run->exit_reason == KVM_EXIT_HLT;
}

/* A mapped region, from ranges or ptdump. */
struct region {
	unsigned long start, end;
};

#define MAX_REGIONS 4096

/*
 * Ranges of @inst (and of "core", and of "core-cpu0": the entry area of
 * the first CPU, whose table ptdump shows), and what they say about owners.
 */
static int parse_ranges(const char *text, const char *inst, struct region *r, int *owners)
{
	char name[64], owner[16], level[8], *copy = strdup(text), *line, *save;
	unsigned long start, end, bytes;
	int n = 0;

	owners[0] = owners[1] = owners[2] = 0;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%63s %15s %lx %lx %lu %7s", name, owner, &start, &end, &bytes,
			   level) != 6)
			continue;
		if (strcmp(name, inst) && strcmp(name, "core") && strcmp(name, "core-cpu0"))
			continue;
		if (!strcmp(name, inst)) {
			owners[0] += !strcmp(owner, "VM");
			owners[1] += !strcmp(owner, "vCPU");
			owners[2] += !strcmp(owner, "task");
		}
		if (n < MAX_REGIONS)
			r[n++] = (struct region) { start, end };
	}
	free(copy);
	return n;
}

static unsigned long size_of(const char *s)
{
	char unit = 0;
	unsigned long v = 0;

	if (sscanf(s, "%lu%c", &v, &unit) < 1)
		return 0;
	switch (unit) {
	case 'K': return v << 10;
	case 'M': return v << 20;
	case 'G': return v << 30;
	case 'T': return v << 40;
	default: return v;
	}
}

/*
 * Whether [@start, @end) lies within the union of @r: ptdump merges
 * neighbouring ranges with the same protections into one region.
 */
static int covered(unsigned long start, unsigned long end, struct region *r, int nr)
{
	int i;

	while (start < end) {
		for (i = 0; i < nr; i++)
			if (r[i].start <= start && start < r[i].end)
				break;
		if (i == nr)
			return 0;
		start = r[i].end;
	}
	return 1;
}

/*
 * The ptdump section of @inst: total bytes mapped, and whether every mapped
 * region lies within @r.
 */
static long ptdump_total(const char *text, const char *inst, struct region *r, int nr,
			 int *outside)
{
	char header[96], *copy = strdup(text), *line, *save, sz[16];
	unsigned long start, end;
	long total = -1;
	int in = 0;

	snprintf(header, sizeof(header), "---[ asi: %s ]---", inst);
	*outside = 0;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "---[ asi: ", 10)) {
			in = !strcmp(line, header);
			if (in)
				total = 0;
			continue;
		}
		if (!in || sscanf(line, "0x%lx-0x%lx %15s", &start, &end, sz) != 3)
			continue;
		/* Holes are listed too, without protection bits. */
		if (!strstr(line, " RW ") && !strstr(line, " ro "))
			continue;
		total += size_of(sz);
		if (!covered(start, end, r, nr) && (*outside)++ < 3)
			ktap_diag("ptdump %#lx-%#lx is in no range", start, end);
	}
	free(copy);
	return total;
}

/* A number a debugfs file holds, or -1. */
static long read_long(const char *path)
{
	char *text = slurp(path);
	long n = text ? strtol(text, NULL, 10) : -1;

	free(text);
	return n;
}

/*
 * The audit's positive control: a VM created after "audit_control" maps a
 * small object on a page it shares with others, and its audit as it goes
 * must find that page alone.
 */
static void audit_control(void)
{
	long controls = read_long(ISO_DIR "/audit_controls");
	long findings = read_long(ISO_DIR "/audit_findings");
	char *on = slurp("/sys/module/kvm/parameters/isolation_audit");
	struct guest g = { .vm_fd = -1, .kvm_fd = -1 };
	int ok = on && on[0] == 'Y';

	free(on);
	if (!ok) {
		ktap_diag("the audit is off (kvm.isolation_audit)");
		ktap_skip("audit_flags_a_page_planted_shared");
		return;
	}
	ok = controls >= 0 && write_str(ISO_DIR "/check", "audit_control") &&
	     !guest_create(&g, dbg_guest_start, dbg_guest_end - dbg_guest_start) &&
	     !guest_add_vcpu(&g) && run_guest(&g);
	guest_destroy(&g);
	ktap_diag("audit controls found %ld -> %ld, findings %ld -> %ld", controls,
		  read_long(ISO_DIR "/audit_controls"), findings,
		  read_long(ISO_DIR "/audit_findings"));
	ktap_result(ok && read_long(ISO_DIR "/audit_controls") == controls + 1 &&
		    read_long(ISO_DIR "/audit_findings") == findings,
		    "audit_flags_a_page_planted_shared");
}

static int count(const char *text, const char *needle)
{
	int n = 0;

	while (text && (text = strstr(text, needle))) {
		n++;
		text++;
	}
	return n;
}

int main(void)
{
	static struct region regions[MAX_REGIONS];
	struct iso_stats s;
	char inst[64], key[96], by_cause[512] = "", *ranges, *ptdump, *trace;
	int64_t enters, sum = 0;
	int owners[3] = { 0 }, nr, outside = 0, ok, i;
	long total, mapped;
	struct guest g;
	static const char *const causes[] = {
		"user", "put", "schedule", "mmu", "write_guest", "emulate", "nested",
		"request", "io", "msr", "event", "interrupt", "fault",
	};

	if (!iso_expected())
		ktap_skip_all("isolation not enabled on this boot");
	if (guest_create(&g, dbg_guest_start, dbg_guest_end - dbg_guest_start) || guest_add_vcpu(&g))
		ktap_skip_all("cannot create a VM");
	ktap_plan(10);

	/* stats: every enter has its exit, and the exits have their causes. */
	iso_reset_stats();
	ok = run_guest(&g);
	ok = ok && iso_read_stats(&s);
	enters = iso_stat(&s, "enters");
	for (i = 0; i < (int)(sizeof(causes) / sizeof(causes[0])); i++) {
		snprintf(key, sizeof(key), "exits_%s", causes[i]);
		sum += iso_stat(&s, key);
		if (iso_stat(&s, key) > 0)
			snprintf(by_cause + strlen(by_cause), sizeof(by_cause) - strlen(by_cause),
				 " %s %lld", causes[i], (long long)iso_stat(&s, key));
	}
	ktap_diag("%d exits to user space: enters %lld, exits %lld (%s), VM-exits %lld, trips %lld",
		  EXITS, (long long)enters, (long long)sum, by_cause + 1,
		  (long long)(iso_stat(&s, "vmexits_inside") + iso_stat(&s, "vmexits_outside")),
		  (long long)iso_stat(&s, "trips"));
	/*
	 * Most leaves are for user space; a timer interrupt that arrives
	 * while the vCPU is isolated takes a user exit's place now and then,
	 * the more so where the flushes after each trip are slow (Bochs).
	 */
	ktap_result(ok && enters >= EXITS && enters == sum &&
		    iso_stat(&s, "exits_user") >= EXITS * 3 / 4 &&
		    iso_stat(&s, "trips") == sum &&
		    iso_stat(&s, "vmexits_inside") + iso_stat(&s, "vmexits_outside") >= EXITS,
		    "stats_match_the_run");

	ktap_result(iso_fault_sites() == 0, "faults_empty");

	/* ranges: this VM's instance is named after the process. */
	snprintf(inst, sizeof(inst), "kvm-%d#", getpid());
	ranges = slurp(ISO_DIR "/ranges");
	ok = 0;
	if (ranges) {
		char *p = strstr(ranges, inst), *sp;

		if (p) {
			sp = strchr(p, ' ');
			snprintf(inst, sizeof(inst), "%.*s", (int)(sp - p), p);
			ok = 1;
		}
	}
	nr = ok ? parse_ranges(ranges, inst, regions, owners) : 0;
	ktap_diag("instance %s: %d ranges with core's; VM %d, vCPU %d, task %d", inst, nr,
		  owners[0], owners[1], owners[2]);
	ktap_result(ok && owners[0] && owners[1] && owners[2], "ranges_hold_vm_vcpu_task");

	/* ptdump: the same page table, seen by the kernel's own dumper. */
	ptdump = slurp("/sys/kernel/debug/page_tables/asi");
	total = ptdump ? ptdump_total(ptdump, inst, regions, nr, &outside) : -1;
	iso_read_stats(&s);
	snprintf(key, sizeof(key), "mapped_kib_%s", inst);
	mapped = iso_stat(&s, key);
	ktap_diag("ptdump total %ld KiB, stats %ld KiB, %d regions outside the ranges",
		  total >> 10, mapped, outside);
	ktap_result(total > 0 && total >> 10 == mapped, "ptdump_total_matches_stats");
	ktap_result(total > 0 && !outside, "ptdump_within_ranges");

	/*
	 * tracepoints: KVM's (enter, and its own exits with their reasons) and
	 * the isolation layer's (the exits it makes by itself, faults).  Every
	 * enter is matched by one exit of either.
	 */
	ok = write_str(TRACING "/events/kvm/kvm_isolation_enter/enable", "1") &&
	     write_str(TRACING "/events/kvm/kvm_isolation_exit/enable", "1") &&
	     write_str(TRACING "/events/asi/asi_exit/enable", "1") &&
	     write_str(TRACING "/events/asi/asi_fault/enable", "1") &&
	     write_str(TRACING "/trace", "");
	guest_destroy(&g);
	ok = ok && !guest_create(&g, dbg_guest_start, dbg_guest_end - dbg_guest_start) &&
	     !guest_add_vcpu(&g) && run_guest(&g);
	write_str(TRACING "/events/kvm/kvm_isolation_enter/enable", "0");
	write_str(TRACING "/events/kvm/kvm_isolation_exit/enable", "0");
	write_str(TRACING "/events/asi/asi_exit/enable", "0");
	write_str(TRACING "/events/asi/asi_fault/enable", "0");
	trace = slurp(TRACING "/trace");
	ktap_diag("trace: %d enter, %d KVM exit (%d for user space), %d layer exit, %d fault events",
		  count(trace, "kvm_isolation_enter:"), count(trace, "kvm_isolation_exit:"),
		  count(trace, "reason user"), count(trace, "asi_exit:"), count(trace, "asi_fault:"));
	ktap_result(ok && count(trace, "kvm_isolation_enter:") >= EXITS &&
		    count(trace, "kvm_isolation_exit:") + count(trace, "asi_exit:") ==
		    count(trace, "kvm_isolation_enter:") &&
		    count(trace, "reason user") >= EXITS * 9 / 10 &&
		    !count(trace, "asi_fault:"), "tracepoints_fire");

	/*
	 * All of KVM's own events: tracing reaches data isolation does not
	 * map, so vCPUs run without isolation while a KVM tracepoint is
	 * enabled -- and take no isolation fault.
	 */
	guest_destroy(&g);
	iso_reset_stats();
	ok = write_str(TRACING "/events/kvm/enable", "1") && write_str(TRACING "/trace", "") &&
	     !guest_create(&g, dbg_guest_start, dbg_guest_end - dbg_guest_start) &&
	     !guest_add_vcpu(&g) && run_guest(&g);
	write_str(TRACING "/events/kvm/enable", "0");
	free(trace);
	trace = slurp(TRACING "/trace");
	ok = ok && iso_read_stats(&s);
	ktap_diag("all kvm events on: %d kvm_exit events, enters %lld, faults %lld, fault sites %d",
		  count(trace, "kvm_exit:"), (long long)iso_stat(&s, "enters"),
		  (long long)iso_stat(&s, "faults"), iso_fault_sites());
	ktap_result(ok && count(trace, "kvm_exit:") >= EXITS && iso_stat(&s, "enters") == 0 &&
		    iso_stat(&s, "faults") == 0 && iso_fault_sites() == 0,
		    "kvm_tracing_runs_without_isolation_faults");

	/* After the VM: nothing of it is listed. */
	guest_destroy(&g);
	free(ranges);
	ranges = slurp(ISO_DIR "/ranges");
	snprintf(key, sizeof(key), "kvm-%d#", getpid());
	ktap_result(ranges && !strstr(ranges, key), "ranges_empty_after_destroy");
	iso_read_stats(&s);
	ktap_result(iso_stat(&s, "instances") == 1, "only_core_left");
	audit_control();
	free(ranges);
	free(ptdump);
	free(trace);
	return ktap_exit_code();
}
