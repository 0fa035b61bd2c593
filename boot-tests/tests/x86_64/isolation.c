// SPDX-License-Identifier: GPL-2.0
/*
 * Reading KVM isolation's debugfs files and the kernel command line from
 * the in-guest tests, and pinning them to CPUs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ktap.h"
#include "isolation.h"

static ssize_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((size_t)total < size - 1 &&
	       (n = read(fd, buf + total, size - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return total;
}

bool iso_read_stats(struct iso_stats *s)
{
	return read_file(ISO_DIR "/stats", s->text, sizeof(s->text)) > 0;
}

int64_t iso_stat(const struct iso_stats *s, const char *name)
{
	size_t len = strlen(name);
	const char *p = s->text;

	while (p && *p) {
		if (!strncmp(p, name, len) && p[len] == ' ')
			return strtoll(p + len + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

int64_t iso_stat_delta(const struct iso_stats *from, const struct iso_stats *to,
		       const char *name)
{
	return iso_stat(to, name) - iso_stat(from, name);
}

int64_t iso_stat_sum(const struct iso_stats *s, const char *prefix)
{
	size_t len = strlen(prefix);
	const char *p = s->text, *sp;
	int64_t sum = 0;

	while (p && *p) {
		sp = strchr(p, ' ');
		if (!strncmp(p, prefix, len) && sp)
			sum += strtoll(sp + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return sum;
}

/* Write @val to the debugfs file @name. */
static bool iso_write(const char *name, const char *val)
{
	char path[128];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), ISO_DIR "/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return false;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

bool iso_reset_stats(void)
{
	return iso_write("stats", "0");
}

bool iso_arm_canary(unsigned int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", n);
	return iso_write("canary", buf);
}

bool iso_ds_control(bool on)
{
	return iso_write("ds_control", on ? "1" : "0");
}

int iso_fault_sites(void)
{
	char buf[8192], *line, *save;
	int n = 0;

	if (read_file(ISO_DIR "/faults", buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		ktap_diag("isolation fault: %s", line);
		n++;
	}
	return n;
}

bool cmdline_has(const char *param)
{
	char buf[4096], *tok, *save;

	if (read_file("/proc/cmdline", buf, sizeof(buf)) < 0)
		return false;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, param))
			return true;
	return false;
}

bool cmdline_value(const char *name, char *out, size_t len)
{
	char buf[4096], *tok, *save;
	size_t n = strlen(name);

	if (read_file("/proc/cmdline", buf, sizeof(buf)) < 0)
		return false;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strncmp(tok, name, n) && tok[n] == '=') {
			snprintf(out, len, "%s", tok + n + 1);
			return true;
		}
	return false;
}

/*
 * KVM's parameter on the kernel command line; or the layer's asi=on there
 * and KVM's parameter given only when the module loads (asi.kvm_params).
 */
bool iso_expected(void)
{
	char params[256];

	if (cmdline_has("kvm.address_space_isolation=1"))
		return true;
	return cmdline_has("asi=on") && cmdline_value("asi.kvm_params", params, sizeof(params)) &&
	       strstr(params, "address_space_isolation=1");
}

bool cpu_has_flag(const char *flag)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/cpuinfo", "r");

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, flag);

		found = !strncmp(line, "flags", 5) && p && p[-1] == ' ' &&
			(p[strlen(flag)] == ' ' || p[strlen(flag)] == '\n');
	}
	if (f)
		fclose(f);
	return found;
}

bool cpus_0_1_siblings(char *list, size_t len)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");

	if (!f)
		return false;
	if (!fgets(list, len, f))
		list[0] = 0;
	fclose(f);
	list[strcspn(list, "\n")] = 0;
	return !strcmp(list, "0-1") || !strcmp(list, "0,1");
}

bool cpus_0_1_stunned(char *list, size_t len)
{
	return cpus_0_1_siblings(list, len) && !cmdline_has("asi_smt=off");
}

void kvm_missing(void)
{
	const char *ext = cpu_has_flag("vmx") ? "vmx" : cpu_has_flag("svm") ? "svm" : NULL;

	if (!ext)
		ktap_skip_all("no /dev/kvm (the CPU has neither vmx nor svm)");
	printf("KTAP version 1\n1..1\n");
	printf("not ok 1 kvm_available # no /dev/kvm although the CPU has %s: KVM did not initialise (see the console)\n",
	       ext);
	exit(KSFT_FAIL);
}

void iso_pin_to_cpu(int cpu)
{
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	for (i = 0; i < CPU_SETSIZE; i++)
		if (cpu < 0 || i == cpu)
			CPU_SET(i, &set);
	sched_setaffinity(0, sizeof(set), &set);
}
