// SPDX-License-Identifier: GPL-2.0
/*
 * Address space isolation (ASI): debugging aids, with
 * CONFIG_ADDRESS_SPACE_ISOLATION_DEBUG only.  The audit of what a
 * restricted table maps, the search of its pages for planted bytes, the
 * ranges list, the summary by kind of memory and ptdump.  They read any
 * memory a table maps: not for production kernels.
 */

#define pr_fmt(fmt) "asi: " fmt

#include <linux/kasan.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>
#include <linux/pgalloc.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>

#include <asm/cpu_entry_area.h>
#include <asm/desc.h>
#include <asm/asi_debug.h>
#include <asm/sections.h>
#include <asm/tlbflush.h>

#include "asi.h"

static const char *const asi_level_names[] = { "pgd", "p4d", "pud", "pmd", "pte" };

/*
 * Bytes of [start, end) that no object of @asi or of the core stands for;
 * the first of them in *first.  The core's ranges do not change while
 * other instances exist.
 */
static unsigned long asi_uncovered(struct asi *asi, unsigned long start,
				   unsigned long end, unsigned long *first)
{
	struct asi *owners[] = { asi, asi->shared };
	unsigned long pos = start, gap = 0, reach, next;
	struct asi_range *r;
	int i;

	*first = 0;
	while (pos < end) {
		reach = pos;
		next = end;
		for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++) {
			list_for_each_entry(r, &owners[i]->ranges, list) {
				if (r->obj_start <= pos && r->obj_end > reach)
					reach = r->obj_end;
				else if (r->obj_start > pos && r->obj_start < next)
					next = r->obj_start;
			}
		}
		if (reach > pos) {
			pos = reach;
			continue;
		}
		if (!gap)
			*first = pos;
		gap += next - pos;
		pos = next;
	}
	return gap;
}

/* Name what holds @addr, a byte mapped for no object. */
static void asi_audit_describe(struct seq_file *m, unsigned long addr)
{
	struct page *page;
	unsigned long off;
	int cpu;

	if (addr >= (unsigned long)_text && addr < (unsigned long)_end) {
		seq_printf(m, "kernel image %pS", (void *)addr);
		return;
	}
	for_each_possible_cpu(cpu) {
		off = addr - per_cpu_offset(cpu);
		if (off >= (unsigned long)__per_cpu_start && off < (unsigned long)__per_cpu_end) {
			seq_printf(m, "per-CPU data %#lx of CPU %d", off, cpu);
			return;
		}
	}
	if (is_vmalloc_or_module_addr((void *)addr) || !virt_addr_valid(addr)) {
		seq_printf(m, "%pS", (void *)addr);
		return;
	}
	page = virt_to_head_page((void *)addr);
	if (PageSlab(page))
		seq_puts(m, "slab memory");
	else if (PageBuddy(page) || !page_count(page))
		seq_puts(m, "free memory");
	else
		seq_printf(m, "a page (%pGp)", &page->flags);
}

/*
 * What the objects mapped on the page at @addr are: a known kind only if
 * all of them are of it, so that an ordinary object beside still counts.
 */
static enum asi_kind asi_page_kind(struct asi *asi, unsigned long addr)
{
	struct asi *owners[] = { asi, asi->shared };
	enum asi_kind kind = ASI_KIND_TASK;
	struct asi_range *r;
	int i;

	for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++)
		list_for_each_entry(r, &owners[i]->ranges, list)
			if (r->obj_end > addr && r->obj_start < addr + PAGE_SIZE)
				kind = min(kind, r->kind);
	return kind;
}

/* Name the objects mapped on the page at @addr, with the bytes each covers. */
static void asi_audit_owners(struct seq_file *m, struct asi *asi, unsigned long addr)
{
	struct asi *owners[] = { asi, asi->shared };
	unsigned long from, to;
	struct asi_range *r;
	int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(owners) && owners[i]; i++) {
		list_for_each_entry(r, &owners[i]->ranges, list) {
			if (r->obj_end <= addr || r->obj_start >= addr + PAGE_SIZE)
				continue;
			if (n++ == 4) {
				seq_puts(m, ", ...");
				return;
			}
			from = max(r->obj_start, addr) - addr;
			to = min(r->obj_end, addr + PAGE_SIZE) - addr;
			seq_printf(m, "%s%s +%#lx-%#lx", n > 1 ? ", " : "", r->owner, from, to);
		}
	}
}

