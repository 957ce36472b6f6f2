// SPDX-License-Identifier: MIT
/*
 * One program for the unusual links (test/scripts/links_*.sh build it
 * -static, -static-pie, -flto against the shared library and the archive,
 * -fvisibility=hidden, and with the headers included under
 * "#pragma GCC visibility push(hidden)" (-DLINKS_PRAGMA_HIDDEN)).
 * Exit 0 only if every facility behaved:
 *  - a static key flips its site both ways;
 *  - pr_debug is silent until a query enables it, then prints;
 *  - debug objects report an active object freed, and the library's own key
 *    (declared in the header) is the one the program sees;
 *  - WARN prints its message and a non-empty call trace;
 *  - panic in a child prints its message and a call trace and exits with
 *    the panic status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef LINKS_PRAGMA_HIDDEN
#pragma GCC visibility push(hidden)
#endif
#include <kernelkit/jump_label.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/debugobjects.h>
#include <kernelkit/panic.h>
#ifdef LINKS_PRAGMA_HIDDEN
#pragma GCC visibility pop
#endif

#define CHECK(cond) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "links: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		exit(1);							\
	}									\
} while (0)

DEFINE_STATIC_KEY_FALSE(links_key);

static int __attribute__((__noinline__)) site(void)
{
	if (static_branch_unlikely(&links_key))
		return 1;
	return 0;
}

static char dbg[256];
static int dbg_lines;

static void sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	(void)desc;
	(void)arg;
	if (len >= sizeof(dbg))
		len = sizeof(dbg) - 1;
	memcpy(dbg, msg, len);
	dbg[len] = 0;
	dbg_lines++;
}

static void __attribute__((__noinline__)) links_say(int n)
{
	pr_debug("links says %d\n", n);
}

/*
 * -DLINKS_EARLY_WARN: a WARN from a constructor that runs before the C
 * library's own (in a -static program, before the unwind tables are
 * registered: unwinding there aborts).  It must warn, without a trace.
 */
static int early;
#ifdef LINKS_EARLY_WARN
__attribute__((__constructor__(101))) static void early_warn(void)
{
	early = WARN_ON(1) ? 1 : 0;
}
#endif

static int odebug_reports;

static void printer(const char *text, void *arg)
{
	(void)arg;
	if (strstr(text, "ODEBUG: free active") && strstr(text, "links_obj"))
		odebug_reports++;
}

/* Run @fn with stderr going to a file; return what it wrote (static buffer). */
static const char *capture_stderr(void (*fn)(void))
{
	static char out[8192];
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	CHECK(f && saved >= 0);
	fflush(stderr);
	CHECK(dup2(fileno(f), 2) == 2);
	fn();
	fflush(stderr);
	CHECK(dup2(saved, 2) == 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	fclose(f);
	return out;
}

static void do_warn(void)
{
	CHECK(WARN(1, "links warn %d", 42));
}

/* A call trace with at least one frame after "Call Trace:". */
static int has_trace(const char *text)
{
	const char *t = strstr(text, "Call Trace:\n");

	if (!t)
		return 0;
	t += strlen("Call Trace:\n");
	return *t && strncmp(t, "---[", 4) != 0 && strncmp(t, "kernelkit:", 10) != 0;
}

static void check_panic(void)
{
	char out[8192];
	size_t len = 0;
	ssize_t n;
	int p[2], status;
	pid_t pid;

	CHECK(pipe(p) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		kk_panic_set_timeout(-1);	/* restart now: exit with the panic status */
		panic("links panic %d", 7);
	}
	close(p[1]);
	while (len < sizeof(out) - 1 && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = 0;
	close(p[0]);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == KK_PANIC_EXIT_STATUS_DEFAULT);
	CHECK(strstr(out, "panic - not syncing: links panic 7"));
	if (!has_trace(out)) {
		fprintf(stderr, "%s", out);
		CHECK(!"panic printed a call trace");
	}
}

int main(void)
{
	struct debug_obj_descr descr;
	const char *w;
	int obj;

	/* static keys */
	CHECK(site() == 0);
	CHECK(static_branch_enable(&links_key) == 0);
	CHECK(site() == 1);
	CHECK(static_branch_disable(&links_key) == 0);
	CHECK(site() == 0);

	/* pr_debug */
	kk_dyndbg_set_sink(sink, NULL);
	links_say(1);
	CHECK(dbg_lines == 0);
	CHECK(dynamic_debug_exec_queries("func links_say +p", NULL) >= 1);
	links_say(2);
	CHECK(dbg_lines == 1 && strstr(dbg, "links says 2"));
	kk_dyndbg_set_sink(NULL, NULL);

	/* debug objects */
	memset(&descr, 0, sizeof(descr));
	descr.name = "links_obj";
	kk_debug_objects_set_printer(printer, NULL);
	CHECK(!static_key_enabled(&kk_debug_objects_key));
	CHECK(kk_debug_objects_enable() == 0);
	CHECK(static_key_enabled(&kk_debug_objects_key));
	debug_object_init(&obj, &descr);
	CHECK(debug_object_activate(&obj, &descr) == 0);
	debug_object_free(&obj, &descr);
	CHECK(odebug_reports == 1);
	CHECK(kk_debug_objects_disable() == 0);
	CHECK(!static_key_enabled(&kk_debug_objects_key));
	kk_debug_objects_set_printer(NULL, NULL);

	/* WARN and panic */
	w = capture_stderr(do_warn);
	CHECK(strstr(w, "links warn 42"));
	if (!has_trace(w)) {
		fprintf(stderr, "%s", w);
		CHECK(!"WARN printed a call trace");
	}
	CHECK(kk_warn_count() == 1u + (unsigned)early);
	check_panic();
	printf("links: ok\n");
	return 0;
}
