// SPDX-License-Identifier: MIT
/*
 * The static-key registry: an object's own table is never written (a key
 * with several runs in it is linked to each run), keys are linked to their
 * runs without an allocation per key or site, and the first patch of many
 * pages never drops a page that is already privately modified.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "kktest.h"

#ifndef KK_NO_JUMP_LABEL

static struct static_key_false sk0 = __KK_KEY_INIT(0, "sort_k0");
static struct static_key_false sk1 = __KK_KEY_INIT(0, "sort_k1");
static struct static_key_false sk2 = __KK_KEY_INIT(0, "sort_k2");

static uintptr_t e_code(const struct jump_entry *e)
{
	return (uintptr_t)&e->code + (uintptr_t)(intptr_t)e->code;
}

static uintptr_t e_target(const struct jump_entry *e)
{
	return (uintptr_t)&e->target + (uintptr_t)(intptr_t)e->target;
}

/* Bit 1 of key: the key's address (the headers' entries); clear: an offset
 * to a slot holding it (entries of objects built with older headers). */
static struct static_key *e_key(const struct jump_entry *e)
{
	if (e->key & 2)
		return (struct static_key *)(uintptr_t)(e->key & ~3LL);
	return *(struct static_key **)((uintptr_t)&e->key + (uintptr_t)(e->key & ~1LL));
}

static void set_entry(struct jump_entry *e, uint8_t *code, uint8_t *target,
		      struct static_key **slot, int branch, int abs)
{
	e->code = (int32_t)((intptr_t)code - (intptr_t)&e->code);
	e->target = (int32_t)((intptr_t)target - (intptr_t)&e->target);
	if (abs)
		e->key = (int64_t)(intptr_t)*slot + 2 + branch;
	else
		e->key = (int64_t)((intptr_t)slot - (intptr_t)&e->key) + branch;
}

/*
 * A hand-built object whose keys each have several runs, in no order (the
 * kernel sorts such a table; issue 41: nginx's inline timer sites made
 * kernelkit heap-sort it, ~700 instructions an entry).  The table is not
 * written (it is read-only here: a write crashes), and switching a key
 * patches every site of it and no other.  The table mixes absolute keys and
 * keys through a slot (an object may link units built with older headers),
 * and unlikely() with likely() sites.
 */
Test(jump_label_registry, sorting_keys_in_several_runs_are_linked_unsorted)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *code = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct jump_entry *tab = (struct jump_entry *)(code + pg);
	struct static_key **slot = (struct static_key **)(code + pg + 512);
	uint8_t *target = code + 256;
	/* site offset, key, branch, absolute key; in table order (deliberately unsorted) */
	static const struct { int off, key, branch, abs; } in[] = {
		{ 80, 1, 0, 1 }, { 0, 2, 0, 0 }, { 64, 0, 0, 1 }, { 96, 1, 1, 1 }, { 16, 0, 0, 0 },
		{ 48, 2, 0, 1 }, { 32, 1, 0, 0 },
	};
	const int n = (int)(sizeof(in) / sizeof(in[0]));
	char *txt = NULL;

	cr_assert_neq(code, MAP_FAILED);
	memset(code, 0xc3, pg);
	slot[0] = &sk0.key;
	slot[1] = &sk1.key;
	slot[2] = &sk2.key;
	for (int i = 0; i < n; i++) {
		uint8_t *site = code + in[i].off;

		if (in[i].branch)	/* a likely() site on a false key starts as a jump */
			kkt_put_jump(site, target);
		else
			kkt_put_nop(site);
		set_entry(&tab[i], site, target, &slot[in[i].key], in[i].branch, in[i].abs);
	}
	cr_assert_eq(mprotect(code, pg, PROT_READ | PROT_EXEC), 0);
	cr_assert_eq(mprotect(tab, pg, PROT_READ), 0);

	cr_assert_eq(kk_jump_label_add_object(tab, tab + n), 0);
	for (int i = 0; i < n; i++)	/* every entry is where it was, intact */
		cr_expect(e_code(&tab[i]) == (uintptr_t)(code + in[i].off) &&
			  e_target(&tab[i]) == (uintptr_t)target &&
			  e_key(&tab[i]) == *&slot[in[i].key] &&
			  (int)(tab[i].key & 1) == in[i].branch, "entry %d", i);

	cr_assert_eq(static_branch_enable(&sk1), 0, "%s", kk_jump_label_strerror());
	cr_expect(kkt_is_jump_to(code + 80, target) && kkt_is_jump_to(code + 32, target));
	cr_expect(kkt_is_nop(code + 96), "the likely() site of sk1 turns into a NOP");
	cr_expect(kkt_is_nop(code + 0) && kkt_is_nop(code + 16) &&
		  kkt_is_nop(code + 48) && kkt_is_nop(code + 64), "other keys' sites moved");
	cr_assert_eq(static_branch_enable(&sk0), 0);
	cr_expect(kkt_is_jump_to(code + 16, target) && kkt_is_jump_to(code + 64, target));
	cr_expect(kkt_is_nop(code + 0) && kkt_is_nop(code + 48));

	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(strstr(txt, "\nsort_k0 1 1 2 "), "%s", txt);
	cr_expect(strstr(txt, "\nsort_k1 1 1 3 "), "%s", txt);
	cr_expect(strstr(txt, "\nsort_k2 0 0 2 "), "%s", txt);
	free(txt);

	kk_jump_label_del_object(tab, tab + n, NULL);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(!strstr(txt, "sort_k0 "), "unloaded sites still listed:\n%s", txt);
	free(txt);
	/* the keys outlive the object: changing them touches no unloaded text */
	cr_expect_eq(static_branch_disable(&sk0), 0);
}