/* A page of a CPU's entry area, by its pfn. */
struct asi_area_page {
	unsigned long pfn;
	int cpu;
	bool ds;			/* the debug store or a PEBS/BTS buffer */
};

struct asi_audit_walk {
	struct asi *asi;
	struct seq_file *m;
	unsigned int lines;		/* findings still to describe */
	struct asi_audit *res;
	const u8 *needle;		/* asi_find() looks for it instead */
	size_t needle_len;
	u8 *buf;			/* a page, for it */
	unsigned long found;
	/* The entry areas' pages, by pfn, whichever address maps them: */
	struct asi_area_page *area_pages;	/* sorted, or NULL: not looked for */
	unsigned int nr_area_pages;
	int cpu;			/* whose entry-area slot is walked; -1: every CPU's */
	struct cpumask *bad_tables;	/* CPUs whose table maps another's area */
	struct cpumask *ds_mapped;	/* CPUs whose debug store is mapped */
	int shared_owner;		/* the one CPU whose area every table maps, or -1 */
	bool shared_many;		/* every table maps the areas of several CPUs */
};

/**
 * asi_holds() - do some bytes hold a needle?
 * @buf: the bytes
 * @len: their number
 * @needle: the bytes to look for
 * @needle_len: their number, at least 1
 *
 * Return: true if @needle is somewhere in @buf.
 */
bool asi_holds(const void *buf, size_t len, const void *needle, size_t needle_len)
{
	const u8 *p = buf, *n = needle, *last;

	if (needle_len > len)
		return false;
	for (last = p + len - needle_len; p <= last; p++) {
		p = memchr(p, n[0], last - p + 1);
		if (!p)
			return false;
		if (!memcmp(p, n, needle_len))
			return true;
	}
	return false;
}
EXPORT_SYMBOL_NS_GPL(asi_holds, ASI);

/* Does the page of RAM at @pfn hold the needle?  Read it without faulting. */
static bool asi_page_holds(struct asi_audit_walk *a, unsigned long pfn)
{
	if (!pfn_valid(pfn) || !page_is_ram(pfn) ||
	    copy_from_kernel_nofault(a->buf, pfn_to_kaddr(pfn), PAGE_SIZE))
		return false;
	return asi_holds(a->buf, PAGE_SIZE, a->needle, a->needle_len);
}

/* One 4 KiB page the restricted table maps at @addr. */
static void asi_audit_page(struct asi_audit_walk *a, unsigned long addr, unsigned long pfn)
{
	unsigned long first, n;

	if (a->needle) {
		a->found += asi_page_holds(a, pfn);
		return;
	}
	n = asi_uncovered(a->asi, addr, addr + PAGE_SIZE, &first);
	a->res->pages++;
	if (!n)
		return;
	if (n == PAGE_SIZE) {
		a->res->stray++;
	} else {
		a->res->shared++;
		switch (asi_page_kind(a->asi, addr)) {
		case ASI_KIND_PERCPU:
			a->res->shared_percpu++;
			break;
		case ASI_KIND_TASK:
			a->res->shared_task++;
			break;
		default:
			break;
		}
	}
	a->res->foreign_bytes += n;
	if (!a->m || !a->lines)
		return;
	a->lines--;
	seq_printf(a->m, "# %s: %s page %#lx (pfn %#lx", a->asi->name,
		   n == PAGE_SIZE ? "stray" : "shared", addr, pfn);
	if (n != PAGE_SIZE) {
		seq_puts(a->m, ", mapped for ");
		asi_audit_owners(a->m, a->asi, addr);
	}
	seq_printf(a->m, "), %lu bytes of no mapped object, the first at +%#lx: ", n, first - addr);
	asi_audit_describe(a->m, first);
	seq_putc(a->m, '\n');
}

/*
 * Is the leaf @val, which maps @addr at @level from @pfn on, still the
 * kernel's memory there, with no more rights than the kernel gives it?
 * Each 4 KiB page of it that the kernel unmapped or maps elsewhere now (its
 * object was freed, or moved) or that is free in the page allocator is
 * stale; one the kernel maps read-only, or that is writable and
 * executable, is writable.
 */
