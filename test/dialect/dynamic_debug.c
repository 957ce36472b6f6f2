/* SPDX-License-Identifier: MIT */
/*
 * pr_debug() and every other macro family of <kernelkit/dynamic_debug.h> and
 * <kernelkit/ratelimit.h> from every dialect: off by default, on after a
 * query, with the output checked through the sink.
 */
#include <string.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/ratelimit.h>
#include "dialect.h"

static char last[256];
static char all[4096];
static int lines;

static void sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	size_t n = strlen(all);

	(void)desc;
	(void)arg;
	if (n + len < sizeof(all)) {
		memcpy(all + n, msg, len);
		all[n + len] = 0;
	}
	if (len >= sizeof(last))
		len = sizeof(last) - 1;
	memcpy(last, msg, len);
	last[len] = 0;
	lines++;
}

static int on(const char *q)
{
	return dynamic_debug_exec_queries(q, NULL);
}

static int seen(const char *s)
{
	return strstr(all, s) != NULL;
}

static void reset(void)
{
	all[0] = 0;
	last[0] = 0;
	lines = 0;
}

/* classes 0..2 of this program, and a parameter over them */
DECLARE_DYNDBG_CLASSMAP(dialect_map, DD_CLASS_TYPE_DISJOINT_NAMES, 0, "DI_A", "DI_B", "DI_C");
static unsigned long dialect_bits;
static struct ddebug_class_param dialect_dcp = { { &dialect_bits }, "p", &dialect_map };
static const struct kernel_param dialect_kp = {
	"dialect_classes", 0, &param_ops_dyndbg_classes, 0600, -1, 0, &dialect_dcp
};

static DEFINE_RATELIMIT_STATE(dialect_rs, 1000, 2);

static void cb_desc(struct _ddebug *d, int v)
{
	__dynamic_pr_debug(d, "cb_desc %d\n", v);
}

static void cb_desc0(struct _ddebug *d)
{
	__dynamic_pr_debug(d, "cb_desc0\n");
}

static int nodesc_calls;

static void cb_nodesc0(void)
{
	nodesc_calls++;
}

static void cb_nodesc(int v)
{
	nodesc_calls += v;
}

static void __attribute__((__noinline__)) say(int n)
{
	pr_debug("dialect says %d\n", n);
	pr_debug("dialect no args\n");
}

static void __attribute__((__noinline__)) families(int n)
{
	static const unsigned char bytes[4] = { 0xde, 0xad, 0xbe, 0xef };
	const char *var_prefix = n > 0 ? "var: " : "VAR: ";

	dynamic_pr_debug("fam dynamic %d\n", n);
	dynamic_pr_debug("fam dynamic plain\n");
	pr_debug_ratelimited("fam ratelimited %d\n", n);
	pr_debug_ratelimited("fam ratelimited plain\n");
	pr_debug_cls(0, "fam cls A %d\n", n);
	pr_debug_cls(1, "fam cls B\n");
	__pr_debug_cls(2, "fam cls C %d\n", n);
	dynamic_pr_debug_cls(2, "fam dyncls C\n");
	print_hex_dump_debug("fam hex: ", DUMP_PREFIX_OFFSET, 16, 1, bytes, sizeof(bytes), 1);
	print_hex_dump_bytes("fam bytes: ", DUMP_PREFIX_NONE, bytes, sizeof(bytes));
	dynamic_hex_dump(var_prefix, DUMP_PREFIX_NONE, 16, 4, bytes, sizeof(bytes), 0);
	_dynamic_func_call("fam func", cb_desc, n);
	_dynamic_func_call("fam func0", cb_desc0);
	_dynamic_func_call_no_desc("fam nodesc", cb_nodesc, n);
	_dynamic_func_call_no_desc("fam nodesc0", cb_nodesc0);
	_dynamic_func_call_cls(1, "fam clsfunc", cb_desc, n);
	_dynamic_func_call_cls_no_desc(1, "fam clsnodesc0", cb_nodesc0);
	__dynamic_func_call(dialect_site, "fam explicit", cb_desc, n + 100);
	{
		DEFINE_DYNAMIC_DEBUG_METADATA(dialect_meta, "fam meta");
		if (DYNAMIC_DEBUG_BRANCH(dialect_meta))
			__dynamic_pr_debug(&dialect_meta, "fam meta %d\n", n);
	}
}

