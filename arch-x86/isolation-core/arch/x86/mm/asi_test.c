// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the ASI page-table core, the instances and the audit.
 * They look at the internals that asi.h shares between the layer's files.
 */
#include <kunit/test.h>
#include <linux/kasan.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/set_memory.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include <asm/asi_debug.h>
#include <asm/cpu_entry_area.h>
#include <asm/sections.h>
#include <asm/tlbflush.h>

#include "asi.h"

/* What a table translates one 4 KiB page to, A/D bits aside. */
struct asi_test_xlate {
	unsigned long phys;
	unsigned long flags;
};

static bool asi_test_translate(void *pgd, unsigned long addr, struct asi_test_xlate *x)
{
	enum asi_level l = ASI_PGD;
	unsigned long val = asi_read(asi_offset(pgd, addr, l), l);

	for (;;) {
		if (!asi_present(val))
			return false;
		if (asi_leaf(l, val)) {
			if (l != ASI_PTE)
				val = asi_split_leaf(val, l, addr, ASI_PTE);
			x->phys = val & PTE_PFN_MASK;
			x->flags = val & ~PTE_PFN_MASK & ~ASI_HW_BITS;
			return true;
		}
		l = asi_next_level(l);
		val = asi_read(asi_offset(asi_table(val), addr, l), l);
	}
}

static bool asi_test_mapped(struct asi *asi, unsigned long addr)
{
	struct asi_test_xlate x;

	return asi_test_translate(asi->pgd, addr, &x);
}

/* Every page of [start, end) translates in @asi exactly as in the kernel. */
static void asi_test_expect_same(struct kunit *test, struct asi *asi,
				 unsigned long start, unsigned long end)
{
	struct asi_test_xlate k, o;
	unsigned long addr;

	for (addr = start & PAGE_MASK; addr < end; addr += PAGE_SIZE) {
		bool kernel = asi_test_translate(init_mm.pgd, addr, &k);

		if (!kernel)
			continue;
		KUNIT_ASSERT_TRUE_MSG(test, asi_test_translate(asi->pgd, addr, &o),
				      "%#lx not mapped", addr);
		KUNIT_EXPECT_EQ_MSG(test, o.phys, k.phys, "%#lx", addr);
		KUNIT_EXPECT_EQ_MSG(test, o.flags, k.flags, "%#lx", addr);
	}
}

static void asi_test_expect_unmapped(struct kunit *test, struct asi *asi,
				     unsigned long start, unsigned long end)
{
	unsigned long addr;

	for (addr = start & PAGE_MASK; addr < end; addr += PAGE_SIZE)
		KUNIT_EXPECT_FALSE_MSG(test, asi_test_mapped(asi, addr), "%#lx mapped", addr);
}

/* Copies of the kernel's page-table pages that translate a range. */
#define ASI_TEST_MAX_SNAP 32
struct asi_test_snap {
	int n;
	void *page[ASI_TEST_MAX_SNAP];
	void *copy[ASI_TEST_MAX_SNAP];
};

static void asi_test_snap_add(struct kunit *test, struct asi_test_snap *s, void *page)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->page[i] == page)
			return;
	KUNIT_ASSERT_LT(test, s->n, ASI_TEST_MAX_SNAP);
	s->page[s->n] = page;
	s->copy[s->n] = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s->copy[s->n]);
	memcpy(s->copy[s->n], page, PAGE_SIZE);
	s->n++;
}

/* Snapshot the kernel pages around [start, end): the neighbours too. */
static void asi_test_snapshot(struct kunit *test, struct asi_test_snap *s,
			      unsigned long start, unsigned long end)
{
	unsigned long addr;

	s->n = 0;
	for (addr = (start & PAGE_MASK) - PAGE_SIZE; addr < end + PAGE_SIZE; addr += PAGE_SIZE) {
		enum asi_level l = ASI_PGD;
		void *table = init_mm.pgd;
		unsigned long val;

		for (;;) {
			asi_test_snap_add(test, s, table);
			val = asi_read(asi_offset(table, addr, l), l);
			if (!asi_present(val) || asi_leaf(l, val))
				break;
			table = asi_table(val);
			l = asi_next_level(l);
		}
	}
}

static void asi_test_expect_snapshot(struct kunit *test, struct asi_test_snap *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		KUNIT_EXPECT_EQ_MSG(test, memcmp(s->page[i], s->copy[i], PAGE_SIZE), 0,
				    "kernel page-table page %p changed", s->page[i]);
}

static int asi_test_map(struct asi *asi, const void *ptr, size_t size,
			enum asi_level level)
{
	return asi_map(asi, ptr, size, level, "test");
}

/*
 * An instance whose table holds only what a test maps: with KASAN, no
 * shadow ranges beside (asi_test_kasan_shadow() tests those).
 */
static struct asi *asi_test_create(struct kunit *test, struct asi *shared)
{
	struct asi *asi = asi_create_instance(shared, GFP_KERNEL, "test");

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, asi);
	asi->kasan_shadow = false;
	return asi;
}

static void *asi_test_vmalloc(struct kunit *test, size_t size)
{
	void *p = vmalloc(size);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, p);
	return p;
}

