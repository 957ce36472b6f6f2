/* SPDX-License-Identifier: MIT */
/*
 * Static keys from every dialect: every macro family of jump_label.h and
 * jump_label_ratelimit.h, and one NOP per disabled site.
 */
#include <string.h>
#include <stdlib.h>
#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/jump_label_ratelimit.h>
#include "dialect.h"

#define CONFIG_DIALECT_ON 1
/* CONFIG_DIALECT_OFF is not defined */

DECLARE_STATIC_KEY_FALSE(dialect_off);
DECLARE_STATIC_KEY_TRUE(dialect_on);
DEFINE_STATIC_KEY_FALSE(dialect_off);
DEFINE_STATIC_KEY_TRUE(dialect_on);
DEFINE_STATIC_KEY_FALSE_RO(dialect_off_ro);
DEFINE_STATIC_KEY_TRUE_RO(dialect_on_ro);
DECLARE_STATIC_KEY_ARRAY_TRUE(dialect_arr_on, 3);
DECLARE_STATIC_KEY_ARRAY_FALSE(dialect_arr_off, 2);
DEFINE_STATIC_KEY_ARRAY_TRUE(dialect_arr_on, 3);
DEFINE_STATIC_KEY_ARRAY_FALSE(dialect_arr_off, 2);
DEFINE_STATIC_KEY_ARRAY_FALSE_RO(dialect_arr_ro, 4);
DECLARE_STATIC_KEY_MAYBE(CONFIG_DIALECT_ON, dialect_maybe_on);
DECLARE_STATIC_KEY_MAYBE(CONFIG_DIALECT_OFF, dialect_maybe_off);
DEFINE_STATIC_KEY_MAYBE(CONFIG_DIALECT_ON, dialect_maybe_on);
DEFINE_STATIC_KEY_MAYBE(CONFIG_DIALECT_OFF, dialect_maybe_off);
DEFINE_STATIC_KEY_MAYBE_RO(CONFIG_DIALECT_ON, dialect_maybe_ro);
DEFINE_STATIC_KEY_DEFERRED_FALSE(dialect_def_off, 1);
DEFINE_STATIC_KEY_DEFERRED_TRUE(dialect_def_on, 1);
/* The old API, on plain keys. */
struct static_key dialect_old_off = STATIC_KEY_INIT_FALSE;
struct static_key dialect_old_on = STATIC_KEY_INIT_TRUE;
struct static_key dialect_old_init = STATIC_KEY_INIT;
struct static_key_deferred dialect_rl;

static int __attribute__((__noinline__)) site_off(void)
{
	if (static_branch_unlikely(&dialect_off))
		return 1;
	return 0;
}

static int __attribute__((__noinline__)) site_on(void)
{
	if (static_branch_likely(&dialect_on))
		return 1;
	return 0;
}

/* All four combinations of likely/unlikely and true/false keys. */
static int __attribute__((__noinline__)) site_matrix(void)
{
	int v = 0;

	if (static_branch_likely(&dialect_off_ro))
		v |= 1;
	if (static_branch_unlikely(&dialect_on_ro))
		v |= 2;
	if (static_branch_likely(&dialect_arr_on[1]))
		v |= 4;
	if (static_branch_unlikely(&dialect_arr_off[1]))
		v |= 8;
	return v;
}

static int __attribute__((__noinline__)) site_old(void)
{
	int v = 0;

	if (static_key_false(&dialect_old_off))
		v |= 1;
	if (static_key_true(&dialect_old_on))
		v |= 2;
	return v;
}

static int __attribute__((__noinline__)) site_maybe(void)
{
	int v = 0;

	if (static_branch_maybe(CONFIG_DIALECT_ON, &dialect_maybe_on))
		v |= 1;
	if (static_branch_maybe(CONFIG_DIALECT_OFF, &dialect_maybe_off))
		v |= 2;
	if (static_branch_unlikely(&dialect_def_off.key))
		v |= 4;
	if (static_branch_likely(&dialect_def_on.key))
		v |= 8;
	return v;
}

#ifndef KK_NO_JUMP_LABEL
/* Every site of this program that belongs to a disabled-by-default,
 * unlikely site starts as the arch's NOP (x86_64: the 5-byte NOP; aarch64:
 * NOP), in C and in C++ alike. */