static void asi_audit_rights(struct asi_audit_walk *a, unsigned long addr, enum asi_level level,
			     unsigned long val, unsigned long pfn)
{
	bool exec = !(val & _PAGE_NX) || !(__supported_pte_mask & _PAGE_NX);
	unsigned long p, k;
	const char *what;

	for (p = 0; p < asi_size(level); p += PAGE_SIZE, pfn++) {
		k = asi_kernel_entry(addr + p, ASI_PTE);
		if (!k || (k & PTE_PFN_MASK) >> PAGE_SHIFT != pfn ||
		    (pfn_valid(pfn) && PageBuddy(pfn_to_page(pfn)))) {
			a->res->stale++;
			what = "stale";
		} else if ((val & _PAGE_RW) && !(k & _PAGE_RW)) {
			a->res->writable++;
			what = "writable where the kernel's is read-only";
		} else if ((val & _PAGE_RW) && exec) {
			a->res->writable++;
			what = "writable and executable";
		} else {
			continue;
		}
		if (!a->m || !a->lines)
			continue;
		a->lines--;
		seq_printf(a->m, "# %s: %s page %#lx (pfn %#lx, the kernel's entry %#lx)\n",
			   a->asi->name, what, addr + p, pfn, k);
	}
}

/*
 * Entry-area pages among the @n pages from @pfn that the walked table
 * maps: in a CPU's entry-area slot, another CPU's makes that CPU's table
 * bad; anywhere else, every table maps it, so every other CPU's is.
 */
static void asi_audit_area_pages(struct asi_audit_walk *a, unsigned long pfn, unsigned long n)
{
	unsigned int lo = 0, hi = a->nr_area_pages, mid;
	const struct asi_area_page *p;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (a->area_pages[mid].pfn < pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < a->nr_area_pages && a->area_pages[lo].pfn < pfn + n; lo++) {
		p = &a->area_pages[lo];
		if (p->ds)
			cpumask_set_cpu(p->cpu, a->ds_mapped);
		else if (a->cpu >= 0 && p->cpu != a->cpu)
			cpumask_set_cpu(a->cpu, a->bad_tables);
		else if (a->cpu < 0 && a->shared_owner < 0)
			a->shared_owner = p->cpu;
		else if (a->cpu < 0 && p->cpu != a->shared_owner)
			a->shared_many = true;
	}
}

static void asi_audit_table(struct asi_audit_walk *a, void *table, enum asi_level level,
			    unsigned long base)
{
	unsigned long val, addr, first, size = asi_size(level), pfn, p;
	unsigned int i;

	for (i = 0; i < PTRS_PER_PTE; i++) {
		addr = asi_entry_addr(base, i, level);
		val = asi_read(asi_slot(table, i), level);
		if (!asi_present(val))
			continue;
		if (!asi_leaf(level, val)) {
			asi_audit_table(a, asi_table(val), asi_next_level(level), addr);
			continue;
		}
		pfn = (val & PTE_PFN_MASK & ~(size - 1)) >> PAGE_SHIFT;
		if (!a->needle)
			asi_audit_rights(a, addr, level, val, pfn);
		if (a->area_pages)
			asi_audit_area_pages(a, pfn, size >> PAGE_SHIFT);
		/* A large leaf that objects cover whole: no need to look closer. */
		if (size > PAGE_SIZE && !a->needle &&
		    !asi_uncovered(a->asi, addr, addr + size, &first)) {
			a->res->pages += size >> PAGE_SHIFT;
			continue;
		}
		for (p = 0; p < size; p += PAGE_SIZE) {
			asi_audit_page(a, addr + p, pfn + (p >> PAGE_SHIFT));
			cond_resched();
		}
	}
}

/*
 * Walk what @a's instance maps: its own table, and the entry-area slot of
 * each CPU's, whose pages the core's instance for that CPU stands for.
 */
static void asi_audit_tables(struct asi_audit_walk *a)
{
	struct asi *asi = a->asi;
	int cpu, cea = asi_entry_area_slot();
	unsigned long val;

	a->cpu = -1;
	asi_audit_table(a, asi->pgd, ASI_PGD, 0);
	if (!asi->cpu_tables)
		return;
	for_each_possible_cpu(cpu) {
		val = pgd_val(asi->cpu_tables[cpu].pgd[cea]);
		if (!asi_present(val))
			continue;
		a->asi = asi->shared->entry_areas[cpu];
		a->cpu = cpu;
		asi_audit_table(a, asi_table(val), asi_next_level(ASI_PGD),
				asi_entry_addr(0, cea, ASI_PGD));
	}
	a->asi = asi;
	a->cpu = -1;
}

