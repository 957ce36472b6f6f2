// SPDX-License-Identifier: MIT
/*
 * Flips its keys when told to, after test/scripts/text_poke_swap_fallback.sh
 * has replaced the files its text came from (rm, rename over, bind mount):
 * the page swap and the remap write method must then build their copies in
 * anonymous memory, never from whatever file now has the old name.
 *
 *   text_poke_swap_prog [LIB]   LIB: a copy of bench-mods/libjump_label_mod<N>.so
 *                               (about 2000 sites on as many keys) to dlopen
 *
 * Prints "ready PID" once LIB is loaded, then reads commands on stdin, one a
 * line, and exits 0 at EOF:
 *   flip    set every key to the next round's pattern (the program's keys one
 *           at a time, LIB's in one queued batch), run every site, and print
 *           "ok ROUND METHOD SYNC" (kk_jump_label_method(), _sync_method())
 *           or "FAIL: ..." lines then "done".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

#define NKEYS	4
#define ALL	0xffffu

DEFINE_STATIC_KEY_FALSE(fk0);
DEFINE_STATIC_KEY_FALSE(fk1);
DEFINE_STATIC_KEY_TRUE(tk0);
DEFINE_STATIC_KEY_TRUE(tk1);

/* 16 sites of one key in one function: bit i = the branch site i took. */
#define S(k, kind, i)	m |= (uint32_t)(kind(&k) ? 1u : 0u) << (i);
#define S4(k, i)	S(k, static_branch_likely, i) S(k, static_branch_unlikely, i + 1) \
			S(k, static_branch_unlikely, i + 2) S(k, static_branch_likely, i + 3)
#define SITES(k)								\
static __attribute__((noinline)) uint32_t k##_sites(void)			\
{ uint32_t m = 0; S4(k, 0) S4(k, 4) S4(k, 8) S4(k, 12) return m; }

SITES(fk0) SITES(fk1) SITES(tk0) SITES(tk1)

static const struct {
	const char *name;
	struct static_key *key;
	uint32_t (*sites)(void);
} keys[NKEYS] = {
	{ "fk0", &fk0.key, fk0_sites }, { "fk1", &fk1.key, fk1_sites },
	{ "tk0", &tk0.key, tk0_sites }, { "tk1", &tk1.key, tk1_sites },
};

static struct static_key_false *lib_keys;
static size_t lib_n;
static long (*lib_run)(void);
static int failed;

static void fail(const char *what, const char *name, long got, long want)
{
	printf("FAIL: %s %s: got %#lx, want %#lx\n", what, name, got, want);
	failed = 1;
}

/* Round @r: key k of the program on when k + r is odd; key i of LIB when
 * i + r is a multiple of 3 (most keys change every round). */
static void flip(int r)
{
	long want_lib = 0;

	for (int k = 0; k < NKEYS; k++) {
		int on = (k + r) & 1;
		int ret = on ? static_key_enable(keys[k].key) : static_key_disable(keys[k].key);

		if (ret)
			printf("FAIL: %s %s: %d: %s\n", on ? "enable" : "disable", keys[k].name, ret,
			       kk_jump_label_strerror());
		failed |= ret != 0;
	}
	for (size_t i = 0; i < lib_n; i++) {
		int on = (i + (size_t)r) % 3 == 0;
		int ret = on ? static_key_enable_queued(&lib_keys[i].key)
			     : static_key_disable_queued(&lib_keys[i].key);

		want_lib += on;
		if (ret) {
			printf("FAIL: queue key %zu of LIB: %d\n", i, ret);
			failed = 1;
		}
	}
	if (lib_n && static_key_apply_queued()) {
		printf("FAIL: apply_queued: %s\n", kk_jump_label_strerror());
		failed = 1;
	}
	for (int k = 0; k < NKEYS; k++) {
		int on = (k + r) & 1;

		if (static_key_enabled(keys[k].key) != on)
			fail("key", keys[k].name, static_key_enabled(keys[k].key), on);
		if (keys[k].sites() != (on ? ALL : 0))
			fail("sites of", keys[k].name, (long)keys[k].sites(), on ? ALL : 0);
	}
	if (lib_n && lib_run() != want_lib)
		fail("enabled-branch count of", "LIB", lib_run(), want_lib);
}

int main(int argc, char **argv)
{
	char line[64];
	int r = 0;

	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		struct static_key_false *(*get)(size_t *);

		if (!h || !(*(void **)&get = dlsym(h, "jump_label_mod_keys")) ||
		    !(*(void **)&lib_run = dlsym(h, "jump_label_mod_run"))) {
			fprintf(stderr, "text_poke_swap_prog: %s: %s\n", argv[1], dlerror());
			return 2;
		}
		lib_keys = get(&lib_n);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (strcmp(line, "flip\n")) {
			printf("FAIL: unknown command %s", line);
			failed = 1;
		} else {
			flip(++r);
			if (!failed)
				printf("ok %d %s %s\n", r, kk_jump_label_method(),
				       kk_jump_label_sync_method());
		}
		printf("done\n");
	}
	return failed;
}