/* Copy at every level, then compare walks of both page tables. */
static void asi_test_copy_levels(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	void *vbuf = asi_test_vmalloc(test, 3 * PAGE_SIZE);
	void *kbuf = kunit_kmalloc(test, 2 * PAGE_SIZE, GFP_KERNEL);
	unsigned long text = (unsigned long)_text, cea = CPU_ENTRY_AREA_BASE;
	struct cpu_entry_area *area = get_cpu_entry_area(raw_smp_processor_id());

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, kbuf);

	/* PTE: vmalloc and the direct map (a huge kernel page copied as 4 KiB pages). */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, vbuf, 3 * PAGE_SIZE, ASI_PTE), 0);
	asi_test_expect_same(test, asi, (unsigned long)vbuf, (unsigned long)vbuf + 3 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, kbuf, 2 * PAGE_SIZE, ASI_PTE), 0);
	asi_test_expect_same(test, asi, (unsigned long)kbuf, (unsigned long)kbuf + 2 * PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, (unsigned long)kbuf - PAGE_SIZE, (unsigned long)kbuf);
	asi_test_expect_unmapped(test, asi, PAGE_ALIGN((unsigned long)kbuf + 2 * PAGE_SIZE),
				 PAGE_ALIGN((unsigned long)kbuf + 3 * PAGE_SIZE));

	/* PMD: a 2 MiB slot of kernel text, whatever the kernel maps it with. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, _text, PAGE_SIZE, ASI_PMD), 0);
	asi_test_expect_same(test, asi, text, text + PMD_SIZE);

	/* P4D (the PGD with 4-level paging): the whole cpu_entry_area. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)cea, PAGE_SIZE, ASI_P4D), 0);
	asi_test_expect_same(test, asi, (unsigned long)area, (unsigned long)(area + 1));

	/* PUD: a 1 GiB slot of the vmalloc area, by reference. */
	asi_unmap(asi, vbuf);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, vbuf, PAGE_SIZE, ASI_PUD), 0);
	asi_test_expect_same(test, asi, (unsigned long)vbuf, (unsigned long)vbuf + 3 * PAGE_SIZE);

	asi_destroy(asi);
	vfree(vbuf);
}

/* The kernel's page-table pages are bit for bit the same after copy and clear. */
static void asi_test_kernel_unchanged(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	void *vbuf = asi_test_vmalloc(test, 2 * PAGE_SIZE);
	void *kbuf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	struct asi_test_snap *v, *k;
	enum asi_level level;

	v = kunit_kzalloc(test, sizeof(*v), GFP_KERNEL);
	k = kunit_kzalloc(test, sizeof(*k), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, kbuf);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, v);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, k);
	asi_test_snapshot(test, v, (unsigned long)vbuf, (unsigned long)vbuf + 2 * PAGE_SIZE);
	asi_test_snapshot(test, k, (unsigned long)kbuf, (unsigned long)kbuf + PAGE_SIZE);

	for (level = ASI_PUD; level <= ASI_PTE; level++) {
		KUNIT_EXPECT_EQ(test, asi_map(asi, vbuf, 2 * PAGE_SIZE, level, "t"), 0);
		asi_test_expect_snapshot(test, v);
		asi_unmap(asi, vbuf);
		asi_test_expect_snapshot(test, v);
		asi_test_expect_unmapped(test, asi, (unsigned long)vbuf,
					 (unsigned long)vbuf + 2 * PAGE_SIZE);
	}
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, kbuf, PAGE_SIZE, ASI_PTE), 0);
	asi_test_expect_snapshot(test, k);
	asi_unmap(asi, kbuf);
	asi_test_expect_snapshot(test, k);

	asi_destroy(asi);
	vfree(vbuf);
}

/* An entry is never overwritten with a different value. */
static void asi_test_refuse_overwrite(struct kunit *test)
{
	pte_t slot = __pte(0x1000 | _PAGE_PRESENT);

	KUNIT_EXPECT_EQ(test, asi_set_entry(&slot, ASI_PTE,
					    0x1000 | _PAGE_PRESENT | _PAGE_ACCESSED), 0);
	KUNIT_EXPECT_EQ(test, asi_set_entry(&slot, ASI_PTE, 0x2000 | _PAGE_PRESENT), -EBUSY);
	KUNIT_EXPECT_EQ(test, pte_val(slot), 0x1000UL | _PAGE_PRESENT);
}

/* User addresses and coarse copies of the direct map are refused. */
static void asi_test_refuse_bad_ranges(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	void *kbuf = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, kbuf);
	KUNIT_EXPECT_EQ(test, asi_map(asi, (void *)0x400000, PAGE_SIZE,
				      ASI_PTE, "t"), -EINVAL);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, kbuf, PAGE_SIZE, ASI_PMD),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, kbuf, 0, ASI_PTE), -EINVAL);
	KUNIT_EXPECT_FALSE(test, asi_test_mapped(asi, (unsigned long)kbuf));
	asi_destroy(asi);
}