static bool asi_maps_any_locked(struct asi *asi, const void *ptr, size_t size)
{
	unsigned long a, end = (unsigned long)ptr + size;

	lockdep_assert_held(&asi->lock);
	for (a = (unsigned long)ptr & PAGE_MASK; ptr && a < end; a += PAGE_SIZE)
		if (asi_is_mapped(asi, (void *)a))
			return true;
	return false;
}

/**
 * asi_maps_any() - does an isolated address space map part of a buffer?
 * @asi: the instance
 * @ptr: the buffer, or NULL
 * @size: its size
 *
 * Return: true if the restricted page table translates a page of the buffer.
 */
bool asi_maps_any(struct asi *asi, const void *ptr, size_t size)
{
	bool ret;

	/* The instance's own tasks may unmap, and free table pages, meanwhile. */
	mutex_lock(&asi->lock);
	ret = asi_maps_any_locked(asi, ptr, size);
	mutex_unlock(&asi->lock);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(asi_maps_any, ASI);

/**
 * asi_maps_allocation() - does an isolated address space map part of an allocation?
 * @asi: the instance
 * @ptr: the start of a slab object, a vmalloc area or pages of the page allocator
 *
 * Return: true if the restricted page table translates a page of the
 * whole allocation, its slack included.
 */
bool asi_maps_allocation(struct asi *asi, const void *ptr)
{
	struct vm_struct *area;
	size_t size = PAGE_SIZE;
	struct page *page;

	if (is_vmalloc_addr(ptr)) {
		area = find_vm_area(ptr);
		if (area)
			size = get_vm_area_size(area);
	} else if (virt_addr_valid(ptr)) {
		page = virt_to_head_page(ptr);
		size = PageSlab(page) ? __ksize(ptr) : page_size(page);
	}
	return asi_maps_any(asi, ptr, size);
}
EXPORT_SYMBOL_NS_GPL(asi_maps_allocation, ASI);

/**
 * asi_irq_stack() - the bottom of a CPU's hard-IRQ stack
 * @cpu: the CPU
 *
 * Return: the stack's lowest address, or NULL when it has none yet.
 */
void *asi_irq_stack(int cpu)
{
	void *top = per_cpu(hardirq_stack_ptr, cpu);

	return top ? top + 8 - IRQ_STACK_SIZE : NULL;
}

/*
 * No CPU's hard-IRQ stack may be mapped: it holds the stale frames of
 * whatever that CPU handled, and interrupts leave isolation before they
 * switch to it.
 */
static void asi_audit_irq_stacks(struct asi *asi, struct asi_audit *res)
{
	int cpu;

	for_each_online_cpu(cpu)
		res->irq_stacks += asi_maps_any_locked(asi, asi_irq_stack(cpu), IRQ_STACK_SIZE);
}

static int asi_area_page_cmp(const void *x, const void *y)
{
	const struct asi_area_page *p = x, *q = y;

	return p->pfn < q->pfn ? -1 : p->pfn > q->pfn;
}

/*
 * Every CPU's entry-area pages, by pfn, for asi_audit_area_pages(): the
 * exception stacks hold the frames of whatever that CPU handled, the TSS
 * the I/O bitmap of the task it runs, the entry stack that task's
 * registers, the debug store and PEBS/BTS buffers sampled host registers
 * and branches.  Not the GDT: it holds descriptors, and SVM's TR reload
 * writes this CPU's through the per-CPU alias that every table maps.
 */
static int asi_collect_area_pages(struct asi_audit_walk *a)
{
	unsigned long addr, start, ds, k;
	struct cpu_entry_area *area;
	unsigned int n = 0;
	int cpu;

	a->area_pages = kvmalloc_array(num_possible_cpus() * (CPU_ENTRY_AREA_SIZE >> PAGE_SHIFT),
				       sizeof(*a->area_pages), GFP_KERNEL);
	if (!a->area_pages)
		return -ENOMEM;
	for_each_possible_cpu(cpu) {
		area = get_cpu_entry_area(cpu);
		start = (unsigned long)area;
		ds = (unsigned long)&area->cpu_debug_store;
		for (addr = start; addr < start + CPU_ENTRY_AREA_SIZE; addr += PAGE_SIZE) {
			k = addr == (unsigned long)&area->gdt ? 0 : asi_kernel_entry(addr, ASI_PTE);
			if (k)
				a->area_pages[n++] = (struct asi_area_page) {
					.pfn = (k & PTE_PFN_MASK) >> PAGE_SHIFT,
					.cpu = cpu, .ds = addr >= ds,
				};
		}
	}
	sort(a->area_pages, n, sizeof(*a->area_pages), asi_area_page_cmp, NULL);
	a->nr_area_pages = n;
	return 0;
}

/* The CPUs whose table does not hold what asi_cpu_table_entry() says. */
static void asi_audit_mirrors(struct asi *asi, struct cpumask *bad)
{
	int cpu, i;

	if (!asi->cpu_tables)
		return;
	for_each_possible_cpu(cpu)
		for (i = KERNEL_PGD_BOUNDARY; i < PTRS_PER_PGD; i++)
			if (pgd_val(asi->cpu_tables[cpu].pgd[i]) !=
			    pgd_val(asi_cpu_table_entry(asi, cpu, i)))
				cpumask_set_cpu(cpu, bad);
}

/*
 * Walk every table of @a's instance for the entry areas' pages, and count
 * the CPUs whose table maps another CPU's entry area or does not follow
 * the instance's, and those whose debug store any table maps.  Without
 * memory for that, every CPU's table counts.
 */
static void asi_audit_entry_areas(struct asi_audit_walk *a, struct asi_audit *res)
{
	cpumask_var_t bad, ds;
	int cpu;

	if (!zalloc_cpumask_var(&bad, GFP_KERNEL))
		goto nomem;
	if (!zalloc_cpumask_var(&ds, GFP_KERNEL))
		goto free_bad;
	if (asi_collect_area_pages(a))
		goto free_ds;
	a->bad_tables = bad;
	a->ds_mapped = ds;
	a->shared_owner = -1;
	asi_audit_tables(a);
	if (a->shared_many)
		cpumask_copy(bad, cpu_possible_mask);
	else if (a->shared_owner >= 0)
		for_each_possible_cpu(cpu)
			if (cpu != a->shared_owner)
				cpumask_set_cpu(cpu, bad);
	asi_audit_mirrors(a->asi, bad);
#ifdef CONFIG_CPU_SUP_INTEL
	/* The per-CPU variable too, which the entry area maps on Intel only */
	for_each_possible_cpu(cpu)
		if (asi_maps_any_locked(a->asi, per_cpu_ptr(&cpu_debug_store, cpu),
					sizeof(struct debug_store)))
			cpumask_set_cpu(cpu, ds);
#endif
	res->bad_cpu_tables = cpumask_weight(bad);
	res->debug_stores = cpumask_weight(ds);
	kvfree(a->area_pages);
	a->area_pages = NULL;
	free_cpumask_var(ds);
	free_cpumask_var(bad);
	return;

free_ds:
	free_cpumask_var(ds);
free_bad:
	free_cpumask_var(bad);
nomem:
	pr_warn_ratelimited("audit of %s: no memory for the entry-area check: every CPU's table counts\n",
			    a->asi->name);
	res->bad_cpu_tables = num_possible_cpus();
	asi_audit_tables(a);
}

/*
 * The tasks mapped with asi_map_task(), which may have exited,
 * and every other task on the system, none of whose task struct or stack
 * pages may be mapped.
 */
static void asi_audit_tasks(struct asi *asi, struct asi_audit *res)
{
	struct task_struct *g, *t;
	struct asi_range *r;
	bool own;

	list_for_each_entry(r, &asi->ranges, list)
		res->tasks += r->kind == ASI_KIND_TASK;
	rcu_read_lock();
	for_each_process_thread(g, t) {
		own = false;
		list_for_each_entry(r, &asi->ranges, list)
			own |= r->kind == ASI_KIND_TASK && r->ptr == (unsigned long)t;
		if (!own && (asi_maps_any_locked(asi, t, arch_task_struct_size) ||
			     asi_maps_any_locked(asi, READ_ONCE(t->stack), THREAD_SIZE)))
			res->other_tasks++;
	}
	rcu_read_unlock();
}

/*
 * What page-exclusive allocation costs the instance: the bytes of its
 * objects' pages that the objects do not use, by owner.
 */
static void asi_audit_padding(struct seq_file *m, struct asi *asi)
{
	struct { const char *owner; unsigned long bytes; } pad[4] = {};
	struct asi_range *r;
	int i;

	list_for_each_entry(r, &asi->ranges, list) {
		if (r->shadow || r->obj_end - r->obj_start <= r->bytes)
			continue;
		/* The last slot takes any owner beyond the first ones. */
		for (i = 0; i < ARRAY_SIZE(pad) - 1; i++)
			if (!pad[i].owner || !strcmp(pad[i].owner, r->owner))
				break;
		if (pad[i].owner && strcmp(pad[i].owner, r->owner))
			pad[i].owner = "other";
		pad[i].owner = pad[i].owner ?: r->owner;
		pad[i].bytes += r->obj_end - r->obj_start - r->bytes;
	}
	seq_printf(m, "# %s: bytes of its objects' pages the objects do not use:", asi->name);
	for (i = 0; i < ARRAY_SIZE(pad) && pad[i].owner; i++)
		seq_printf(m, " %s %lu", pad[i].owner, pad[i].bytes);
	seq_putc(m, '\n');
}

/**
 * asi_audit() - is every mapped byte one that the instance may map?
 * @asi: the instance
 * @m: where to describe findings as "# " lines, or NULL
 * @max_lines: how many findings to describe at most
 * @res: what the audit counted
 *
 * Walks every present leaf of the restricted table, the core's included,
 * and classifies each mapped byte: it belongs to an object mapped for @asi
 * or the core, or it does not.  A page of bytes of no mapped object is a
 * finding: "stray" when no object is on it at all, "shared" when a mapped
 * object shares it with something else (another allocation, another CPU's
 * or the kernel's variables, free memory).  Objects are their exact bytes,
 * except page-granular allocations, which own their pages whole.  Then
 * looks at every task: none but those mapped with asi_map_task()
 * may have a page of its task struct or stack mapped.  Every leaf must
 * still map what the kernel maps at its address (not stale) with no more
 * rights (not writable where the kernel's mapping is read-only, never
 * writable and executable), and no CPU's hard-IRQ stack, debug store or
 * PEBS/BTS buffer may be mapped.  The table each CPU loads maps no other
 * CPU's entry area.
 *
 * Return: the number of findings: stray, shared, stale and writable pages,
 * CPUs whose hard-IRQ stack or debug store is mapped, and CPUs whose table
 * maps another CPU's entry area.
 */
unsigned long asi_audit(struct asi *asi, struct seq_file *m,
			unsigned int max_lines, struct asi_audit *res)
{
	struct asi_audit_walk a = { .asi = asi, .m = m, .lines = max_lines, .res = res };

	memset(res, 0, sizeof(*res));
	mutex_lock(&asi->lock);
	asi_audit_entry_areas(&a, res);
	asi_audit_tasks(asi, res);
	asi_audit_irq_stacks(asi, res);
	if (m)
		asi_audit_padding(m, asi);
	mutex_unlock(&asi->lock);
	return res->stray + res->shared + res->stale + res->writable + res->irq_stacks +
	       res->debug_stores + res->bad_cpu_tables;
}
EXPORT_SYMBOL_NS_GPL(asi_audit, ASI);

/**
 * asi_find() - count the mapped pages that hold some bytes
 * @asi: the instance
 * @needle: the bytes, a secret that a test planted somewhere
 * @len: their number, 1 to PAGE_SIZE
 *
 * Reads every mapped page of RAM through the direct map, the core's
 * included.  Bytes that straddle two pages are not found.
 *
 * Return: the number of mapped 4 KiB pages that hold @needle, or a
 * negative error.
 */
long asi_find(struct asi *asi, const void *needle, size_t len)
{
	struct asi_audit res;
	struct asi_audit_walk a = { .asi = asi, .res = &res, .needle = needle, .needle_len = len };

	if (!len || len > PAGE_SIZE)
		return -EINVAL;
	a.buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!a.buf)
		return -ENOMEM;
	mutex_lock(&asi->lock);
	asi_audit_tables(&a);
	mutex_unlock(&asi->lock);
	kfree(a.buf);
	return a.found;
}
EXPORT_SYMBOL_NS_GPL(asi_find, ASI);