#ifdef __cplusplus
/* A template's sites: one per instantiation, each registered (g++ once lost them). */
template <class T> static T dynamic_debug_twice(T x)
{
	pr_debug("dialect twice %d\n", (int)x);
	return 2 * x;
}

static int cxx_template(void)
{
	reset();
	DIALECT_CHECK(dynamic_debug_twice(1) + (int)dynamic_debug_twice(2L) == 6);
	DIALECT_CHECK(lines == 0);
	DIALECT_CHECK(on("func dynamic_debug_twice +p") == 2);
	DIALECT_CHECK(dynamic_debug_twice(3) + (int)dynamic_debug_twice(4L) == 14);
	DIALECT_CHECK(seen("dialect twice 3\n") && seen("dialect twice 4\n"));
	DIALECT_CHECK(on("func dynamic_debug_twice -p") == 2);
	return 0;
}
#else
static int cxx_template(void)
{
	return 0;
}
#endif

int dialect_dynamic_debug(void)
{
	char buf[KK_PARAM_BUFSIZE];
	int i, passed = 0;

	DIALECT_CHECK(_DPRINTK_FLAGS_DEFAULT == 0);
	DIALECT_CHECK(DD_CLASS_TYPE_LEVEL_NAMES == 3);
	kk_dyndbg_set_sink(sink, NULL);
	reset();
	say(1);
	families(1);
	DIALECT_CHECK(lines == 0);
	DIALECT_CHECK(nodesc_calls == 0);

	DIALECT_CHECK(on("func say +p") == 2);
	say(2);
	DIALECT_CHECK(lines == 2);
	DIALECT_CHECK(seen("dialect says 2\n") && seen("dialect no args\n"));
	DIALECT_CHECK(on("func say -p") == 2);
	say(3);
	DIALECT_CHECK(lines == 2);

	/* every family, with the class sites left off */
	reset();
	DIALECT_CHECK(on("func families +p") == 13);
	families(5);
	DIALECT_CHECK(seen("fam dynamic 5\n") && seen("fam dynamic plain\n"));
	DIALECT_CHECK(seen("fam ratelimited 5\n") && seen("fam ratelimited plain\n"));
	DIALECT_CHECK(seen("fam hex: 00000000: de ad be ef  "));	/* then padding, "....\n" */
	DIALECT_CHECK(seen("fam bytes: de ad be ef  "));
	DIALECT_CHECK(seen("var: deadbeef\n") || seen("var: efbeadde\n"));
	DIALECT_CHECK(seen("cb_desc 5\n") && seen("cb_desc0\n") && seen("cb_desc 105\n"));
	DIALECT_CHECK(seen("fam meta 5\n"));
	DIALECT_CHECK(nodesc_calls == 6);
	DIALECT_CHECK(!seen("fam cls"));
	/* the hex dumps' formats are their prefixes ("hexdump" for a variable) */
	DIALECT_CHECK(on("format \"fam hex: \" -p") == 1);
	DIALECT_CHECK(on("func families format hexdump -p") == 1);
	DIALECT_CHECK(on("func families -p") == 13);

	/* classes through the kernel's parameter ops */
	reset();
	DIALECT_CHECK(param_set_dyndbg_classes("+DI_A,+DI_C", &dialect_kp) == 0);
	DIALECT_CHECK(dialect_bits == 5);
	DIALECT_CHECK(param_get_dyndbg_classes(buf, &dialect_kp) == 4);
	DIALECT_CHECK(strcmp(buf, "0x5\n") == 0);
	families(6);
	DIALECT_CHECK(seen("fam cls A 6\n") && seen("fam cls C 6\n") && seen("fam dyncls C\n"));
	DIALECT_CHECK(!seen("fam cls B") && !seen("cb_desc 6\n"));
	DIALECT_CHECK(param_ops_dyndbg_classes.set("-DI_A,-DI_C", &dialect_kp) == 0);
	reset();
	families(7);
	DIALECT_CHECK(lines == 0);

	/* ratelimit.h on its own */
	for (i = 0; i < 5; i++)
		passed += __ratelimit(&dialect_rs);
	DIALECT_CHECK(passed == 2);
	if (cxx_template())
		return 1;
	kk_dyndbg_set_sink(NULL, NULL);
	return 0;
}