/* A subset of a mapped range, and a superset of one. */
static void asi_test_subset_superset(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	unsigned long b = (unsigned long)asi_test_vmalloc(test, 3 * PAGE_SIZE);
	void *big = (void *)b, *mid = (void *)(b + PAGE_SIZE);

	/* Subset mapped after the big range; the big one goes first. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, big, 3 * PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, mid, PAGE_SIZE, ASI_PTE), 0);
	asi_unmap(asi, big);
	asi_test_expect_same(test, asi, b + PAGE_SIZE, b + 2 * PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, b, b + PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, b + 2 * PAGE_SIZE, b + 3 * PAGE_SIZE);
	asi_unmap(asi, mid);
	asi_test_expect_unmapped(test, asi, b, b + 3 * PAGE_SIZE);

	/* Superset mapped after the small range; the small one goes first. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, mid, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, big, 3 * PAGE_SIZE, ASI_PTE), 0);
	asi_unmap(asi, mid);
	asi_test_expect_same(test, asi, b, b + 3 * PAGE_SIZE);
	asi_unmap(asi, big);
	asi_test_expect_unmapped(test, asi, b, b + 3 * PAGE_SIZE);

	/* A finer range inside a coarser one adds nothing, and outlives it. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, big, PAGE_SIZE, ASI_PMD), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, mid, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_FALSE(test, asi_owns(asi, (void *)((unsigned long)
			   asi_walk(asi, b, ASI_PTE, false) & PAGE_MASK)));
	asi_unmap(asi, big);
	asi_test_expect_same(test, asi, b + PAGE_SIZE, b + 2 * PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, b, b + PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, b + 2 * PAGE_SIZE, b + 3 * PAGE_SIZE);
	asi_unmap(asi, mid);
	asi_test_expect_unmapped(test, asi, b, b + 3 * PAGE_SIZE);

	/* A coarser range over finer entries of our own is refused, harmlessly. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, mid, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, big, PAGE_SIZE, ASI_PMD), -EBUSY);
	asi_test_expect_same(test, asi, b + PAGE_SIZE, b + 2 * PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, b, b + PAGE_SIZE);
	asi_unmap(asi, mid);

	/* The same buffer twice takes a reference. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, mid, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, mid, PAGE_SIZE, ASI_PTE), 0);
	asi_unmap(asi, mid);
	KUNIT_EXPECT_TRUE(test, asi_test_mapped(asi, b + PAGE_SIZE));
	asi_unmap(asi, mid);
	KUNIT_EXPECT_FALSE(test, asi_test_mapped(asi, b + PAGE_SIZE));

	asi_destroy(asi);
	vfree(big);
}

/*
 * A buffer freed and reallocated at the same address without being
 * unmapped: the kernel maps the address differently now, which the test
 * stands in for by pointing our entry elsewhere.  Mapping it again must
 * replace the stale mapping, at the same address and at one overlapping it.
 */
static void asi_test_reallocated(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	unsigned long b = (unsigned long)asi_test_vmalloc(test, 2 * PAGE_SIZE);
	void *slot;

	KUNIT_EXPECT_EQ(test, asi_map(asi, (void *)b, 2 * PAGE_SIZE,
				      ASI_PTE, "old"), 0);
	slot = asi_walk(asi, b, ASI_PTE, false);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, slot);
	asi_write(slot, ASI_PTE, asi_read(slot, ASI_PTE) ^ PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, asi_map(asi, (void *)b, 2 * PAGE_SIZE,
				      ASI_PTE, "new"), 0);
	asi_test_expect_same(test, asi, b, b + 2 * PAGE_SIZE);
	KUNIT_EXPECT_TRUE(test, list_is_singular(&asi->ranges));

	/* Replacing may have freed and reallocated the page-table page. */
	slot = asi_walk(asi, b, ASI_PTE, false);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, slot);
	asi_write(slot, ASI_PTE, asi_read(slot, ASI_PTE) ^ PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, asi_map(asi, (void *)b, PAGE_SIZE,
				      ASI_PTE, "overlap"), 0);
	asi_test_expect_same(test, asi, b, b + PAGE_SIZE);

	asi_destroy(asi);
	vfree((void *)b);
}

/* A buffer not starting on a page boundary, and one crossing a page. */
static void asi_test_unaligned(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	unsigned long b = (unsigned long)asi_test_vmalloc(test, 3 * PAGE_SIZE);

	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)(b + 100), 50, ASI_PTE), 0);
	asi_test_expect_same(test, asi, b, b + PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, b + PAGE_SIZE, b + 3 * PAGE_SIZE);
	asi_unmap(asi, (void *)(b + 100));
	asi_test_expect_unmapped(test, asi, b, b + PAGE_SIZE);

	KUNIT_EXPECT_EQ(test, asi_map(asi, (void *)(b + 2 * PAGE_SIZE - 8), 16,
				      ASI_PTE, "t"), 0);
	asi_test_expect_unmapped(test, asi, b, b + PAGE_SIZE);
	asi_test_expect_same(test, asi, b + PAGE_SIZE, b + 3 * PAGE_SIZE);
	asi_unmap(asi, (void *)(b + 2 * PAGE_SIZE - 8));
	asi_test_expect_unmapped(test, asi, b, b + 3 * PAGE_SIZE);

	asi_destroy(asi);
	vfree((void *)b);
}

static DEFINE_PER_CPU(unsigned long[4], asi_test_percpu);

