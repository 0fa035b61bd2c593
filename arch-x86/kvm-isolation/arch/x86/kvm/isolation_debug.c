// SPDX-License-Identifier: GPL-2.0
/*
 * KVM address space isolation: debugging aids, with
 * CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG only.  Files under
 * /sys/kernel/debug/kvm/isolation/:
 *
 *   check   while VMs run, one "ok"/"not ok" line per check of what each
 *           VM's table maps; writing "pfn N", "secret HEX", "control HEX",
 *           "audit_control" or "freed_control" sets what the next reads
 *           look for; each VM's line on the objects KVM freed counts
 *           those that hold the secret
 *   audits, audit_findings, audit_controls
 *           with kvm.isolation_audit=1, each VM's table is audited as the
 *           VM goes: how many, how many had findings, how many controls
 *           were found
 *   ranges  every mapped range: instance, owner, start, end, bytes, level
 *   canary  writing N makes each CPU's next N isolated VM-entries read a
 *           page nothing maps: canary_faults in stats
 *   ds_control
 *           writing 1 makes every CPU act as if its PMU wrote its debug
 *           store (PEBS, BTS), so that none enters isolation: ds_holds
 *           in stats; 0 stops
 *
 * They read any memory a VM's table maps: not for production kernels.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/kvm_host.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include <asm/asi_debug.h>

#include "isolation.h"

/*
 * Audit each VM's address space as the VM goes, when its table is at its
 * fullest: for tests and for users who want every VM checked.  A finding
 * is an error on the console; debugfs counts audits and findings.
 */
static bool __read_mostly isolation_audit;
module_param(isolation_audit, bool, 0644);
static atomic_t kvm_x86_isolation_audits, kvm_x86_isolation_audit_findings;
/*
 * "audit_control" written to the check, with the audit on: the next VM
 * maps a small object of its own, whose page it shares with others, and
 * its audit must find that page and nothing else.
 */
static atomic_t kvm_x86_isolation_audit_control_armed;
static atomic_t kvm_x86_isolation_audit_controls;

/*
 * "freed_control" written to the check: the next I/O bus a VM retires stays
 * mapped in its table while KVM frees it, as if it were never unmapped,
 * until the VM goes.  Tests that plant secrets in freed memory use it to
 * show that their search finds such a page.
 */
static atomic_t kvm_x86_isolation_freed_control_armed;

/*
 * Bytes a test planted: the secret somewhere no VM may map, the control in
 * memory every VM maps (its vCPUs' run pages).  Kept in allocations of
 * their own, under kvm_lock: the kvm module's data is mapped.
 */
struct kvm_x86_isolation_needle {
	u8 *bytes;
	size_t len;
};

static struct kvm_x86_isolation_needle check_secret, check_control;

/* Does @iso map a page of any object of @kvm: the VM, its vCPUs, their data? */
static bool kvm_x86_isolation_maps_vm(struct asi *iso, struct kvm *kvm)
{
	struct kvm_isolation_obj o[KVM_X86_ISOLATION_VCPU_OBJS];
	struct kvm_vcpu *vcpu;
	unsigned long i;
	bool leak;
	int j;

	leak = asi_maps_allocation(iso, kvm) ||
	       (kvm->arch.isolation && asi_maps_allocation(iso, kvm->arch.isolation));
	kvm_for_each_vcpu(i, vcpu, kvm) {
		leak |= asi_maps_allocation(iso, vcpu);
		kvm_x86_isolation_vcpu_objs(vcpu, o);
		for (j = 0; j < ARRAY_SIZE(o); j++)
			leak |= asi_maps_any(iso, o[j].ptr, o[j].size);
	}
	return leak;
}

/* The pfn of a page some test says is not ours: "check" makes sure. */
static unsigned long check_pfn;

/*
 * The VM's tasks whose user FPU state is in their task struct, which the
 * VM maps: none, once KVM_RUN moved it out (an exec brings it back).
 */
static unsigned long kvm_x86_isolation_user_fpu(struct kvm_x86_isolation *xi)
{
	struct kvm_x86_isolation_task *t;
	struct fpstate *user;
	unsigned long n = 0;
	struct fpu *fpu;

	mutex_lock(&xi->lock);
	list_for_each_entry(t, &xi->tasks, list) {
		fpu = &t->task->thread.fpu;
		user = READ_ONCE(fpu->__task_fpstate) ?: READ_ONCE(fpu->fpstate);
		n += user == &fpu->__fpstate;
	}
	mutex_unlock(&xi->lock);
	return n;
}

