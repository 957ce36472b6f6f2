// SPDX-License-Identifier: MIT
/*
 * Dynamic debug, in the shape of the kernel's lib/test_dynamic_debug.c: one
 * classmap of each type with a parameter over it (module_param_cb() with
 * param_ops_dyndbg_classes), a pr_debug site per class, and checks of what
 * prints after each parameter write.  Also: a DEBUG module's sites start
 * enabled, KBUILD_MODNAME is the module, a hex dump's format is its prefix,
 * and the listing shows a file's sites by ascending line.
 */
#define pr_fmt(fmt) "test_dd: " fmt

#include <linux/module.h>
#include <linux/dynamic_debug.h>
#include <kernelkit/control.h>

/* ---- what printed ------------------------------------------------------- */

static char out[16384];
static size_t out_len;
static int out_n;

static void sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	if (out_len + len < sizeof(out)) {
		memcpy(out + out_len, msg, len);
		out_len += len;
		out[out_len] = '\0';
	}
	out_n++;
}

static void out_reset(void)
{
	out_len = 0;
	out[0] = '\0';
	out_n = 0;
}

static int failures;

#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		pr_err("%s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		pr_cont(__VA_ARGS__);						\
		pr_cont("\n");							\
		failures++;							\
	}									\
} while (0)

/* ---- classmaps, one of each type, and their parameters ----------------- */

/* disjoint bits, as drm.debug */
enum cat_disjoint_bits {
	D2_CORE = 0, D2_DRIVER, D2_KMS, D2_PRIME, D2_ATOMIC,
	D2_VBL, D2_STATE, D2_LEASE, D2_DP, D2_DRMRES
};
DECLARE_DYNDBG_CLASSMAP(map_disjoint_bits, DD_CLASS_TYPE_DISJOINT_BITS, 0,
			"D2_CORE", "D2_DRIVER", "D2_KMS", "D2_PRIME", "D2_ATOMIC",
			"D2_VBL", "D2_STATE", "D2_LEASE", "D2_DP", "D2_DRMRES");

/* disjoint names */
enum cat_disjoint_names { LOW = 10, MID, HI };
DECLARE_DYNDBG_CLASSMAP(map_disjoint_names, DD_CLASS_TYPE_DISJOINT_NAMES, 10,
			"LOW", "MID", "HI");

/* numeric verbosity: V2 > V1 */
enum cat_level_num { V0 = 14, V1, V2, V3, V4, V5, V6, V7 };
DECLARE_DYNDBG_CLASSMAP(map_level_num, DD_CLASS_TYPE_LEVEL_NUM, 14,
			"V0", "V1", "V2", "V3", "V4", "V5", "V6", "V7");

/* symbolic verbosity */
enum cat_level_names { L0 = 22, L1, L2, L3, L4, L5, L6, L7 };
DECLARE_DYNDBG_CLASSMAP(map_level_names, DD_CLASS_TYPE_LEVEL_NAMES, 22,
			"L0", "L1", "L2", "L3", "L4", "L5", "L6", "L7");