/* A per-CPU object is mapped, and cleared, on every possible CPU. */
static void asi_test_percpu_objects(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	int cpu;

	KUNIT_EXPECT_EQ(test, asi_map_percpu(asi, &asi_test_percpu,
					     sizeof(asi_test_percpu), "t"), 0);
	for_each_possible_cpu(cpu) {
		unsigned long p = (unsigned long)per_cpu_ptr(&asi_test_percpu, cpu);

		asi_test_expect_same(test, asi, p, p + sizeof(asi_test_percpu));
	}
	asi_unmap_percpu(asi, &asi_test_percpu);
	for_each_possible_cpu(cpu) {
		unsigned long p = (unsigned long)per_cpu_ptr(&asi_test_percpu, cpu);

		asi_test_expect_unmapped(test, asi, p, p + sizeof(asi_test_percpu));
	}
	asi_destroy(asi);
}

/*
 * Two instances reference the core's page-table pages; what one maps is
 * absent from the other, also below a directory page they share.
 */
static void asi_test_two_instances(struct kunit *test)
{
	struct asi *core = asi_test_create(test, NULL), *a, *b;
	unsigned long x = (unsigned long)asi_test_vmalloc(test, PAGE_SIZE);
	unsigned long y = (unsigned long)asi_test_vmalloc(test, PAGE_SIZE);
	unsigned long text = (unsigned long)_text;
	unsigned long core_pages;
	int idx;

	KUNIT_EXPECT_EQ(test, asi_test_map(core, _text, PAGE_SIZE, ASI_PMD), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(core, (void *)x, PAGE_SIZE, ASI_PTE), 0);
	core_pages = core->nr_ptpages;
	a = asi_test_create(test, core);
	b = asi_test_create(test, core);

	/* Shared by reference: the same lower-level pages, none of them copied. */
	idx = pgd_index(text);
	KUNIT_EXPECT_EQ(test, pgd_val(a->pgd[idx]), pgd_val(core->pgd[idx]));
	KUNIT_EXPECT_EQ(test, pgd_val(b->pgd[idx]), pgd_val(core->pgd[idx]));
	KUNIT_EXPECT_EQ(test, a->nr_ptpages, 0UL);
	asi_test_expect_same(test, a, text, text + PMD_SIZE);
	asi_test_expect_same(test, b, x, x + PAGE_SIZE);

	/* y most likely shares directory pages with x: a clones them. */
	KUNIT_EXPECT_EQ(test, asi_test_map(a, (void *)y, PAGE_SIZE, ASI_PTE), 0);
	asi_test_expect_same(test, a, y, y + PAGE_SIZE);
	asi_test_expect_same(test, a, x, x + PAGE_SIZE);
	KUNIT_EXPECT_FALSE(test, asi_test_mapped(b, y));
	KUNIT_EXPECT_FALSE(test, asi_test_mapped(core, y));
	asi_test_expect_same(test, b, x, x + PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, core->nr_ptpages, core_pages);

	/* Clearing in a keeps what the core maps in a's copies. */
	asi_unmap(a, (void *)y);
	KUNIT_EXPECT_FALSE(test, asi_test_mapped(a, y));
	asi_test_expect_same(test, a, x, x + PAGE_SIZE);

	asi_destroy(a);
	asi_destroy(b);
	asi_test_expect_same(test, core, x, x + PAGE_SIZE);
	asi_destroy(core);
	vfree((void *)x);
	vfree((void *)y);
}

/* Clearing writes only at the recorded level, never into the kernel's pages. */
static void asi_test_clear_at_level(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	unsigned long b = (unsigned long)asi_test_vmalloc(test, PAGE_SIZE);
	struct asi_test_snap *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	void *pmd;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, s);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)b, PAGE_SIZE, ASI_PMD), 0);
	pmd = asi_walk(asi, b, ASI_PMD, false);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pmd);
	/* The PMD entry references the kernel's own PTE page. */
	KUNIT_EXPECT_EQ(test, asi_read(pmd, ASI_PMD), asi_kernel_entry(b, ASI_PMD));
	KUNIT_EXPECT_FALSE(test, asi_owns(asi, asi_table(asi_read(pmd, ASI_PMD))));
	asi_test_snapshot(test, s, b, b + PAGE_SIZE);
	asi_unmap(asi, (void *)b);
	/* Cleared, or gone with the directory page that held only it. */
	pmd = asi_walk(asi, b, ASI_PMD, false);
	KUNIT_EXPECT_TRUE(test, !pmd || !asi_read(pmd, ASI_PMD));
	asi_test_expect_snapshot(test, s);
	asi_destroy(asi);
	vfree((void *)b);
}