/* A site of a hand-built table: its offset in the code page, and its key (sk0..2). */
struct hand_site {
	int off, key;
};

/* A hand-built object: its code page, the target of its jumps, its table. */
struct hand_object {
	uint8_t *code, *target;
	struct jump_entry *tab;
};

/*
 * An object of @n unlikely() sites (NOPs) at @in's offsets, each entry's key
 * an offset to a slot (as older headers built them).  The code page is made
 * executable and the table read-only: the tests that use it say that the
 * registry does not write the table, and a write would crash.
 */
static struct hand_object make_table(const struct hand_site *in, int n)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *code = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct hand_object o = { code, code + 256, (struct jump_entry *)(code + pg) };
	struct static_key **slot = (struct static_key **)(code + 2 * pg);

	cr_assert_neq(code, MAP_FAILED);
	memset(code, 0xc3, pg);
	slot[0] = &sk0.key;
	slot[1] = &sk1.key;
	slot[2] = &sk2.key;
	for (int i = 0; i < n; i++) {
		kkt_put_nop(code + in[i].off);
		set_entry(&o.tab[i], code + in[i].off, o.target, &slot[in[i].key], 0, 0);
	}
	cr_assert_eq(mprotect(code, pg, PROT_READ | PROT_EXEC), 0);
	cr_assert_eq(mprotect(o.tab, pg, PROT_READ), 0);
	return o;
}

/*
 * A table whose keys are already grouped (here: in descending order, as GCC
 * emits the sites of static functions) is not written: its pages stay clean
 * and shared with the file.  The test makes the table read-only, so a write
 * would crash.
 */
Test(jump_label_registry, sorting_grouped_table_is_not_written)
{
	static const struct hand_site in[] = { { 0, 2 }, { 48, 2 }, { 16, 1 }, { 32, 0 } };
	struct hand_object o = make_table(in, 4);
	uint8_t *code = o.code, *target = o.target;

	cr_assert_eq(kk_jump_label_add_object(o.tab, o.tab + 4), 0);
	cr_assert_eq(static_branch_enable(&sk2), 0, "%s", kk_jump_label_strerror());
	cr_expect(kkt_is_jump_to(code + 0, target) && kkt_is_jump_to(code + 48, target));
	cr_expect(kkt_is_nop(code + 16) && kkt_is_nop(code + 32));
	kk_jump_label_del_object(o.tab, o.tab + 4, NULL);
}

/*
 * Issue 41: what registration needs is each key's sites in one run, not the
 * keys in order.  A program's table is its units' tables end to end: keys
 * ascending from unit to unit and, within a unit, often descending.  Such a
 * table (here keys 1, 0, 2: neither order) was heap-sorted, nginx's 1313
 * sites for ~800 instructions each; it must not be written at all.  The
 * table is read-only, so a write crashes.
 */