#if IS_ENABLED(CONFIG_PTDUMP_DEBUGFS)
/**
 * asi_ptdump() - dump every isolated address space with ptdump
 * @m: the seq_file of /sys/kernel/debug/page_tables/asi
 *
 * The restricted table of each instance, core first, walked as ptdump
 * walks the kernel's: a VM's as the first CPU loads it, the core's
 * followed by each CPU's entry area (core-cpuN).
 */
void asi_ptdump(struct seq_file *m)
{
	int cpu, first = cpumask_first(cpu_possible_mask);
	struct asi *asi;

	mutex_lock(&asi_instances_lock);
	list_for_each_entry(asi, &asi_instances, list) {
		seq_printf(m, "---[ asi: %s ]---\n", asi->name);
		mutex_lock(&asi->lock);
		ptdump_walk_pgd_table_debugfs(m, asi_cpu_pgd(asi, first));
		mutex_unlock(&asi->lock);
		if (!asi->entry_areas)
			continue;
		for_each_possible_cpu(cpu) {
			seq_printf(m, "---[ asi: %s ]---\n", asi->entry_areas[cpu]->name);
			ptdump_walk_pgd_table_debugfs(m, asi->entry_areas[cpu]->pgd);
		}
	}
	mutex_unlock(&asi_instances_lock);
}
#endif