/* Destroying instances returns every page-table page. */
static void asi_test_free_all(struct kunit *test)
{
	unsigned long before = asi_pgtable_pages();
	struct asi *core = asi_test_create(test, NULL), *a;
	void *v = asi_test_vmalloc(test, 4 * PAGE_SIZE);
	void *k = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, k);
	KUNIT_EXPECT_EQ(test, asi_test_map(core, v, PAGE_SIZE, ASI_PTE), 0);
	a = asi_test_create(test, core);
	KUNIT_EXPECT_EQ(test, asi_test_map(a, v + PAGE_SIZE, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(a, k, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_map_percpu(a, &asi_test_percpu, 8, "vm"), 0);
	KUNIT_EXPECT_GT(test, asi_pgtable_pages(), before + 4);
	asi_destroy(a);
	asi_destroy(core);
	KUNIT_EXPECT_EQ(test, asi_pgtable_pages(), before);
	vfree(v);
}

/* An instance a CPU has loaded is not freed under it. */
static void asi_test_destroy_loaded(struct kunit *test)
{
	unsigned long before = asi_pgtable_pages();
	struct asi *asi = asi_test_create(test, NULL);
	int cpu = cpumask_last(cpu_online_mask);

	/*
	 * As if @cpu had entered it and not left.  Only the owner; with no
	 * restricted CR3 recorded, nothing on @cpu acts on it.
	 */
	WRITE_ONCE(per_cpu(asi_cpu, cpu).asi, asi);
	KUNIT_EXPECT_FALSE(test, asi_destroy(asi));
	KUNIT_EXPECT_GT(test, asi_pgtable_pages(), before);
	WRITE_ONCE(per_cpu(asi_cpu, cpu).asi, NULL);
	KUNIT_EXPECT_TRUE(test, asi_destroy(asi));
	KUNIT_EXPECT_EQ(test, asi_pgtable_pages(), before);
}

/* With generic KASAN, a range's shadow is mapped and unmapped with it. */
static void asi_test_kasan_shadow(struct kunit *test)
{
#ifdef CONFIG_KASAN_GENERIC
	struct asi *asi = asi_test_create(test, NULL);
	void *k = kunit_kmalloc(test, 3 * PAGE_SIZE, GFP_KERNEL);
	unsigned long start, end;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, k);
	asi->kasan_shadow = true;
	start = (unsigned long)k;
	end = start + 3 * PAGE_SIZE;
	asi_to_shadow(&start, &end);
	KUNIT_EXPECT_FALSE(test, asi_test_mapped(asi, start));
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, k, 3 * PAGE_SIZE, ASI_PTE), 0);
	asi_test_expect_same(test, asi, (unsigned long)k, (unsigned long)k + 3 * PAGE_SIZE);
	asi_test_expect_same(test, asi, start, end);
	asi_unmap(asi, k);
	asi_test_expect_unmapped(test, asi, (unsigned long)k, (unsigned long)k + 3 * PAGE_SIZE);
	asi_test_expect_unmapped(test, asi, start, end);
	KUNIT_EXPECT_TRUE(test, list_empty(&asi->ranges));
	asi_destroy(asi);
#else
	kunit_skip(test, "needs a kernel with generic kasan");
#endif
}

/* An allocation failing in the middle of a copy leaves nothing behind. */
static void asi_test_alloc_failure(struct kunit *test)
{
	unsigned long before = asi_pgtable_pages();
	struct asi *core = asi_test_create(test, NULL), *a;
	void *k = kunit_kmalloc(test, 2 * PAGE_SIZE, GFP_KERNEL);
	void *v = asi_test_vmalloc(test, 2 * PAGE_SIZE);
	int n, ret;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, k);
	KUNIT_EXPECT_EQ(test, asi_test_map(core, v, PAGE_SIZE, ASI_PTE), 0);
	a = asi_test_create(test, core);
	/* Fail the 1st, 2nd, ... allocation until the copy gets through. */
	for (n = 1; n < 16; n++) {
		unsigned long pages = a->nr_ptpages;

		a->fail_alloc_after = n;
		ret = asi_test_map(a, v + PAGE_SIZE, PAGE_SIZE, ASI_PTE);
		if (!ret)
			break;
		KUNIT_EXPECT_EQ(test, ret, -ENOMEM);
		KUNIT_EXPECT_EQ(test, a->nr_ptpages, pages);
		KUNIT_EXPECT_FALSE(test, asi_test_mapped(a, (unsigned long)v + PAGE_SIZE));
		asi_test_expect_same(test, a, (unsigned long)v, (unsigned long)v + PAGE_SIZE);
		KUNIT_EXPECT_TRUE(test, list_empty(&a->ranges));
	}
	KUNIT_EXPECT_GT(test, n, 1);
	KUNIT_EXPECT_EQ(test, ret, 0);
	a->fail_alloc_after = 0;

	/* The same in the direct map, where huge pages are split into PTEs. */
	for (n = 1; n < 16; n++) {
		a->fail_alloc_after = n;
		ret = asi_test_map(a, k, 2 * PAGE_SIZE, ASI_PTE);
		if (!ret)
			break;
		asi_test_expect_unmapped(test, a, (unsigned long)k,
					 (unsigned long)k + 2 * PAGE_SIZE);
	}
	KUNIT_EXPECT_EQ(test, ret, 0);
	a->fail_alloc_after = 0;

	asi_destroy(a);
	asi_destroy(core);
	KUNIT_EXPECT_EQ(test, asi_pgtable_pages(), before);
	vfree(v);
}

/* The audit finds a page mapped outside every range. */
static void asi_test_audit_stray(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	void *k = kunit_kmalloc(test, 2 * PAGE_SIZE, GFP_KERNEL);
	struct asi_audit res;
	unsigned long a;
	void *slot, *next;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, k);
	a = PAGE_ALIGN((unsigned long)k);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)a, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_TRUE(test, asi_is_mapped(asi, (void *)a));
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 0UL);
	KUNIT_EXPECT_EQ(test, res.pages, 1UL);

	/* An entry no range accounts for, as a bug would leave it. */
	slot = asi_walk(asi, a, ASI_PTE, false);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, slot);
	next = (pte_t *)slot + ((a >> PAGE_SHIFT) & 1 ? -1 : 1);
	asi_write(next, ASI_PTE, asi_kernel_entry(a ^ PAGE_SIZE, ASI_PTE));
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 1UL);
	KUNIT_EXPECT_EQ(test, res.stray, 1UL);
	KUNIT_EXPECT_EQ(test, res.foreign_bytes, PAGE_SIZE);
	asi_write(next, ASI_PTE, 0);
	asi_destroy(asi);
}