/* Is @ptr an object the VM maps now (KVM may reuse what it freed)? */
static bool kvm_x86_isolation_live(struct kvm_x86_isolation *xi, const void *ptr)
{
	int i;

	for (i = 0; i < KVM_NR_BUSES; i++)
		if (xi->buses[i] == ptr || xi->retired[i] == ptr)
			return true;
	return xa_load(&xi->optional, (unsigned long)ptr);
}

/*
 * The last objects KVM freed of those the VM mapped: the VM must map none
 * of them (but where KVM allocated a new object of the VM since), and how
 * many now hold the planted secret says whether a test planted it where
 * KVM had freed.  Freed memory is copied without faulting first, and not
 * read at all under KASAN, which would report each read.
 */
static void kvm_x86_isolation_check_freed(struct seq_file *m, struct kvm_x86_isolation *xi,
					  const char *name)
{
	bool read = !IS_ENABLED(CONFIG_KASAN) && check_secret.len;
	unsigned int i, n, mapped = 0, holding = 0;
	const struct kvm_isolation_obj *o;
	u8 *copy;

	mutex_lock(&xi->lock);
	n = min_t(unsigned int, xi->nr_freed, KVM_X86_ISOLATION_FREED);
	for (i = 0; i < n; i++) {
		o = &xi->freed[i];
		mapped += asi_maps_any(xi->iso, o->ptr, o->size) &&
			  !kvm_x86_isolation_live(xi, o->ptr);
		copy = read ? kvmalloc(o->size, GFP_KERNEL) : NULL;
		read = read && copy;
		if (copy && !copy_from_kernel_nofault(copy, o->ptr, o->size))
			holding += asi_holds(copy, o->size, check_secret.bytes, check_secret.len);
		kvfree(copy);
	}
	mutex_unlock(&xi->lock);
	seq_printf(m, "%s %s maps none of the last %u objects KVM freed while it lived (%u mapped, %u of them hold the secret%s)\n",
		   mapped ? "not ok" : "ok", name, n, mapped, holding,
		   read ? "" : ", not read");
}

/*
 * debugfs "check": while VMs run, nothing of another VM, no page of another
 * process, no page without a mapped object, and no page that a mapped
 * object shares with anything else may be mapped in a VM's isolated address
 * space.  One "ok"/"not ok" line per check; "# " lines describe findings.
 */