/* The core's entry areas do not change while it exists: no lock. */
static void asi_show_ranges_of(struct seq_file *m, struct asi *asi)
{
	struct asi_range *r;

	list_for_each_entry(r, &asi->ranges, list)
		seq_printf(m, "%s %s %#lx %#lx %lu %s\n", asi->name, r->owner,
			   asi_range_first(r), asi_range_last(r) + 1,
			   asi_range_last(r) - asi_range_first(r) + 1,
			   asi_level_names[r->level]);
}

/**
 * asi_ranges_show() - show every mapped range
 * @m: the debugfs "ranges" file
 * @v: unused
 *
 * One line per range of every address space: its owner, start and end,
 * size and the page-table level it is copied at.
 *
 * Return: 0.
 */
int asi_ranges_show(struct seq_file *m, void *v)
{
	struct asi *asi;
	int cpu;

	seq_puts(m, "# instance owner start end bytes level\n");
	mutex_lock(&asi_instances_lock);
	list_for_each_entry(asi, &asi_instances, list) {
		mutex_lock(&asi->lock);
		asi_show_ranges_of(m, asi);
		mutex_unlock(&asi->lock);
		if (asi->entry_areas)
			for_each_possible_cpu(cpu)
				asi_show_ranges_of(m, asi->entry_areas[cpu]);
	}
	mutex_unlock(&asi_instances_lock);
	return 0;
}
EXPORT_SYMBOL_NS_GPL(asi_ranges_show, ASI);