/*
 * The positive control of the page-ownership audit: a small object shares
 * its page with the allocator's other objects or free space, and the audit
 * must say so; objects that fill their pages, or page-granular allocations
 * with a tail (a slab object of a whole page among them), are no finding.
 */
static void asi_test_audit_shared(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	void *small = kunit_kmalloc(test, 64, GFP_KERNEL);
	void *whole = kunit_kmalloc(test, PAGE_SIZE, GFP_KERNEL);
	/* Two pages: the first object on them is not the whole allocation. */
	unsigned long a = (unsigned long)asi_test_vmalloc(test, 2 * PAGE_SIZE);
	void *v = asi_test_vmalloc(test, PAGE_SIZE + 100);
	struct asi_audit res;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, small);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, whole);
	/* A page filled by two objects that meet in its middle. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)a, 100, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)a + 100, PAGE_SIZE - 100,
					   ASI_PTE), 0);
	/* Two pages of vmalloc, the second with 100 bytes of the object. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, v, PAGE_SIZE + 100, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 0UL);
	KUNIT_EXPECT_EQ(test, res.pages, 3UL);

	/* The first half of the page alone: the rest is no object's. */
	asi_unmap(asi, (void *)a + 100);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)a + 100, PAGE_SIZE / 2 - 100,
					   ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 1UL);
	KUNIT_EXPECT_EQ(test, res.shared, 1UL);
	KUNIT_EXPECT_EQ(test, res.foreign_bytes, PAGE_SIZE / 2);

	/* The first 100 bytes of a page-sized slab object: its page is its own. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, whole, 100, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 1UL);
	KUNIT_EXPECT_EQ(test, res.pages, 4UL);

	/* A 64-byte slab object: its page holds others, or free space. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, small, 64, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 2UL);
	KUNIT_EXPECT_EQ(test, res.shared, 2UL);
	KUNIT_EXPECT_EQ(test, res.stray, 0UL);
	KUNIT_EXPECT_EQ(test, res.foreign_bytes, PAGE_SIZE / 2 + PAGE_SIZE - 64);
	asi_destroy(asi);
	vfree(v);
	vfree((void *)a);
}

/*
 * The audit's positive controls for what a leaf maps: a copy of a page the
 * kernel has made read-only since is writable beyond the kernel's
 * mapping, and one whose mapping the kernel has removed is stale.  Both
 * are found, and nothing once the copy is gone.
 */
static void asi_test_audit_rights(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	struct page *page = alloc_page(GFP_KERNEL);
	struct asi_audit res;
	void *v;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, page);
	v = vmap(&page, 1, VM_MAP, PAGE_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, v);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, v, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 0UL);
	KUNIT_EXPECT_EQ(test, res.pages, 1UL);

	/* Read-only in the kernel's table, still writable in ours. */
	KUNIT_EXPECT_EQ(test, set_memory_ro((unsigned long)v, 1), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 1UL);
	KUNIT_EXPECT_EQ(test, res.writable, 1UL);
	KUNIT_EXPECT_EQ(test, set_memory_rw((unsigned long)v, 1), 0);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 0UL);

	/* Unmapped by the kernel, still mapped in ours. */
	vunmap(v);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 1UL);
	KUNIT_EXPECT_EQ(test, res.stale, 1UL);
	asi_unmap(asi, v);
	KUNIT_EXPECT_EQ(test, asi_audit(asi, NULL, 0, &res), 0UL);
	KUNIT_EXPECT_EQ(test, res.pages, 0UL);
	asi_destroy(asi);
	__free_page(page);
}

/* The audit's positive control for debug stores: this CPU's, mapped. */
static void asi_test_audit_debug_store(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	int cpu = raw_smp_processor_id();
	void *ds = &get_cpu_entry_area(cpu)->cpu_debug_store;
	struct page *page = NULL;
	struct asi_audit res;
	int ret;

	asi_audit(asi, NULL, 0, &res);
	KUNIT_EXPECT_EQ(test, res.debug_stores, 0UL);
	/* The kernel maps it on Intel CPUs only: elsewhere, a page of ours. */
	if (!asi_kernel_entry((unsigned long)ds, ASI_PTE)) {
		page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, page);
		cea_set_pte(ds, PFN_PHYS(page_to_pfn(page)), PAGE_KERNEL);
	}
	ret = asi_test_map(asi, ds, PAGE_SIZE, ASI_PTE);
	KUNIT_EXPECT_EQ(test, ret, 0);
	if (!ret) {
		asi_audit(asi, NULL, 0, &res);
		KUNIT_EXPECT_EQ(test, res.debug_stores, 1UL);
		asi_unmap(asi, ds);
		asi_audit(asi, NULL, 0, &res);
		KUNIT_EXPECT_EQ(test, res.debug_stores, 0UL);
	}
