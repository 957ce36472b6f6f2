// SPDX-License-Identifier: MIT
/*
 * A gdb breakpoint on a static-key site (test/scripts/gdb_breakpoint.sh).
 *
 * The program finds the address of the site in bp_fn() from its own jump
 * table and hands it to gdb by calling bp_ready(addr, 1); the script stops
 * there, sets `break *addr` and continues.  static_branch_enable() must then
 * fail and change nothing: the key still reads 0, the other site of the key
 * (in other_fn, no breakpoint) still holds its NOP and takes the disabled
 * branch, and the bytes after the breakpoint's int3 are the site's NOP.  The
 * program prints kk_jump_label_strerror() ("enable failed: ..."); the script
 * checks that it names the debugger breakpoint.  Then bp_ready(addr, 2): the
 * script deletes the breakpoint, and the enable must now succeed everywhere.
 *
 * Without gdb (nothing calls bp_ready's breakpoint), the first enable must
 * succeed: run as `jump_label_gdb_break --no-debugger` to check the program itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kernelkit/jump_label.h>

DEFINE_STATIC_KEY_FALSE(bp_key);
DEFINE_STATIC_KEY_FALSE(other_key);

static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static int failures;

#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "jump_label_gdb_break: FAIL: %s: ", #cond);		\
		fprintf(stderr, __VA_ARGS__);					\
		fprintf(stderr, "\n");						\
		failures++;							\
	}									\
} while (0)

/* gdb stops here (break bp_ready): $rdi = the site's address, $rsi = phase. */
__attribute__((noinline, used)) void bp_ready(uintptr_t site, int phase)
{
	__asm__ __volatile__("" : : "r"(site), "r"(phase) : "memory");
}

__attribute__((noinline)) int bp_fn(void)
{
	return static_branch_unlikely(&bp_key);
}

__attribute__((noinline)) int other_fn(void)
{
	return static_branch_unlikely(&bp_key);
}

__attribute__((noinline)) int unrelated_fn(void)
{
	return static_branch_unlikely(&other_key);
}

/* The sites of @key, in table order: returns how many (at most @max). */
static int find_sites(struct static_key *key, uintptr_t *out, int max)
{
	int n = 0;

	for (const struct jump_entry *e = __start_kk_jump_table; e < __stop_kk_jump_table; e++) {
		/* @key: the key's address with bits 0-1 as flags (bit 1 set),
		 * or, from older headers, an offset to a slot that holds it. */
		uintptr_t k = (uintptr_t)e->key & ~(uintptr_t)3;

		if (!(e->key & 2))
			k = (uintptr_t)*(struct static_key *const *)((uintptr_t)&e->key + k);
		if ((struct static_key *)k == key && n < max)
			out[n++] = (uintptr_t)&e->code + (uintptr_t)(intptr_t)e->code;
	}
	return n;
}

/* The site in @fn: the nearest at or after its entry (the other site
 * of the key is in another function, before @fn or after this one). */
static uintptr_t site_in(uintptr_t *sites, int n, uintptr_t fn)
{
	uintptr_t best = 0;

	for (int i = 0; i < n; i++)
		if (sites[i] >= fn && (!best || sites[i] < best))
			best = sites[i];
	return best;
}

int main(int argc, char **argv)
{
	int no_debugger = argc > 1 && !strcmp(argv[1], "--no-debugger");
	uintptr_t sites[4], bp, other;
	int n, ret;

	n = find_sites(&bp_key.key, sites, 4);
	CHECK(n == 2, "bp_key has %d sites", n);
	if (n != 2)
		return 1;
	bp = site_in(sites, n, (uintptr_t)&bp_fn);
	other = bp == sites[0] ? sites[1] : sites[0];
	printf("jump_label_gdb_break: site %#lx in bp_fn, site %#lx in other_fn\n",
	       (unsigned long)bp, (unsigned long)other);
	fflush(stdout);
	CHECK(!bp_fn() && !other_fn() && !unrelated_fn(), "sites start disabled");
	CHECK(!memcmp((void *)other, nop5, 5), "other site holds its NOP");

	bp_ready(bp, 1);	/* gdb: break *$rdi */
	ret = static_branch_enable(&bp_key);
	if (no_debugger) {
		CHECK(ret == 0, "enable without a debugger: %d %s", ret, kk_jump_label_strerror());
	} else {
		printf("enable failed: %d: %s\n", ret, ret ? kk_jump_label_strerror() : "(no error)");
		fflush(stdout);
		CHECK(ret < 0, "enable with a breakpoint on a site must fail");
		CHECK(!static_key_enabled(&bp_key), "the key still reads 0");
		CHECK(static_key_count(&bp_key.key) == 0, "count %d", static_key_count(&bp_key.key));
		CHECK(!memcmp((void *)other, nop5, 5), "the other site still holds its NOP");
		CHECK(!other_fn(), "the other site takes the disabled branch");
		CHECK(*(uint8_t *)bp == 0xcc, "gdb's int3 is at the site (%#x)", *(uint8_t *)bp);
		CHECK(!memcmp((uint8_t *)bp + 1, nop5 + 1, 4), "the rest of the site is its NOP");
		CHECK(!unrelated_fn(), "an unrelated key's site is unchanged");

		bp_ready(bp, 2);	/* gdb: delete the breakpoint */
		CHECK(!memcmp((void *)bp, nop5, 5), "breakpoint removed: the site's NOP is back");
		ret = static_branch_enable(&bp_key);
		CHECK(ret == 0, "enable after the breakpoint is gone: %d %s", ret,
		      ret ? kk_jump_label_strerror() : "");
	}
	CHECK(static_key_enabled(&bp_key), "the key reads 1");
	CHECK(bp_fn() && other_fn(), "both sites take the enabled branch");
	CHECK(!unrelated_fn(), "an unrelated key's site is unchanged");
	if (failures)
		return 1;
	printf("jump_label_gdb_break: ok\n");
	return 0;
}