/* a parameter over each map, as the kernel module wraps them */
#define DD_SYS_WRAP(_model, _flags)						\
	static unsigned long bits_##_model;					\
	static struct ddebug_class_param _flags##_##_model = {			\
		.bits = &bits_##_model,						\
		.flags = #_flags,						\
		.map = &map_##_model,						\
	};									\
	module_param_cb(_flags##_##_model, &param_ops_dyndbg_classes,		\
			&_flags##_##_model, 0600)

DD_SYS_WRAP(disjoint_bits, p);
DD_SYS_WRAP(disjoint_names, p);
DD_SYS_WRAP(level_num, p);
DD_SYS_WRAP(level_names, p);

/* a plain parameter, through module_param() */
static int verbose_param;
module_param_named(verbose, verbose_param, int, 0600);
MODULE_PARM_DESC(verbose, "a plain int");

/* ---- the sites ----------------------------------------------------------- */

#define prdbg(SYM) __pr_debug_cls(SYM, #SYM " msg\n")

static void do_cats(void)
{
	pr_debug("doing categories\n");
	prdbg(LOW);
	prdbg(MID);
	prdbg(HI);
	prdbg(D2_CORE);
	prdbg(D2_DRIVER);
	prdbg(D2_KMS);
	prdbg(D2_PRIME);
	prdbg(D2_ATOMIC);
	prdbg(D2_VBL);
	prdbg(D2_STATE);
	prdbg(D2_LEASE);
	prdbg(D2_DP);
	prdbg(D2_DRMRES);
}

static void do_levels(void)
{
	pr_debug("doing levels\n");
	prdbg(V1);
	prdbg(V2);
	prdbg(V3);
	prdbg(V4);
	prdbg(V5);
	prdbg(V6);
	prdbg(V7);
	prdbg(L1);
	prdbg(L2);
	prdbg(L3);
	prdbg(L4);
	prdbg(L5);
	prdbg(L6);
	prdbg(L7);
}

static void do_hexdump(void)
{
	static const unsigned char data[] = "kernel";

	print_hex_dump_debug("tdd-hex: ", DUMP_PREFIX_OFFSET, 16, 1, data, 6, true);
}

static void do_prints(void)
{
	out_reset();
	do_cats();
	do_levels();
}

extern void dynamic_debug_debug_hello(int n);

/* ---- helpers ------------------------------------------------------------- */

static int param_write(const char *name, const char *val)
{
	char path[128], *reply = NULL;
	int ret;

	snprintf(path, sizeof(path), "dynamic_debug/params/" KBUILD_MODNAME ".%s", name);
	ret = kk_control_write(path, val, strlen(val), &reply);
	free(reply);
	return ret;
}

static void param_read(const char *name, char *buf, size_t len)
{
	char path[128], *t = NULL;
	size_t n;

	snprintf(path, sizeof(path), "dynamic_debug/params/" KBUILD_MODNAME ".%s", name);
	buf[0] = '\0';
	if (!kk_control_read(path, &t, &n))
		snprintf(buf, len, "%s", t);
	free(t);
}

static int printed(const char *sym)
{
	char needle[64];

	snprintf(needle, sizeof(needle), "test_dd: %s msg\n", sym);
	return strstr(out, needle) != NULL;
}

/* Each name in @on printed and each in @off did not. */
static void expect(const char *const *on, const char *const *off, const char *what)
{
	do_prints();
	for (; on && *on; on++)
		CHECK(printed(*on), "%s: %s did not print; got:\n%s", what, *on, out);
	for (; off && *off; off++)
		CHECK(!printed(*off), "%s: %s printed", what, *off);
}

/* ---- the tests ----------------------------------------------------------- */

static void test_disjoint_bits(void)
{
	static const char *const on1[] = { "D2_CORE", "D2_KMS", NULL };
	static const char *const off1[] = { "D2_DRIVER", "D2_PRIME", "D2_DRMRES", "LOW", "V1", NULL };
	static const char *const off2[] = { "D2_CORE", "D2_KMS", NULL };
	char v[32];

	CHECK(param_write("p_disjoint_bits", "0x5") == 0, "write 0x5");
	expect(on1, off1, "bits 0x5");
	param_read("p_disjoint_bits", v, sizeof(v));
	CHECK(!strcmp(v, "0x5\n"), "read back %s", v);
	/* names are not numbers */
	CHECK(param_write("p_disjoint_bits", "+D2_CORE") == -EINVAL, "a name to a BITS param");
	CHECK(param_write("p_disjoint_bits", "0") == 0, "write 0");
	expect(NULL, off2, "bits 0");
}

static void test_disjoint_names(void)
{
	static const char *const on1[] = { "MID", "HI", NULL };
	static const char *const off1[] = { "LOW", "D2_CORE", NULL };
	static const char *const on2[] = { "LOW", "HI", NULL };
	static const char *const off2[] = { "MID", NULL };
	char v[32];

	CHECK(param_write("p_disjoint_names", "+MID,+HI") == 0, "+MID,+HI");
	expect(on1, off1, "+MID,+HI");
	param_read("p_disjoint_names", v, sizeof(v));
	CHECK(!strcmp(v, "0x6\n"), "read back %s", v);
	CHECK(param_write("p_disjoint_names", "-MID,LOW") == 0, "-MID,LOW");
	expect(on2, off2, "-MID,LOW");
	/* an unknown name changes nothing */
	CHECK(param_write("p_disjoint_names", "-LOW,NOPE") == -EINVAL, "unknown name");
	expect(on2, off2, "after a refused write");
	CHECK(param_write("p_disjoint_names", "-LOW,-HI") == 0, "all off");
	expect(NULL, on2, "all off");
}

static void test_level_num(void)
{
	static const char *const on1[] = { "V1", "V2", "V3", NULL };
	static const char *const off1[] = { "V4", "V7", "L1", NULL };
	char v[32];

	/* level N enables the first N classes: V0..V2 */
	CHECK(param_write("p_level_num", "3") == 0, "level 3");
	expect(NULL, off1, "level 3");
	CHECK(printed("V1") && printed("V2") && !printed("V3"), "level 3: V1 V2 on, V3 off:\n%s",
	      out);
	param_read("p_level_num", v, sizeof(v));
	CHECK(!strcmp(v, "3\n"), "read back %s", v);
	CHECK(param_write("p_level_num", "4") == 0, "level 4");
	expect(on1, NULL, "level 4");
	CHECK(param_write("p_level_num", "0") == 0, "level 0");
	expect(NULL, on1, "level 0");
}

static void test_level_names(void)
{
#ifndef TEST_DYNAMIC_DEBUG_WRONG
	static const char *const on1[] = { "L1", "L2", "L3", NULL };
	static const char *const off1[] = { "L4", "L7", "V1", NULL };
#else	/* test/scripts/dynamic_debug_conformance_wrong.sh: L3 must not enable L4 */
	static const char *const on1[] = { "L1", "L2", "L3", "L4", NULL };
	static const char *const off1[] = { "L7", "V1", NULL };
#endif
	static const char *const off2[] = { "L3", "L4", NULL };
	char v[32];

	/* L3: L0..L3 */
	CHECK(param_write("p_level_names", "L3") == 0, "L3");
	expect(on1, off1, "L3");
	param_read("p_level_names", v, sizeof(v));
	CHECK(!strcmp(v, "4\n"), "read back %s", v);
	/* -L3: L0..L2 */
	CHECK(param_write("p_level_names", "-L3") == 0, "-L3");
	expect(NULL, off2, "-L3");
	CHECK(printed("L1") && printed("L2"), "-L3 keeps L1, L2:\n%s", out);
	/* The file takes back the level it prints (kernelkit's: the kernel's set()
	 * takes names only); a level beyond the map is refused. */
	CHECK(param_write("p_level_names", "3") == 0, "the number it prints, to a NAMES param");
	param_read("p_level_names", v, sizeof(v));
	CHECK(!strcmp(v, "3\n"), "read back %s", v);
	CHECK(param_write("p_level_names", "99") == -EINVAL, "a level beyond the map");
	CHECK(param_write("p_level_names", "-L0") == 0, "-L0");
	expect(NULL, on1, "-L0");
}

static void test_plain_param(void)
{
	char v[32];

	CHECK(param_write("verbose", "7") == 0, "verbose=7");
	CHECK(verbose_param == 7, "verbose is %d", verbose_param);
	param_read("verbose", v, sizeof(v));
	CHECK(!strcmp(v, "7\n"), "read back %s", v);
}

/* The sites of this file, by line, in listing order. */
static void test_listing(void)
{
	char *l = NULL, *p;
	size_t n;
	unsigned int last = 0, count = 0;
	int ascending = 1, hex = 0;

	CHECK(kk_control_read("dynamic_debug/control", &l, &n) == 0, "read control");
	if (!l)
		return;
	for (p = strtok(l, "\n"); p; p = strtok(NULL, "\n")) {
		const char *colon = strstr(p, "test_dynamic_debug.c:");
		unsigned int line;

		if (!colon)
			continue;
		CHECK(strstr(p, " [test_dynamic_debug]") != NULL, "module: %s", p);
		if (strstr(p, "=_ \"tdd-hex: \""))
			hex = 1;
		line = (unsigned int)strtoul(colon + strlen("test_dynamic_debug.c:"), NULL, 10);
		if (line < last)
			ascending = 0;
		last = line;
		count++;
	}
	CHECK(count == 31, "%u sites of this file listed", count);
	CHECK(ascending, "sites not in ascending line order");
	CHECK(hex, "no hex-dump site with the prefix as its format");
	free(l);
}

static void test_modname_and_hexdump(void)
{
	CHECK(dynamic_debug_exec_queries("module test_dynamic_debug format tdd-hex +p", NULL) == 1,
	      "one hex-dump site in module test_dynamic_debug");
	out_reset();
	do_hexdump();
	CHECK(strstr(out, "tdd-hex: 00000000: 6b 65 72 6e 65 6c") != NULL, "dump: %s", out);
	CHECK(dynamic_debug_exec_queries("format tdd-hex -p", "test_dynamic_debug") == 1, "-p");
}

static void test_debug_module(void)
{
	out_reset();
	dynamic_debug_debug_hello(1);
	CHECK(strstr(out, "dynamic_debug_debug hello 1") != NULL, "a DEBUG module's site is on: %s", out);
	CHECK(dynamic_debug_exec_queries("module dynamic_debug_debug -p", NULL) == 1, "its module is dynamic_debug_debug");
	out_reset();
	dynamic_debug_debug_hello(2);
	CHECK(out_n == 0, "off after -p: %s", out);
}

static int __init test_dynamic_debug_init(void)
{
	kk_dyndbg_set_sink(sink, NULL);
	do_prints();
	CHECK(out_n == 0, "sites start disabled without DEBUG: %s", out);
	test_listing();
	test_disjoint_bits();
	test_disjoint_names();
	test_level_num();
	test_level_names();
	test_plain_param();
	test_modname_and_hexdump();
	test_debug_module();
	kk_dyndbg_set_sink(NULL, NULL);
	pr_info("%d failures\n", failures);
	return failures ? -EINVAL : 0;
}

static void __exit test_dynamic_debug_exit(void)
{
	pr_debug("exited\n");
}

module_init(test_dynamic_debug_init);
module_exit(test_dynamic_debug_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("dynamic debug classmaps and parameters, as the kernel's test module");