#ifdef CONFIG_CPU_SUP_INTEL
	/* The same page, as the per-CPU variable the cpu_entry_area maps */
	ret = asi_test_map(asi, per_cpu_ptr(&cpu_debug_store, cpu), PAGE_SIZE, ASI_PTE);
	KUNIT_EXPECT_EQ(test, ret, 0);
	if (!ret) {
		asi_audit(asi, NULL, 0, &res);
		KUNIT_EXPECT_EQ(test, res.debug_stores, 1UL);
		asi_unmap(asi, per_cpu_ptr(&cpu_debug_store, cpu));
	}
#endif
	asi_destroy(asi);
	if (page) {
		pte_clear(&init_mm, (unsigned long)ds, virt_to_kpte((unsigned long)ds));
		flush_tlb_kernel_range((unsigned long)ds, (unsigned long)ds + PAGE_SIZE);
		__free_page(page);
	}
}

/* The audit's positive control for hard-IRQ stacks: this CPU's, mapped. */
static void asi_test_audit_irq_stack(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	void *stack = asi_irq_stack(raw_smp_processor_id());
	struct asi_audit res;

	KUNIT_ASSERT_NOT_NULL(test, stack);
	asi_audit(asi, NULL, 0, &res);
	KUNIT_EXPECT_EQ(test, res.irq_stacks, 0UL);
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, stack, IRQ_STACK_SIZE, ASI_PTE), 0);
	asi_audit(asi, NULL, 0, &res);
	KUNIT_EXPECT_EQ(test, res.irq_stacks, 1UL);
	asi_unmap(asi, stack);
	asi_audit(asi, NULL, 0, &res);
	KUNIT_EXPECT_EQ(test, res.irq_stacks, 0UL);
	asi_destroy(asi);
}

/*
 * The audit's look at every task, and its positive control: a task mapped
 * as an ordinary object is another task's memory; mapped as a task, it is
 * the instance's own.  Tasks that share its pages count either way, and
 * there are none when task structs fill whole pages.
 */
static void asi_test_audit_tasks(struct kunit *test)
{
	struct asi *asi = asi_test_create(test, NULL);
	struct asi_audit res;
	unsigned long neighbours;

	KUNIT_EXPECT_EQ(test, asi_test_map(asi, current, arch_task_struct_size,
					   ASI_PTE), 0);
	asi_audit(asi, NULL, 0, &res);
	KUNIT_EXPECT_EQ(test, res.tasks, 0UL);
	KUNIT_EXPECT_GE(test, res.other_tasks, 1UL);
	neighbours = res.other_tasks ? res.other_tasks - 1 : 0;
	if (PAGE_ALIGNED(current) && PAGE_ALIGNED(arch_task_struct_size))
		KUNIT_EXPECT_EQ(test, neighbours, 0UL);
	asi_unmap(asi, current);

	KUNIT_EXPECT_EQ(test, asi_map_task(asi, current), 0);
	asi_audit(asi, NULL, 0, &res);
	KUNIT_EXPECT_EQ(test, res.tasks, 1UL);
	KUNIT_EXPECT_EQ(test, res.other_tasks, neighbours);
	asi_unmap_task(asi, current);
	asi_destroy(asi);
}

/* Does @pgd map a page of @cpu's entry area, below its debug store? */
static bool asi_test_maps_area(pgd_t *pgd, int cpu)
{
	struct cpu_entry_area *area = get_cpu_entry_area(cpu);
	unsigned long addr;

	for (addr = (unsigned long)area; addr < (unsigned long)&area->cpu_debug_store;
	     addr += PAGE_SIZE)
		if (asi_table_maps(pgd, addr))
			return true;
	return false;
}

/* The audit's count of CPUs whose table is bad. */
static unsigned long asi_test_bad_tables(struct asi *asi)
{
	struct asi_audit res;

	asi_audit(asi, NULL, 0, &res);
	return res.bad_cpu_tables;
}

/*
 * Each CPU loads a table of its own, which maps its entry area and no
 * other CPU's, and follows the instance's table everywhere else.  The
 * audit's positive controls: a CPU's table given another CPU's entry
 * area, another CPU's TSS mapped through its per-CPU alias, and a CPU's
 * table that missed a change of the instance's.
 */