Test(jump_label_registry, sorting_runs_in_any_key_order_are_not_written)
{
	static const struct hand_site in[] = {
		{ 64, 1 }, { 0, 1 }, { 16, 0 }, { 48, 2 }, { 32, 2 },
	};
	const int n = (int)(sizeof(in) / sizeof(in[0]));
	struct hand_object o = make_table(in, n);
	uint8_t *code = o.code, *target = o.target;
	char *txt = NULL;

	cr_assert_eq(kk_jump_label_add_object(o.tab, o.tab + n), 0);
	cr_assert_eq(static_branch_enable(&sk1), 0, "%s", kk_jump_label_strerror());
	cr_expect(kkt_is_jump_to(code + 64, target) && kkt_is_jump_to(code + 0, target));
	cr_expect(kkt_is_nop(code + 16) && kkt_is_nop(code + 32) && kkt_is_nop(code + 48));
	cr_assert_eq(static_branch_enable(&sk2), 0, "%s", kk_jump_label_strerror());
	cr_expect(kkt_is_jump_to(code + 48, target) && kkt_is_jump_to(code + 32, target));
	cr_expect(kkt_is_nop(code + 16));
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(strstr(txt, "\nsort_k0 0 0 1 "), "%s", txt);
	cr_expect(strstr(txt, "\nsort_k1 1 1 2 "), "%s", txt);
	cr_expect(strstr(txt, "\nsort_k2 1 1 2 "), "%s", txt);
	free(txt);
	kk_jump_label_del_object(o.tab, o.tab + n, NULL);
	cr_expect_eq(static_branch_disable(&sk1), 0);
	cr_expect_eq(static_branch_disable(&sk2), 0);
}

/*
 * A key with several runs in one object and a run in another: each unload
 * leaves the other object's sites switched with the key, all of them, in
 * either order.  (With one object gone the key has one object left; if that
 * one holds several runs, all of them stay linked.)
 */
static void expect_sites(const struct hand_object *o, const int *off, int n, int jump)
{
	for (int i = 0; i < n; i++)
		cr_expect(jump ? kkt_is_jump_to(o->code + off[i], o->target) : kkt_is_nop(o->code + off[i]),
			  "site +%d of %p: %s expected", off[i], (void *)o->code, jump ? "a jump" : "a NOP");
}

static void key_in_two_objects(int unload_many_first)
{
	static const struct hand_site many[] = {
		{ 0, 1 }, { 16, 0 }, { 32, 1 }, { 48, 2 }, { 64, 1 }, { 80, 0 },
	};
	static const struct hand_site one[] = { { 0, 2 }, { 16, 1 } };
	static const int many_k1[] = { 0, 32, 64 }, many_other[] = { 16, 48, 80 };
	static const int one_k1[] = { 16 }, one_other[] = { 0 };
	struct hand_object a = make_table(many, 6), b = make_table(one, 2);
	const struct hand_object *gone = unload_many_first ? &a : &b;
	const struct hand_object *left = unload_many_first ? &b : &a;
	const int *left_k1 = unload_many_first ? one_k1 : many_k1;
	int left_n = unload_many_first ? 1 : 3;
	char *txt = NULL;

	cr_assert_eq(kk_jump_label_add_object(a.tab, a.tab + 6), 0);
	cr_assert_eq(kk_jump_label_add_object(b.tab, b.tab + 2), 0);
	cr_assert_eq(static_branch_enable(&sk1), 0, "%s", kk_jump_label_strerror());
	expect_sites(&a, many_k1, 3, 1);
	expect_sites(&b, one_k1, 1, 1);
	expect_sites(&a, many_other, 3, 0);
	expect_sites(&b, one_other, 1, 0);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(strstr(txt, "\nsort_k1 1 1 4 "), "%s", txt);
	free(txt);
	cr_assert_eq(static_branch_disable(&sk1), 0);
	expect_sites(&a, many_k1, 3, 0);
	expect_sites(&b, one_k1, 1, 0);

	kk_jump_label_del_object(gone->tab, gone->tab + (gone == &a ? 6 : 2), NULL);
	cr_assert_eq(static_branch_enable(&sk1), 0, "%s", kk_jump_label_strerror());
	expect_sites(left, left_k1, left_n, 1);
	expect_sites(gone, gone == &a ? many_k1 : one_k1, gone == &a ? 3 : 1, 0);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(strstr(txt, left_n == 3 ? "\nsort_k1 1 1 3 " : "\nsort_k1 1 1 1 "), "%s", txt);
	free(txt);
	cr_assert_eq(static_branch_disable(&sk1), 0);
	expect_sites(left, left_k1, left_n, 0);
	kk_jump_label_del_object(left->tab, left->tab + (left == &a ? 6 : 2), NULL);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(!strstr(txt, "sort_k1 "), "unloaded sites still listed:\n%s", txt);
	free(txt);
}

Test(jump_label_registry, sorting_key_in_runs_of_two_objects_unload_many_first)
{
	key_in_two_objects(1);
}

Test(jump_label_registry, sorting_key_in_runs_of_two_objects_unload_one_first)
{
	key_in_two_objects(0);
}

/* ---- the first patch of many pages ---------------------------------------------- */

DEFINE_STATIC_KEY_FALSE(zk_x);
DEFINE_STATIC_KEY_FALSE(zk_a);

