// SPDX-License-Identifier: GPL-2.0
/*
 * Secrets stay unmapped: while two VMs run, the kernel's check (debugfs
 * isolation/check) walks each VM's isolated page table for the other VM's
 * struct kvm and vCPUs, for a page of another process, and audits every
 * mapped page: none without a mapped object on it, none that a mapped
 * object shares with anything else.  Every "ok"/"not ok" line it prints is
 * a KTAP case, every "# " line a diagnostic.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"
#include "x86_guest.h"

/* CPUID for a while, then report through a port. */
GUEST_CODE(secrets_guest,
	"mov $100000, %r8d\n"
	"1: xor %eax, %eax\n"
	"cpuid\n"
	"dec %r8d\n"
	"jnz 1b\n"
	"out %eax, $0xe0\n"
	"hlt\n");

static void *run_vm(void *arg)
{
	struct guest *g = arg;

	guest_run(g, 0);
	return NULL;
}

/* A child process touches a page and tells its pfn. */
static pid_t child_page(unsigned long *pfn)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		volatile char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t entry = 0;
		int fd;

		memset((void *)page, 0x5a, 4096);
		fd = open("/proc/self/pagemap", O_RDONLY);
		if (fd >= 0 && pread(fd, &entry, 8, ((uintptr_t)page / 4096) * 8) == 8 &&
		    (entry >> 63))
			entry &= (1ULL << 55) - 1;
		else
			entry = 0;
		if (write(p[1], &entry, 8) != 8)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], pfn, 8) != 8)
		*pfn = 0;
	close(p[0]);
	return pid;
}

/* Sharing is known until issue 13's page-exclusive allocations land. */
#define SHARED_CHECK	"shares no mapped page"
#define SHARED_TODO	"issue 13: slab objects and dynamic per-CPU data share their pages"

/*
 * The per-CPU variable at offset @off ("per-CPU data 0x25a00 of CPU 1" in
 * a finding): /proc/kallsyms lists per-CPU symbols at their offsets.
 */
static void percpu_name(unsigned long off, char *name, size_t len)
{
	unsigned long addr, best = 0;
	char type, sym[128];
	FILE *f = fopen("/proc/kallsyms", "r");

	snprintf(name, len, "?");
	if (!f)
		return;
	while (fscanf(f, "%lx %c %127s%*[^\n]", &addr, &type, sym) == 3) {
		if (addr <= off && addr >= best && addr < 0x1000000) {
			best = addr;
			snprintf(name, len, "%s+%#lx", sym, off - addr);
		}
	}
	fclose(f);
}

/* A "# " line of the check, with per-CPU offsets named. */
static void report_finding(const char *line)
{
	const char *p = strstr(line, "per-CPU data 0x");
	char name[160];

	if (!p) {
		ktap_diag("%s", line + 2);
		return;
	}
	percpu_name(strtoul(p + strlen("per-CPU data "), NULL, 16), name, sizeof(name));
	ktap_diag("%s (%s)", line + 2, name);
}

int main(void)
{
	char buf[65536], *line, *save, *c;
	struct guest a, b;
	pthread_t ta, tb;
	unsigned long pfn;
	int fd, n = 0, ok;
	ssize_t len;
	pid_t child;

	if (!iso_expected())
		ktap_skip_all("isolation not enabled on this boot");
	if (guest_create(&a, secrets_guest_start, secrets_guest_end - secrets_guest_start) ||
	    guest_create(&b, secrets_guest_start, secrets_guest_end - secrets_guest_start) ||
	    guest_add_vcpu(&a) || guest_add_vcpu(&b))
		ktap_skip_all("cannot create two VMs");
	child = child_page(&pfn);

	pthread_create(&ta, NULL, run_vm, &a);
	pthread_create(&tb, NULL, run_vm, &b);
	usleep(200000);		/* both VMs are running their loops now */

	fd = open(ISO_DIR "/check", O_RDWR);
	len = -1;
	if (fd >= 0) {
		snprintf(buf, sizeof(buf), "pfn %lx", pfn);
		if (pfn && write(fd, buf, strlen(buf)) < 0)
			pfn = 0;
		len = pread(fd, buf, sizeof(buf) - 1, 0);
		close(fd);
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (len <= 0)
		ktap_skip_all("no " ISO_DIR "/check");
	buf[len] = 0;

	/*
	 * Two VMs, each: the other VM, stray pages, shared pages, the other
	 * process's page.
	 */
	for (line = buf; *line; line = strchr(line, '\n') + 1) {
		if (strncmp(line, "# ", 2))
			n++;
		if (!strchr(line, '\n'))
			break;
	}
	ktap_plan(n + 2);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# ", 2)) {
			report_finding(line);
			continue;
		}
		ok = !strncmp(line, "ok ", 3);
		line += ok ? 3 : 7;
		/* VM names hold a '#', which KTAP reads as a directive. */
		for (c = line; (c = strchr(c, '#')); )
			*c = '.';
		if (strstr(line, SHARED_CHECK))
			ktap_todo(ok, SHARED_TODO, "%s", line);
		else
			ktap_result(ok, "%s", line);
	}
	ktap_diag("child page pfn %#lx", pfn);
	ktap_result(a.vcpu[0].run->exit_reason == KVM_EXIT_IO &&
		    b.vcpu[0].run->exit_reason == KVM_EXIT_IO, "vms_ran");
	ktap_result(n == (pfn ? 8 : 6), "all_checks_reported");
	guest_destroy(&a);
	guest_destroy(&b);
	return ktap_exit_code();
}