/*
 * What the kernel maps, for comparison, less KASAN's shadow: most of that
 * maps one zero page through the same tables billions of times over.
 */
static unsigned long asi_kernel_mapped_bytes(void)
{
	unsigned long total = 0;
	unsigned int i;

	for (i = KERNEL_PGD_BOUNDARY; i < PTRS_PER_PGD; i++) {
#ifdef CONFIG_KASAN
		if (i >= pgd_index(KASAN_SHADOW_START) && i <= pgd_index(KASAN_SHADOW_END - 1))
			continue;
#endif
		total += asi_mapped_bytes(init_mm.pgd, ASI_PGD, i, i);
	}
	return total;
}

/* What the core maps, by the kind of memory, for the summary. */
enum asi_area {
	ASI_AREA_TEXT, ASI_AREA_RODATA, ASI_AREA_DATA, ASI_AREA_PERCPU,
	ASI_AREA_ENTRY, ASI_AREA_MODULES, ASI_AREA_SHADOW, ASI_AREA_OTHER,
	ASI_NR_AREAS
};

static const char *const asi_area_names[ASI_NR_AREAS] = {
	"text", "rodata", "data", "percpu", "entry_area", "modules", "kasan_shadow", "other",
};

static bool asi_in(unsigned long addr, const void *start, const void *end)
{
	return addr >= (unsigned long)start && addr < (unsigned long)end;
}