static void asi_test_entry_areas(struct kunit *test)
{
	int cea = asi_entry_area_slot(), cpu, other, first, second;
	const char *degraded = NULL;
	struct asi *core, *asi;
	pgd_t *pgd, saved;
	unsigned long x;
	void *tss;

	if (cea < 0)
		kunit_skip(test, "5-level paging: one table maps every CPU's entry area");
	if (num_possible_cpus() < 2)
		kunit_skip(test, "one possible CPU: no other CPU's entry area to find");
	first = cpumask_first(cpu_possible_mask);
	second = cpumask_next(first, cpu_possible_mask);
	tss = per_cpu_ptr(&cpu_tss_rw, second);
	x = (unsigned long)asi_test_vmalloc(test, PAGE_SIZE);
	core = asi_test_create(test, NULL);
	KUNIT_EXPECT_EQ(test, asi_map_cpu_entry_areas(core, &degraded), 0);
	KUNIT_EXPECT_PTR_EQ(test, degraded, (const char *)NULL);
	asi = asi_create_instance(core, GFP_KERNEL, "test");
	KUNIT_EXPECT_NOT_ERR_OR_NULL(test, asi);
	if (!asi || !core->entry_areas)
		goto out;
	asi->kasan_shadow = false;
	KUNIT_EXPECT_NOT_NULL(test, asi->cpu_tables);
	if (!asi->cpu_tables)
		goto out;
	KUNIT_EXPECT_FALSE(test, asi_table_maps(asi->pgd, CPU_ENTRY_AREA_RO_IDT));
	for_each_possible_cpu(cpu) {
		pgd = asi->cpu_tables[cpu].pgd;
		KUNIT_EXPECT_TRUE(test, asi_table_maps(pgd, CPU_ENTRY_AREA_RO_IDT));
		KUNIT_EXPECT_TRUE(test, asi_test_maps_area(pgd, cpu));
		for_each_possible_cpu(other)
			if (other != cpu)
				KUNIT_EXPECT_FALSE(test, asi_test_maps_area(pgd, other));
	}
	KUNIT_EXPECT_EQ(test, asi_test_bad_tables(asi), 0UL);
	/* The instance's own table has no entry area to map into. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, get_cpu_entry_area(first), PAGE_SIZE, ASI_PTE),
			-EINVAL);

	/* Mapped and unmapped in the instance's table: each CPU's follows. */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, (void *)x, PAGE_SIZE, ASI_PTE), 0);
	for_each_possible_cpu(cpu)
		KUNIT_EXPECT_TRUE(test, asi_table_maps(asi->cpu_tables[cpu].pgd, x));
	/* A CPU's table that missed it */
	pgd = asi->cpu_tables[first].pgd;
	saved = pgd[pgd_index(x)];
	set_pgd(&pgd[pgd_index(x)], __pgd(0));
	KUNIT_EXPECT_EQ(test, asi_test_bad_tables(asi), 1UL);
	set_pgd(&pgd[pgd_index(x)], saved);
	asi_unmap(asi, (void *)x);
	for_each_possible_cpu(cpu)
		KUNIT_EXPECT_FALSE(test, asi_table_maps(asi->cpu_tables[cpu].pgd, x));
	KUNIT_EXPECT_EQ(test, asi_test_bad_tables(asi), 0UL);

	/* The first CPU's table given the second's entry area */
	saved = pgd[cea];
	set_pgd(&pgd[cea], asi->cpu_tables[second].pgd[cea]);
	KUNIT_EXPECT_EQ(test, asi_test_bad_tables(asi), 1UL);
	set_pgd(&pgd[cea], saved);

	/* The second CPU's TSS, through its per-CPU alias: every other CPU sees it */
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, tss, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_test_bad_tables(asi), (unsigned long)num_possible_cpus() - 1);
	asi_unmap(asi, tss);
	KUNIT_EXPECT_EQ(test, asi_test_bad_tables(asi), 0UL);
out:
	asi_destroy(asi);
	asi_destroy(core);
	vfree((void *)x);
}

/*
 * asi_find() reads the mapped pages: it finds bytes planted on
 * one, and bytes that are on no mapped page not.
 */
static void asi_test_find(struct kunit *test)
{
	static const u8 needle[] = "asi_find() needle";
	struct asi *asi = asi_test_create(test, NULL);
	u8 *page = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	u8 other[sizeof(needle)];

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, page);
	memcpy(other, needle, sizeof(needle));
	other[0] ^= 0xff;
	memcpy(page + PAGE_SIZE - sizeof(needle), needle, sizeof(needle));
	KUNIT_EXPECT_EQ(test, asi_test_map(asi, page, PAGE_SIZE, ASI_PTE), 0);
	KUNIT_EXPECT_EQ(test, asi_find(asi, needle, sizeof(needle)), 1L);
	KUNIT_EXPECT_EQ(test, asi_find(asi, other, sizeof(other)), 0L);
	KUNIT_EXPECT_EQ(test, asi_find(asi, needle, 0), (long)-EINVAL);
	asi_destroy(asi);
}

static struct kunit_case asi_test_cases[] = {
	KUNIT_CASE(asi_test_copy_levels),
	KUNIT_CASE(asi_test_kernel_unchanged),
	KUNIT_CASE(asi_test_refuse_overwrite),
	KUNIT_CASE(asi_test_refuse_bad_ranges),
	KUNIT_CASE(asi_test_subset_superset),
	KUNIT_CASE(asi_test_reallocated),
	KUNIT_CASE(asi_test_unaligned),
	KUNIT_CASE(asi_test_percpu_objects),
	KUNIT_CASE(asi_test_two_instances),
	KUNIT_CASE(asi_test_clear_at_level),
	KUNIT_CASE(asi_test_free_all),
	KUNIT_CASE(asi_test_destroy_loaded),
	KUNIT_CASE(asi_test_kasan_shadow),
	KUNIT_CASE(asi_test_alloc_failure),
	KUNIT_CASE(asi_test_audit_stray),
	KUNIT_CASE(asi_test_audit_shared),
	KUNIT_CASE(asi_test_audit_rights),
	KUNIT_CASE(asi_test_audit_irq_stack),
	KUNIT_CASE(asi_test_audit_debug_store),
	KUNIT_CASE(asi_test_entry_areas),
	KUNIT_CASE(asi_test_audit_tasks),
	KUNIT_CASE(asi_test_find),
	{}
};

static struct kunit_suite asi_test_suite = {
	.name = "asi",
	.test_cases = asi_test_cases,
};

kunit_test_suite(asi_test_suite);
