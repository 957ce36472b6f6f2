// SPDX-License-Identifier: MIT
/*
 * A page swap keeps its page the file's (issue 22 follow-up).  The swap
 * moves a rebuilt copy over the pages it touches; an anonymous copy
 * dropped the file's name from /proc/self/maps (perf and every symbolizer
 * read it), and carried a uprobe's int3 (bpftrace, USDT, perf probe) along
 * into a page the kernel no longer knew as the file's: the next call of the
 * probed function trapped as a foreign trap, and the process died of
 * SIGTRAP at the first swap of that page.  The copy is now mapped from the
 * same file at the same offset.
 *
 * The uprobe comes from perf_event_open() on the "uprobe" PMU, on a
 * function that shares a page with a site; it needs root (the suite runs as
 * root) and a kernel with uprobes, and is skipped without them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

#ifdef KK_NO_JUMP_LABEL
Test(text_poke_swap_file, no_text_is_written_in_the_fallback_build)
{
	cr_skip_test("KK_NO_JUMP_LABEL: sites are load+test+branch, no text is written");
}
#else

DEFINE_STATIC_KEY_FALSE(uk);

/* The probed function holds the site: its first instruction (the uprobe's)
 * and the site share its page.  The first instruction is a nop of its own:
 * a uprobe on the site itself is a foreign breakpoint there, and the flip
 * is refused (aarch64 starts the function with the site). */
__attribute__((noinline, aligned(64))) static int uprobed(int x)
{
	__asm__ volatile("nop" : "+r"(x));
	if (static_branch_unlikely(&uk))
		x += 100;
	return x + 1;
}

static int usite(void)
{
	return uprobed(0) == 101;
}

static void force_swap(void)
{
	setenv("KK_TEXT_SYNC", "swap", 1);
}

/* The /proc/self/maps line of @addr, in @line. */
static int maps_line(const void *addr, char *line, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	cr_assert(f);
	while (!found && fgets(line, (int)len, f)) {
		unsigned long lo, hi;

		found = sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)addr >= lo &&
			(uintptr_t)addr < hi;
	}
	fclose(f);
	return found;
}

static void flip(int on)
{
	cr_assert_eq(on ? static_branch_enable(&uk) : static_branch_disable(&uk), 0, "%s",
		     kk_jump_label_strerror());
	cr_assert_eq(usite(), on);
}

/* Flip twice; the page of the site must still be the executable's. */
static void flip_and_check_maps(const char *what)
{
	char exe[4096], line[4096 + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	cr_assert_gt(n, 0);
	exe[n] = 0;
	flip(1);
	flip(0);
	cr_assert(maps_line((const void *)uprobed, line, sizeof(line)));
	cr_expect(strstr(line, exe), "the %s page is no longer the file's: %s", what, line);
}

Test(text_poke_swap_file, swapped_page_keeps_its_file_name, .init = force_swap)
{
	flip_and_check_maps("swapped");
	cr_expect_eq(strcmp(kk_jump_label_sync_method(), "swap"), 0, "%s",
		     kk_jump_label_sync_method());
}

/* The remap write method (/proc/self/mem refused) rebuilds pages the same way. */
static void force_remap(void)
{
	setenv("KK_TEXT_POKE", "remap", 1);
	setenv("KK_TEXT_SYNC", "membarrier", 1);
}

Test(text_poke_swap_file, remapped_page_keeps_its_file_name, .init = force_remap)
{
	flip_and_check_maps("rebuilt");
	cr_expect_eq(strcmp(kk_jump_label_method(), "remap"), 0, "%s", kk_jump_label_method());
}

/* A uprobe on @fn of this executable, for this process: its perf fd, or
 * -1 (the reason in @why). */
static int uprobe_open(const void *fn, char *why, size_t whylen)
{
	char exe[4096], line[4096 + 128], type[32] = "";
	unsigned long lo, hi, off;
	struct perf_event_attr a;
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd;

	if (!f || !fgets(type, sizeof(type), f)) {
		snprintf(why, whylen, "no uprobe PMU (/sys/bus/event_source/devices/uprobe)");
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	cr_assert_gt(n, 0);
	exe[n] = 0;
	cr_assert(maps_line(fn, line, sizeof(line)));
	cr_assert_eq(sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off), 3);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = (unsigned)atoi(type);
	a.config1 = (uint64_t)(uintptr_t)exe;
	a.config2 = (uintptr_t)fn - lo + off;
	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		snprintf(why, whylen, "perf_event_open(uprobe): %s", strerror(errno));
	return fd;
}

Test(text_poke_swap_file, uprobe_on_a_swapped_page_still_counts, .init = force_swap)
{
	char why[160];
	uint8_t before[4], now[4];
	uint64_t hits = 0;
	int fd, sum = 0;

	/* The breakpoint is the arch's (x86: int3, aarch64: brk): compare the
	 * first instruction's bytes with what they were. */
	memcpy(before, (const void *)uprobed, sizeof(before));
	fd = uprobe_open((const void *)uprobed, why, sizeof(why));
	if (fd < 0)
		cr_skip_test("%s", why);
	memcpy(now, (const void *)uprobed, sizeof(now));
	cr_assert(memcmp(now, before, sizeof(now)), "the uprobe wrote no breakpoint");
	for (int i = 0; i < 20; i++) {
		flip(!(i & 1));		/* swaps the probed page: the old code died here */
		sum += uprobed(i) - 100 * !(i & 1);
	}
	cr_assert_eq(read(fd, &hits, sizeof(hits)), (ssize_t)sizeof(hits));
	/* 40 calls: one in each flip's check (usite()), one in the loop */
	cr_expect_eq(hits, 40, "the uprobe counted %llu calls of 40", (unsigned long long)hits);
	close(fd);
	/* Unregistered: the kernel put the original bytes back in the page
	 * that is now there. */
	memcpy(now, (const void *)uprobed, sizeof(now));
	cr_expect(!memcmp(now, before, sizeof(now)), "the uprobe's breakpoint stayed");
	cr_expect_eq(sum, 210, "%d", sum);	/* uprobed(i) = i + 1 */
}

/* The site's own address in uprobed(): its disabled form, after the nop. */
static const void *usite_addr(void)
{
#if defined(__x86_64__)
	static const uint8_t nop5[] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const size_t step = 1, len = sizeof(nop5);
	const void *want = nop5;
#else
	static const uint32_t nop = 0xd503201f;
	const size_t step = 4, len = 4;
	const void *want = &nop;
#endif
	const uint8_t *p = (const uint8_t *)uprobed;

	for (size_t off = step; off < 64; off += step)
		if (!memcmp(p + off, want, len))
			return p + off;
	return NULL;
}

/* A uprobe on the site itself: the flip is refused, nothing changes, and
 * the reason names uprobes (the library never writes over a breakpoint it
 * did not put there). */
Test(text_poke_swap_file, uprobe_on_the_site_is_refused_by_name)
{
	const void *site = usite_addr();
	char why[160];
	int fd;

	cr_assert(site, "no disabled site found in uprobed()");
	fd = uprobe_open(site, why, sizeof(why));
	if (fd < 0)
		cr_skip_test("%s", why);
	cr_expect_neq(static_branch_enable(&uk), 0, "a flip over a uprobe succeeded");
	cr_expect(strstr(kk_jump_label_strerror(), "uprobe"), "%s", kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&uk));
	cr_expect_eq(uprobed(0), 1, "the site changed");
	close(fd);
	cr_expect_eq(static_branch_enable(&uk), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(uprobed(0), 101);
}
#endif