static int kvm_x86_isolation_check_show(struct seq_file *m, void *v)
{
	unsigned long known, user_fpu;
	struct asi_audit audit;
	const char *name;
	struct kvm *a, *b;
	bool leak;

	mutex_lock(&kvm_lock);
	list_for_each_entry(a, &vm_list, vm_list) {
		struct kvm_x86_isolation *xi = a->arch.isolation;
		long found;

		if (!xi)
			continue;
		list_for_each_entry(b, &vm_list, vm_list) {
			if (b == a)
				continue;
			leak = kvm_x86_isolation_maps_vm(xi->iso, b);
			seq_printf(m, "%s %s maps nothing of %s\n", leak ? "not ok" : "ok",
				   asi_name(xi->iso), b->arch.isolation ?
				   asi_name(b->arch.isolation->iso) : b->stats_id);
		}
		name = asi_name(xi->iso);
		asi_audit(xi->iso, m, 32, &audit);
		seq_printf(m, "# %s: %lu KiB mapped, %lu KiB of it on pages shared with what it may not map, %lu bytes of those\n",
			   name, audit.pages << (PAGE_SHIFT - 10),
			   audit.shared << (PAGE_SHIFT - 10), audit.foreign_bytes);
		seq_printf(m, "%s %s maps no page without an object of its own or the core's (%lu stray)\n",
			   audit.stray ? "not ok" : "ok", name, audit.stray);
		known = audit.shared_percpu + audit.shared_task;
		seq_printf(m, "%s %s shares no mapped page with anything else, but for dynamic per-CPU data and tasks (%lu shared)\n",
			   audit.shared - known ? "not ok" : "ok", name, audit.shared - known);
		seq_printf(m, "%s %s shares no page of dynamic per-CPU data (%lu shared)\n",
			   audit.shared_percpu ? "not ok" : "ok", name, audit.shared_percpu);
		seq_printf(m, "%s %s shares no page of a task (%lu shared)\n",
			   audit.shared_task ? "not ok" : "ok", name, audit.shared_task);
		seq_printf(m, "%s %s maps nothing the kernel unmapped, moved or freed since (%lu stale)\n",
			   audit.stale ? "not ok" : "ok", name, audit.stale);
		seq_printf(m, "%s %s maps nothing writable that the kernel maps read-only, and nothing writable and executable (%lu)\n",
			   audit.writable ? "not ok" : "ok", name, audit.writable);
		seq_printf(m, "%s %s maps no CPU's hard-IRQ stack (%lu mapped)\n",
			   audit.irq_stacks ? "not ok" : "ok", name, audit.irq_stacks);
		seq_printf(m, "%s %s maps no CPU's debug store or PEBS/BTS buffers (%lu CPUs')\n",
			   audit.debug_stores ? "not ok" : "ok", name, audit.debug_stores);
		seq_printf(m, "%s %s maps on each CPU no other CPU's entry area, by any address (%lu CPUs' tables do, or do not follow the VM's)\n",
			   audit.bad_cpu_tables ? "not ok" : "ok", name, audit.bad_cpu_tables);
		seq_printf(m, "%s %s maps %lu tasks that run its vCPUs and no page of another task (%lu mapped)\n",
			   audit.other_tasks || !audit.tasks ? "not ok" : "ok", name,
			   audit.tasks, audit.other_tasks);
		user_fpu = kvm_x86_isolation_user_fpu(xi);
		seq_printf(m, "%s %s maps no task's user FPU state (%lu tasks hold it in their task struct)\n",
			   user_fpu ? "not ok" : "ok", name, user_fpu);
		if (check_pfn && pfn_valid(check_pfn)) {
			leak = asi_maps_any(xi->iso, pfn_to_kaddr(check_pfn), 1);
			seq_printf(m, "%s %s does not map pfn %#lx\n", leak ? "not ok" : "ok",
				   asi_name(xi->iso), check_pfn);
		}
		if (check_secret.len) {
			found = asi_find(xi->iso, check_secret.bytes, check_secret.len);
			seq_printf(m, "%s %s maps no page holding the planted secret (%ld)\n",
				   found ? "not ok" : "ok", name, found);
		}
		kvm_x86_isolation_check_freed(m, xi, name);
		/* In each vCPU's run page, and nowhere else it maps. */
		if (check_control.len) {
			found = asi_find(xi->iso, check_control.bytes, check_control.len);
			seq_printf(m, "%s %s maps the control planted in its run pages once per vCPU (%ld pages, %d vCPUs)\n",
				   found == atomic_read(&a->online_vcpus) ? "ok" : "not ok", name,
				   found, atomic_read(&a->online_vcpus));
		}
	}
	mutex_unlock(&kvm_lock);
	return 0;
}

static int kvm_x86_isolation_check_open(struct inode *inode, struct file *file)
{
	return single_open(file, kvm_x86_isolation_check_show, NULL);
}

/* Replace a needle with @hex, 2 to 128 hex digits. */
static int kvm_x86_isolation_set_needle(struct kvm_x86_isolation_needle *n, const char *hex)
{
	size_t len = strlen(hex) / 2;
	u8 *bytes;

	if (!len || len > 64 || strlen(hex) % 2)
		return -EINVAL;
	bytes = kmalloc(len, GFP_KERNEL);
	if (!bytes)
		return -ENOMEM;
	if (hex2bin(bytes, hex, len)) {
		kfree(bytes);
		return -EINVAL;
	}
	mutex_lock(&kvm_lock);
	kfree(n->bytes);
	n->bytes = bytes;
	n->len = len;
	mutex_unlock(&kvm_lock);
	return 0;
}

/*
 * For the next reads: "pfn N", a page that must not be mapped; "secret
 * HEX", bytes no VM may map; "control HEX", bytes every VM must map;
 * "audit_control" and "freed_control" (or "freed_control off") arm or
 * disarm the controls.
 */