static int nop_sites(void)
{
#if defined(__aarch64__)
	static const unsigned char nop[4] = { 0x1f, 0x20, 0x03, 0xd5 };
#else
	static const unsigned char nop[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
#endif
	const struct jump_entry *e;
	int nops = 0;

	for (e = __start_kk_jump_table; e && e < __stop_kk_jump_table; e++) {
		const unsigned char *code = (const unsigned char *)&e->code + e->code;
		if (memcmp(code, nop, sizeof(nop)) == 0)
			nops++;
	}
	return nops;
}
#endif

static int dialect_key_values(void)
{
	struct static_key_false f;
	struct static_key_true t;

	/* The kernel's value forms: assignable in both languages. */
	f = STATIC_KEY_FALSE_INIT;
	t = STATIC_KEY_TRUE_INIT;
	DIALECT_CHECK(static_key_count(&f.key) == 0 && static_key_count(&t.key) == 1);
	DIALECT_CHECK(!static_key_enabled(&f) && static_key_enabled(&t));
	DIALECT_CHECK(!jump_label_enabled(&dialect_old_init));
	DIALECT_CHECK(static_key_initialized);
	STATIC_KEY_CHECK_USE(&dialect_old_init);
	jump_label_init();
	DIALECT_CHECK(JUMP_LABEL_NOP == 0 && JUMP_LABEL_JMP == 1);
	DIALECT_CHECK(sizeof(dialect_arr_on) == 3 * sizeof(struct static_key_true));
	DIALECT_CHECK(static_key_enabled(&dialect_arr_on[2]) && !static_key_enabled(&dialect_arr_ro[3]));
	return 0;
}

static int dialect_refcounts(void)
{
	DIALECT_CHECK(!static_key_fast_inc_not_disabled(&dialect_off.key));
	DIALECT_CHECK(static_branch_inc(&dialect_off) == 0);
	DIALECT_CHECK(static_key_fast_inc_not_disabled(&dialect_off.key));
	DIALECT_CHECK(static_key_count(&dialect_off.key) == 2);
	DIALECT_CHECK(static_branch_dec(&dialect_off) == 0);
	DIALECT_CHECK(site_off() == 1);
	DIALECT_CHECK(static_key_slow_dec(&dialect_off.key) == 0);
	DIALECT_CHECK(site_off() == 0);
	DIALECT_CHECK(static_key_slow_inc(&dialect_old_off) == 0);
	DIALECT_CHECK(site_old() == 3);
	DIALECT_CHECK(static_key_disable(&dialect_old_on) == 0);
	DIALECT_CHECK(site_old() == 1);
	DIALECT_CHECK(static_key_enable(&dialect_old_on) == 0);
	DIALECT_CHECK(static_key_slow_dec(&dialect_old_off) == 0);
	DIALECT_CHECK(site_old() == 2);

	/* _cpuslocked under the patching lock */
	jump_label_lock();
	DIALECT_CHECK(static_branch_enable_cpuslocked(&dialect_arr_off[1]) == 0);
	DIALECT_CHECK(static_branch_inc_cpuslocked(&dialect_arr_off[1]) == 0);
	DIALECT_CHECK(static_branch_dec_cpuslocked(&dialect_arr_off[1]) == 0);
	DIALECT_CHECK(static_key_enable_cpuslocked(&dialect_off_ro.key) == 0);
	jump_label_unlock();
	DIALECT_CHECK(site_matrix() == (1 | 2 | 4 | 8));
	jump_label_lock();
	DIALECT_CHECK(static_branch_disable_cpuslocked(&dialect_arr_off[1]) == 0);
	DIALECT_CHECK(static_key_disable_cpuslocked(&dialect_off_ro.key) == 0);
	DIALECT_CHECK(static_key_slow_inc_cpuslocked(&dialect_on_ro.key) == 0);
	DIALECT_CHECK(static_key_slow_dec_cpuslocked(&dialect_on_ro.key) == 0);
	jump_label_unlock();
	DIALECT_CHECK(site_matrix() == (2 | 4));
	return 0;
}

static int dialect_queued(void)
{
	struct kk_jump_label_stats st;

	DIALECT_CHECK(static_branch_enable_queued(&dialect_arr_off[0]) == 0);
	DIALECT_CHECK(static_key_disable_queued(&dialect_arr_on[0].key) == 0);
	DIALECT_CHECK(static_key_enable_queued(&dialect_arr_off[0].key) == 0);
	DIALECT_CHECK(!static_key_enabled(&dialect_arr_off[0]));
	DIALECT_CHECK(static_key_apply_queued() == 0);
	DIALECT_CHECK(static_key_enabled(&dialect_arr_off[0]) && !static_key_enabled(&dialect_arr_on[0]));
	DIALECT_CHECK(static_branch_disable_queued(&dialect_arr_off[0]) == 0);
	kk_static_key_discard_queued();
	DIALECT_CHECK(static_key_enabled(&dialect_arr_off[0]));
	DIALECT_CHECK(static_branch_disable(&dialect_arr_off[0]) == 0);
	DIALECT_CHECK(static_branch_enable(&dialect_arr_on[0]) == 0);
	kk_jump_label_get_stats(&st);
	DIALECT_CHECK(st.keys > 0);
	DIALECT_CHECK(kk_jump_label_strerror() != 0 && kk_jump_label_method() != 0 &&
		      kk_jump_label_sync_method() != 0);
	return 0;
}

/* A key kkctl may switch: exported by the branch macro, by its own name
 * (an array element), and the key of a deferred key; a write switches one. */
static int dialect_export(void)
{
	static const char on[] = "dialect_off_ro on\n";
	char *reply = 0;

	DIALECT_CHECK(kk_static_branch_export(&dialect_off_ro, 0) == 0);
	DIALECT_CHECK(kk_static_branch_export(&dialect_arr_ro[1], 0) == 0);
	DIALECT_CHECK(kk_static_key_export(&dialect_def_on.key.key, "dialect.def_on") == 0);
	DIALECT_CHECK(kk_control_write("static_keys", on, sizeof(on) - 1, &reply) == 0);
	free(reply);
	DIALECT_CHECK(static_key_enabled(&dialect_off_ro));
	DIALECT_CHECK(static_branch_disable(&dialect_off_ro) == 0);
	DIALECT_CHECK(kk_static_branch_unexport(&dialect_off_ro) == 0);
	DIALECT_CHECK(kk_static_branch_unexport(&dialect_arr_ro[1]) == 0);
	DIALECT_CHECK(kk_static_key_unexport(&dialect_def_on.key.key) == 0);
	return 0;
}

static int dialect_deferred(void)
{
	DIALECT_CHECK(site_maybe() == (1 | 8));
	DIALECT_CHECK(static_branch_deferred_inc(&dialect_def_off) == 0);
	DIALECT_CHECK(site_maybe() == (1 | 4 | 8));
	DIALECT_CHECK(static_branch_slow_dec_deferred(&dialect_def_off) == 0);
	static_key_deferred_flush(&dialect_def_off);
	DIALECT_CHECK(site_maybe() == (1 | 8));

	jump_label_rate_limit(&dialect_rl, 1);
	DIALECT_CHECK(static_key_slow_inc(&dialect_rl.key) == 0);
	DIALECT_CHECK(static_key_slow_dec_deferred(&dialect_rl) == 0);
	static_key_deferred_flush(&dialect_rl);
	DIALECT_CHECK(!static_key_enabled(&dialect_rl.key));
	return 0;
}

int dialect_jump_label(void)
{
	DIALECT_CHECK(site_off() == 0);
	DIALECT_CHECK(site_on() == 1);
	DIALECT_CHECK(site_matrix() == (2 | 4));
	DIALECT_CHECK(site_old() == 2);
	DIALECT_CHECK(!static_key_enabled(&dialect_off));
	DIALECT_CHECK(static_key_enabled(&dialect_on));
#ifndef KK_NO_JUMP_LABEL
	/* site_off, site_on, the two default sites of site_matrix and site_old,
	 * and two of site_maybe are NOPs while their keys have their defaults */
	DIALECT_CHECK(nop_sites() >= 8);
#endif
	DIALECT_CHECK(static_branch_enable(&dialect_off) == 0);
	DIALECT_CHECK(site_off() == 1);
	DIALECT_CHECK(static_key_enabled(&dialect_off));
	DIALECT_CHECK(static_branch_disable(&dialect_on) == 0);
	DIALECT_CHECK(site_on() == 0);
	DIALECT_CHECK(static_branch_disable(&dialect_off) == 0);
	DIALECT_CHECK(site_off() == 0);
	DIALECT_CHECK(static_branch_enable(&dialect_on) == 0);
	DIALECT_CHECK(site_on() == 1);
	if (dialect_key_values() || dialect_refcounts() || dialect_queued() || dialect_export() ||
	    dialect_deferred())
		return 1;
	return 0;
}