/* Three pages of their own, each with a site of zk_x; the first also holds zk_a's. */
#define ZPAGE __attribute__((noinline, aligned(4096), section(".text.kkzap")))
ZPAGE int zp1(int a)
{
	if (a)
		return static_branch_unlikely(&zk_a);
	return static_branch_unlikely(&zk_x);
}
ZPAGE int zp2(void) { return static_branch_unlikely(&zk_x); }
ZPAGE int zp3(void) { return static_branch_unlikely(&zk_x); }
ZPAGE int zp4(void) { return static_branch_unlikely(&zk_x); }

/*
 * Pages already private are never dropped.  A batch over many pages unmaps
 * the ones that still hold the file's bytes, so that they come back as
 * private copies without a TLB flush each; a page we patched before, or one
 * a debugger wrote a breakpoint into, must keep its bytes.
 */
Test(jump_label_registry, cow_private_pages_keep_their_bytes)
{
	volatile uint8_t *mark = (volatile uint8_t *)((uintptr_t)zp3 | 4095);	/* padding */
	uint8_t want;
	int fd;

	cr_assert_eq(zp1(0) + zp1(1) + zp2() + zp3() + zp4(), 0);	/* map the pages */
	/* a "debugger" writes into zp3's page */
	want = *mark == 0xcc ? 0x90 : 0xcc;
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &want, 1, (off_t)(uintptr_t)mark), 1);
	close(fd);
	/* a patch of our own on zp1's page */
	cr_assert_eq(static_branch_enable(&zk_a), 0);
	cr_assert_eq(zp1(1), 1);

	cr_assert_eq(static_branch_enable(&zk_x), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(zp1(0) + zp2() + zp3() + zp4(), 4);
	cr_expect_eq(zp1(1), 1, "the earlier patch on the first page was lost");
	cr_expect_eq(*mark, want, "the debugger's byte was lost");
	cr_assert_eq(static_branch_disable(&zk_x), 0);
	cr_expect_eq(zp1(0) + zp2() + zp3() + zp4(), 0);
	cr_expect_eq(zp1(1), 1);
	cr_expect_eq(*mark, want);
}

#endif /* KK_NO_JUMP_LABEL */

/* test/lib/libjump_label_user.so uses this key (the program links with -rdynamic). */
DEFINE_STATIC_KEY_FALSE(jump_label_shared_key);

/*
 * A key of an object that is unloaded while it is queued leaves the queue
 * with it: applying the queue afterwards must not touch the unmapped key.
 * The cross-object key the object used keeps working, with its own sites.
 */
Test(jump_label_registry, registration_unload_drops_queued_keys_of_the_object)
{
	void *h = dlopen(kkt_build_path("test/lib/libjump_label_user.so"), RTLD_NOW | RTLD_LOCAL);
	struct static_key_true *(*key)(void);
	int (*shared)(void);
	char *txt = NULL;

	cr_assert(h, "%s", dlerror());
	key = (struct static_key_true *(*)(void))dlsym(h, "jump_label_user_key");
	shared = (int (*)(void))dlsym(h, "jump_label_user_shared");
	cr_assert(key && shared);
	cr_assert_eq(static_branch_disable_queued(key()), 0);
	cr_assert_eq(static_branch_enable_queued(&jump_label_shared_key), 0);
	cr_assert_eq(static_key_apply_queued(), 0);
	cr_expect_eq(shared(), 1);
	cr_expect(!static_key_enabled(key()));
	cr_assert_eq(static_branch_enable_queued(key()), 0);
	cr_assert_eq(static_branch_disable_queued(&jump_label_shared_key), 0);
	dlclose(h);
	cr_expect_eq(static_key_apply_queued(), 0, "%s", kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&jump_label_shared_key));
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(!strstr(txt, "jump_label_lib_key"), "%s", txt);
	free(txt);
}

/*
 * Registration allocates per object, not per key or site: dlopen an object
 * with 2019 sites, each on its own key (bench/gen-sites.sh).  The old
 * registry kept a 32-byte copy of every site and a record per key (about
 * 300 bytes a site).  (In the fallback build the object has no sites: the
 * same holds trivially, and its keys are known only once the API touches them.)
 */
Test(jump_label_registry, registration_no_allocation_per_key_or_site)
{
	struct mallinfo2 a, b;
	size_t used;
	void *h;

	a = mallinfo2();
	h = dlopen(kkt_build_path("bench-mods/libjump_label_mod0.so"), RTLD_NOW | RTLD_LOCAL);
	cr_assert(h, "%s", dlerror());
	b = mallinfo2();
	used = (b.uordblks + b.hblkhd) - (a.uordblks + a.hblkhd);
	cr_expect_lt(used, 2019 * 4, "%zu bytes malloc'ed for 2019 sites", used);
	dlclose(h);
}