static ssize_t kvm_x86_isolation_check_write(struct file *file, const char __user *buf,
					     size_t len, loff_t *ppos)
{
	char str[160], hex[130];
	unsigned long pfn;
	int ret = -EINVAL;

	if (len >= sizeof(str) || copy_from_user(str, buf, len))
		return -EINVAL;
	str[len] = 0;
	if (sscanf(str, "pfn %lx", &pfn) == 1) {
		check_pfn = pfn;
		ret = 0;
	} else if (sscanf(str, "secret %129s", hex) == 1) {
		ret = kvm_x86_isolation_set_needle(&check_secret, hex);
	} else if (sscanf(str, "control %129s", hex) == 1) {
		ret = kvm_x86_isolation_set_needle(&check_control, hex);
	} else if (!strcmp(strim(str), "audit_control")) {
		atomic_set(&kvm_x86_isolation_audit_control_armed, 1);
		ret = 0;
	} else if (!strcmp(strim(str), "freed_control")) {
		atomic_set(&kvm_x86_isolation_freed_control_armed, 1);
		ret = 0;
	} else if (!strcmp(strim(str), "freed_control off")) {
		atomic_set(&kvm_x86_isolation_freed_control_armed, 0);
		ret = 0;
	}
	memzero_explicit(str, sizeof(str));
	memzero_explicit(hex, sizeof(hex));
	return ret ?: len;
}

static const struct file_operations kvm_x86_isolation_check_fops = {
	.owner = THIS_MODULE,
	.open = kvm_x86_isolation_check_open,
	.read = seq_read,
	.write = kvm_x86_isolation_check_write,
	.llseek = seq_lseek,
	.release = single_release,
};

/*
 * Pages the VM's address space may not map: stray ones, shared ones,
 * other tasks' pages, stale pages, pages writable where the kernel's
 * mapping is not, CPUs' hard-IRQ stacks and debug stores, CPUs' tables
 * that map another CPU's entry area, and tasks' user FPU state.  A
 * degraded kernel (asi_degraded()) has findings, and they are counted.
 */
struct kvm_x86_isolation_findings {
	unsigned long stray, shared, others, stale, writable, irq_stacks, debug_stores;
	unsigned long entry_areas, user_fpu;
};

static unsigned long kvm_x86_isolation_findings(struct kvm_x86_isolation *xi,
						struct kvm_x86_isolation_findings *f)
{
	struct asi_audit a;

	asi_audit(xi->iso, NULL, 0, &a);
	f->stray = a.stray;
	f->stale = a.stale;
	f->writable = a.writable;
	f->irq_stacks = a.irq_stacks;
	f->debug_stores = a.debug_stores;
	f->entry_areas = a.bad_cpu_tables;
	f->user_fpu = kvm_x86_isolation_user_fpu(xi);
	f->shared = a.shared;
	f->others = a.other_tasks;
	return f->stray + f->shared + f->others + f->stale + f->writable + f->irq_stacks +
	       f->debug_stores + f->entry_areas + f->user_fpu;
}

/**
 * kvm_x86_isolation_audit() - audit a VM's address space as the VM goes
 * @xi: the VM's isolation
 *
 * With kvm.isolation_audit=1 only.
 */
void kvm_x86_isolation_audit(struct kvm_x86_isolation *xi)
{
	struct kvm_x86_isolation_findings f, control;
	unsigned long total, control_total;
	bool found;

	if (!READ_ONCE(isolation_audit))
		return;
	atomic_inc(&kvm_x86_isolation_audits);
	total = kvm_x86_isolation_findings(xi, &f);
	/*
	 * The control's VM must show its one shared page, and nothing once
	 * the control is unmapped: then that page was the control's.
	 */
	if (xi->audit_control) {
		control = f;
		control_total = total;
		asi_unmap(xi->iso, xi->audit_control);
		kfree(xi->audit_control);
		xi->audit_control = NULL;
		found = control.shared == 1 && control_total == 1;
		if (found) {
			total = kvm_x86_isolation_findings(xi, &f);
			found = !total;
		}
		if (found) {
			atomic_inc(&kvm_x86_isolation_audit_controls);
			pr_info("audit control: %s: the page planted shared was found\n",
				asi_name(xi->iso));
			return;
		}
		pr_err("isolation audit: %s: the page planted shared was not found alone (%lu shared with it)\n",
		       asi_name(xi->iso), control.shared);
	}
	if (!total)
		return;
	atomic_inc(&kvm_x86_isolation_audit_findings);
	pr_err("isolation audit: %s maps %lu stray pages, %lu shared pages, %lu other tasks' pages, %lu stale pages, %lu pages writable beyond the kernel's mapping, %lu CPUs' hard-IRQ stacks, %lu CPUs' debug stores, %lu CPUs' tables with another's entry area and %lu tasks' user FPU state (debugfs kvm/isolation/check names them while a VM runs)\n",
	       asi_name(xi->iso), f.stray, f.shared, f.others, f.stale, f.writable, f.irq_stacks,
	       f.debug_stores, f.entry_areas, f.user_fpu);
}