static enum asi_area asi_area(unsigned long addr)
{
	if (asi_in(addr, _text, _etext))
		return ASI_AREA_TEXT;
	if (asi_in(addr, __start_rodata, __end_rodata))
		return ASI_AREA_RODATA;
	if (asi_in(addr, _sdata, _edata) || asi_in(addr, __bss_start, __bss_stop))
		return ASI_AREA_DATA;
	if (is_kernel_percpu_address(addr) || is_module_percpu_address(addr))
		return ASI_AREA_PERCPU;
	if (addr >= CPU_ENTRY_AREA_BASE && addr - CPU_ENTRY_AREA_BASE < CPU_ENTRY_AREA_MAP_SIZE)
		return ASI_AREA_ENTRY;
	if (addr >= MODULES_VADDR && addr < MODULES_END)
		return ASI_AREA_MODULES;
#ifdef CONFIG_KASAN
	if (addr >= KASAN_SHADOW_START && addr < KASAN_SHADOW_END)
		return ASI_AREA_SHADOW;
#endif
	return ASI_AREA_OTHER;
}

/* Add the bytes mapped below @table at @level to @bytes, by kind. */
static void asi_count_areas(void *table, enum asi_level level, unsigned long base,
			    unsigned long *bytes)
{
	unsigned long val, addr, p;
	unsigned int i;

	for (i = level == ASI_PGD ? KERNEL_PGD_BOUNDARY : 0; i < PTRS_PER_PTE; i++) {
		addr = asi_entry_addr(base, i, level);
		val = asi_read(asi_slot(table, i), level);
		if (!asi_present(val))
			continue;
		if (!asi_leaf(level, val)) {
			asi_count_areas(asi_table(val), asi_next_level(level), addr, bytes);
			continue;
		}
		for (p = 0; p < asi_size(level); p += PAGE_SIZE)
			bytes[asi_area(addr + p)] += PAGE_SIZE;
	}
}

/* Page-table pages of an instance: its PGD, each CPU's, its directory pages, its entry areas'. */
static unsigned long asi_own_pages(struct asi *asi)
{
	unsigned long pages = asi->nr_ptpages + (1 << PGD_ALLOCATION_ORDER);
	int cpu;

	for_each_possible_cpu(cpu) {
		if (asi->cpu_tables)
			pages += 1 << PGD_ALLOCATION_ORDER;
		if (asi->entry_areas)
			pages += asi_own_pages(asi->entry_areas[cpu]);
	}
	return pages;
}

/**
 * asi_show_summary() - show the sizes of the address spaces
 * @m: the debugfs "stats" file
 *
 * What the core and each VM map, and their page-table pages, against what
 * the kernel itself maps; what the core maps by kind of memory.
 */
void asi_show_summary(struct seq_file *m)
{
	unsigned long kernel, bytes[ASI_NR_AREAS] = {};
	struct asi *asi;
	int i, n = 0;

	mutex_lock(&asi_instances_lock);
	list_for_each_entry(asi, &asi_instances, list) {
		mutex_lock(&asi->lock);
		seq_printf(m, "mapped_kib_%s %lu\n", asi->name, asi_mapped_total(asi) >> 10);
		seq_printf(m, "pagetable_pages_%s %lu\n", asi->name, asi_own_pages(asi));
		mutex_unlock(&asi->lock);
		n++;
	}
	if (asi_core) {
		mutex_lock(&asi_core->lock);
		asi_count_areas(asi_core->pgd, ASI_PGD, 0, bytes);
		if (asi_core->entry_areas)
			for_each_possible_cpu(i)
				asi_count_areas(asi_core->entry_areas[i]->pgd, ASI_PGD, 0, bytes);
		mutex_unlock(&asi_core->lock);
		for (i = 0; i < ASI_NR_AREAS; i++)
			seq_printf(m, "core_kib_%s %lu\n", asi_area_names[i], bytes[i] >> 10);
	}
	mutex_unlock(&asi_instances_lock);
	kernel = asi_kernel_mapped_bytes();
	seq_printf(m, "mapped_kib_kernel %lu\n", kernel >> 10);
	seq_printf(m, "instances %d\n", n);
}
EXPORT_SYMBOL_NS_GPL(asi_show_summary, ASI);
