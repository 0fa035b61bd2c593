// SPDX-License-Identifier: GPL-2.0
/*
 * Secrets stay unmapped: while two VMs run, the kernel's check (debugfs
 * isolation/check) walks each VM's isolated page table for the other VM's
 * struct kvm and vCPUs, for a page of another process, and for direct-map
 * pages outside the mapped ranges.  Every line it prints is a KTAP case.
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

int main(void)
{
	char buf[8192], *line, *save;
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

	/* Two VMs, each: the other VM, the direct map, the other process's page. */
	for (line = buf; (line = strchr(line, '\n')); line++)
		n++;
	ktap_plan(n + 2);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		ok = !strncmp(line, "ok ", 3);
		ktap_result(ok, "%s", line + (ok ? 3 : 7));
	}
	ktap_diag("child page pfn %#lx", pfn);
	ktap_result(a.vcpu[0].run->exit_reason == KVM_EXIT_IO &&
		    b.vcpu[0].run->exit_reason == KVM_EXIT_IO, "vms_ran");
	ktap_result(n == (pfn ? 6 : 4), "all_checks_reported");
	guest_destroy(&a);
	guest_destroy(&b);
	return ktap_exit_code();
}