/**
 * kvm_x86_isolation_plant_audit_control() - plant the audit's control
 * @xi: a new VM's isolation
 *
 * Only when the control is armed.
 */
void kvm_x86_isolation_plant_audit_control(struct kvm_x86_isolation *xi)
{
	if (!READ_ONCE(isolation_audit) ||
	    !atomic_xchg(&kvm_x86_isolation_audit_control_armed, 0))
		return;
	xi->audit_control = kzalloc(64, GFP_KERNEL_ACCOUNT);
	if (xi->audit_control &&
	    asi_map(xi->iso, xi->audit_control, 64, ASI_PTE, "control")) {
		kfree(xi->audit_control);
		xi->audit_control = NULL;
	}
	if (!xi->audit_control)
		pr_warn("the audit's control could not be planted\n");
}

/**
 * kvm_x86_isolation_note_freed() - remember an object KVM is about to free
 * @xi: the VM's isolation, its lock held
 * @ptr: the object, which the VM mapped until now
 * @size: the size allocated for it
 *
 * The check reads the last ones: the VM must map none, and what it finds
 * of the planted secret in them shows that a test planted it where KVM
 * had freed.
 */
void kvm_x86_isolation_note_freed(struct kvm_x86_isolation *xi, const void *ptr, size_t size)
{
	lockdep_assert_held(&xi->lock);
	xi->freed[xi->nr_freed++ % KVM_X86_ISOLATION_FREED] =
		(struct kvm_isolation_obj) { ptr, size };
}

/**
 * kvm_x86_isolation_keep_freed() - keep a retired bus mapped, as a control
 * @xi: the VM's isolation, its lock held
 * @old: the bus KVM is about to free
 *
 * Only when the freed-memory control is armed, once.
 *
 * Return: true if @old is to stay mapped (until the VM goes).
 */
bool kvm_x86_isolation_keep_freed(struct kvm_x86_isolation *xi, void *old)
{
	lockdep_assert_held(&xi->lock);
	if (xi->freed_control || !atomic_xchg(&kvm_x86_isolation_freed_control_armed, 0))
		return false;
	xi->freed_control = old;
	pr_info("freed control: %s keeps a freed I/O bus mapped\n", asi_name(xi->iso));
	return true;
}

DEFINE_SHOW_ATTRIBUTE(asi_ranges);	/* the isolation layer's show */

static ssize_t iso_canary_write(struct file *file, const char __user *buf, size_t len,
				loff_t *ppos)
{
	unsigned int n;
	int ret = kstrtouint_from_user(buf, len, 0, &n);

	if (!ret)
		ret = asi_arm_canary(n);
	return ret ? ret : len;
}

static const struct file_operations iso_canary_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = iso_canary_write,
	.llseek = noop_llseek,
};

static ssize_t iso_ds_control_write(struct file *file, const char __user *buf, size_t len,
				    loff_t *ppos)
{
	bool on;
	int ret = kstrtobool_from_user(buf, len, &on);

	if (ret)
		return ret;
	asi_pretend_ds_in_use(on);
	return len;
}

static const struct file_operations iso_ds_control_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = iso_ds_control_write,
	.llseek = noop_llseek,
};

/**
 * kvm_x86_isolation_debug_init() - create the debugging files
 * @dir: KVM's isolation directory in debugfs
 */
void kvm_x86_isolation_debug_init(struct dentry *dir)
{
	debugfs_create_file("check", 0600, dir, NULL, &kvm_x86_isolation_check_fops);
	debugfs_create_atomic_t("audits", 0444, dir, &kvm_x86_isolation_audits);
	debugfs_create_atomic_t("audit_findings", 0444, dir, &kvm_x86_isolation_audit_findings);
	debugfs_create_atomic_t("audit_controls", 0444, dir, &kvm_x86_isolation_audit_controls);
	debugfs_create_file("ranges", 0444, dir, NULL, &asi_ranges_fops);
	debugfs_create_file("canary", 0200, dir, NULL, &iso_canary_fops);
	debugfs_create_file("ds_control", 0200, dir, NULL, &iso_ds_control_fops);
}

/**
 * kvm_x86_isolation_debug_teardown() - forget what the tests planted
 */
void kvm_x86_isolation_debug_teardown(void)
{
	kfree(check_secret.bytes);
	kfree(check_control.bytes);
	check_secret = (struct kvm_x86_isolation_needle) {};
	check_control = (struct kvm_x86_isolation_needle) {};
	asi_pretend_ds_in_use(false);
}
