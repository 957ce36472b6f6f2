// SPDX-License-Identifier: MIT
/*
 * Every control file takes back what it printed (issue 12, item 6).
 *
 * The files are not listed here: the test asks the endpoint for its listing
 * ("list", as `kkctl ls` does), so a file a facility adds later is covered
 * without touching this test.  For each file:
 *  - readable and writable: read, write exactly that text back (must
 *    succeed), read again (must be identical);
 *  - readable only: a write of the read text fails with EACCES and a reply
 *    of one line that says so;
 *  - writable only (a command): nothing to read back; such a file must say
 *    so in one line when it is read.
 * The process loads every facility: pr_debug sites with a class, a
 * classmap parameter and a kernel_param (dynamic_debug/params/), a static
 * key, shazptr, debug objects, panic.
 */
#define KBUILD_MODNAME "rtmod"
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/debugobjects.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/panic.h>
#include <kernelkit/shazptr.h>

#include "kktest.h"

DECLARE_DYNDBG_CLASSMAP(rt_names, DD_CLASS_TYPE_DISJOINT_NAMES, 0, "RT_A", "RT_B");
static unsigned long rt_bits;
static struct ddebug_class_param rt_dcp = { .bits = &rt_bits, .flags = "p", .map = &rt_names };
static const struct kernel_param rt_kp = {
	.name = "classes", .ops = &param_ops_dyndbg_classes, .perm = 0600, .arg = &rt_dcp,
};

static DEFINE_STATIC_KEY_FALSE(rt_key);

/* Sites for the listing: plain, with a class, with odd characters. */
static void __attribute__((noinline)) sites(void)
{
	pr_debug("roundtrip plain %d\n", 1);
	pr_debug_cls(0, "roundtrip class a\n");
	pr_debug_cls(1, "roundtrip class b\n");
	pr_debug("roundtrip \"quoted\"\ttab\n");
	if (static_branch_unlikely(&rt_key))
		pr_debug("roundtrip key on\n");
}

/* More sites than one write of dynamic_debug/control takes (4096 bytes). */
#define RT_SITE(n)	pr_debug("roundtrip many " #n "\n")
#define RT_SITES10(n)	RT_SITE(n##0); RT_SITE(n##1); RT_SITE(n##2); RT_SITE(n##3); RT_SITE(n##4); \
			RT_SITE(n##5); RT_SITE(n##6); RT_SITE(n##7); RT_SITE(n##8); RT_SITE(n##9)
static void __attribute__((noinline)) many_sites(void)
{
	RT_SITES10(1); RT_SITES10(2); RT_SITES10(3); RT_SITES10(4); RT_SITES10(5);
	RT_SITES10(6); RT_SITES10(7); RT_SITES10(8);
}

/* ---- the endpoint's listing ------------------------------------------------------------ */

struct cfile {
	char name[KK_CONTROL_NAME_MAX];
	int readable, writable;
};

/* "list" on the socket: every file of this process, as kkctl sees them. */
static size_t list_files(struct cfile *f, size_t max)
{
	const char *addr = kk_control_socket_path();
	struct sockaddr_un sa;
	static char buf[65536];
	size_t n = 0, count = 0;
	ssize_t r;
	char *line, *save = NULL;
	int fd;

	cr_assert(addr && addr[0] == '@', "the endpoint is not running");
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path + 1, addr + 1, strlen(addr) - 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa,
			     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(addr))), 0);
	cr_assert_eq(send(fd, "list\n", 5, MSG_NOSIGNAL), 5);
	shutdown(fd, SHUT_WR);
	while (n < sizeof(buf) - 1 && (r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	cr_assert_eq(atoi(buf), 0, "list failed: %s", buf);
	/* After the status line: "<r|-><w|->\t<name>" per file. */
	for (line = strtok_r(strchr(buf, '\n') + 1, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *tab = strrchr(line, '\t');

		cr_assert(tab, "odd listing line '%s'", line);
		cr_assert_lt(count, max);
		snprintf(f[count].name, sizeof(f[count].name), "%s", tab + 1);
		f[count].readable = line[0] == 'r';
		f[count].writable = line[1] == 'w';
		count++;
	}
	return count;
}

static struct cfile files[256];
static size_t nfiles;

/* The endpoint running, the parameters registered, the sites listed. */
static void setup(void)
{
	sites();
	many_sites();
	cr_assert_eq(kk_control_start(), 0);
	cr_assert_eq(kk_dyndbg_register_param("rt_names", &rt_dcp), 0);
	cr_assert_eq(kk_module_param_register(KBUILD_MODNAME, &rt_kp), 0);
	nfiles = list_files(files, sizeof(files) / sizeof(files[0]));
}

static char *read_file(const char *name)
{
	char *text = NULL;
	size_t len = 0;
	int ret = kk_control_read(name, &text, &len);

	cr_assert_eq(ret, 0, "read %s: %s", name, strerror(-ret));
	cr_assert_eq(strlen(text), len, "read %s: NUL in the text", name);
	return text;
}

/* The reply to a refused write: one line that names the reason. */
static void assert_one_line(const char *name, const char *reply)
{
	const char *nl;

	cr_assert(reply && *reply, "%s: a refused write with no reply", name);
	cr_expect(strstr(reply, "read-only"), "%s: the reply does not say why: '%s'", name, reply);
	nl = strchr(reply, '\n');
	cr_assert(!nl || !nl[1], "%s: the reply is not one line: '%s'", name, reply);
}

/* ---- the walk ----------------------------------------------------------------------------- */

/*
 * Per-file exceptions, each with its reason.  None today: a quiet test
 * process moves no counter between two reads.  (A file whose counters move
 * on their own would be compared here with the moving fields masked.)
 */
static const struct { const char *name, *why; } exceptions[] = {
	{ NULL, NULL },
};

/*
 * Files whose reply is binary, not text: read, they give bytes with NULs
 * in them, so they are read as bytes here and only their refusal of a write
 * is checked (they are read-only).
 */
static const char *const binary[] = {
	"dynamic_debug/trace_pipe_raw",	/* frames (docs/tracing.md, "The raw stream") */
	NULL,
};

static bool is_binary(const char *name)
{
	for (size_t i = 0; binary[i]; i++)
		if (!strcmp(binary[i], name))
			return true;
	return false;
}

/* A binary file: it reads, and refuses a write in one line. */
static void check_binary(const char *name, bool writable)
{
	char *bytes = NULL, *reply = NULL;
	size_t len = 0;
	int ret = kk_control_read(name, &bytes, &len);

	cr_expect_eq(ret, 0, "read %s: %s", name, strerror(-ret));
	cr_expect_not(writable, "%s: a binary file is listed as writable", name);
	ret = kk_control_write(name, "x\n", 2, &reply);
	cr_expect_eq(ret, -EACCES, "%s: read-only, but the write gave %d", name, ret);
	assert_one_line(name, reply);
	free(reply);
	free(bytes);
}

static const char *exception(const char *name)
{
	for (size_t i = 0; exceptions[i].name; i++)
		if (!strcmp(exceptions[i].name, name))
			return exceptions[i].why;
	return NULL;
}

/*
 * Files whose writes are limited below what they can print, and so take
 * their text back in chunks of whole lines: dynamic_debug/control refuses a
 * write of 4096 bytes or more with E2BIG, as the kernel does, and each of its
 * lines stands alone (docs/dynamic_debug.md, "Writing the listing back").
 */
static const struct { const char *name; size_t limit; } chunked[] = {
	{ "dynamic_debug/control", 4096 },
	{ NULL, 0 },
};

/* Write @text to @name, in chunks of whole lines if the file asks for that. */
static int write_back(const char *name, const char *text, char **reply)
{
	size_t limit = 0, len = strlen(text);
	int ret;

	for (size_t i = 0; chunked[i].name; i++)
		if (!strcmp(chunked[i].name, name))
			limit = chunked[i].limit;
	if (!limit || len < limit)
		return kk_control_write(name, text, len, reply);
	/* Too large for one write: the file must say so, then take the chunks. */
	ret = kk_control_write(name, text, len, reply);
	cr_expect_eq(ret, -E2BIG, "%s: a write of %zu bytes gave %d", name, len, ret);
	free(*reply);
	*reply = NULL;
	for (const char *p = text; *p; ) {
		const char *end = p, *nl;

		while ((nl = strchr(end, '\n')) && (size_t)(nl + 1 - p) < limit)
			end = nl + 1;
		cr_assert_neq(end, p, "%s: a line of %zu bytes or more", name, limit);
		ret = kk_control_write(name, p, (size_t)(end - p), reply);
		if (ret)
			return ret;
		free(*reply);
		*reply = NULL;
		p = end;
	}
	return 0;
}

Test(control_roundtrip, the_listing_has_every_facility, .init = setup)
{
	static const char *const expect[] = {
		"panic", "static_keys", "dynamic_debug/control", "dynamic_debug/params/rt_names",
		"dynamic_debug/params/rtmod.classes", "shazptr/stats", "debug_objects/policy",
	};

	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		size_t j = 0;

		while (j < nfiles && strcmp(files[j].name, expect[i]))
			j++;
		cr_expect_lt(j, nfiles, "%s is not listed", expect[i]);
	}
	/* The walk below also covers a listing written back in chunks. */
	char *l = read_file("dynamic_debug/control");

	cr_expect_gt(strlen(l), 4096, "the listing is only %zu bytes", strlen(l));
	free(l);
}

Test(control_roundtrip, every_file_takes_back_what_it_printed, .init = setup)
{
	unsigned rw = 0;

	cr_assert_gt(nfiles, 0);
	for (size_t i = 0; i < nfiles; i++) {
		const char *name = files[i].name, *why = exception(name);
		char *before, *after, *reply = NULL;
		int ret;

		if (why) {
			cr_log_info("%s: skipped: %s", name, why);
			continue;
		}
		if (files[i].readable && is_binary(name)) {
			check_binary(name, files[i].writable);
			continue;
		}
		if (!files[i].readable) {
			/* A command: reading it says so, in one line. */
			ret = kk_control_read(name, NULL, NULL);
			cr_expect_eq(ret, -EACCES, "%s: write-only, but read gave %d", name, ret);
			continue;
		}
		before = read_file(name);
		ret = files[i].writable ? write_back(name, before, &reply) :
					  kk_control_write(name, before, strlen(before), &reply);
		if (!files[i].writable) {
			cr_expect_eq(ret, -EACCES, "%s: read-only, but the write gave %d", name, ret);
			assert_one_line(name, reply);
		} else {
			cr_expect_eq(ret, 0, "%s: writing back what it printed failed (%s): %s\n"
				     "--- the text ---\n%s", name, strerror(-ret), reply ? reply : "",
				     before);
			after = read_file(name);
			cr_expect_str_eq(after, before, "%s changed by writing back what it printed:\n"
					 "--- before ---\n%s--- after ---\n%s", name, before, after);
			free(after);
			rw++;
		}
		free(reply);
		free(before);
	}
	/* panic, dynamic_debug/{control,batched,all_or_nothing,params/x2},
	 * shazptr/{stats,skip...}, debug_objects/policy at least. */
	cr_expect_geq(rw, 9, "only %u read-write files", rw);
}

/* ---- a changed value, in the printed form, reads back ----------------------------------- */

/* Replace the line that starts with @key in @text by @line; malloc'ed. */
static char *replace_line(const char *text, const char *key, const char *line)
{
	const char *at = strstr(text, key), *end;
	char *out;

	cr_assert(at && (at == text || at[-1] == '\n'), "no line '%s' in:\n%s", key, text);
	end = strchr(at, '\n');
	end = end ? end + 1 : at + strlen(at);
	out = malloc(strlen(text) + strlen(line) + 2);
	cr_assert(out);
	sprintf(out, "%.*s%s\n%s", (int)(at - text), text, line, end);
	return out;
}

static void write_ok(const char *name, const char *text)
{
	char *reply = NULL;
	int ret = kk_control_write(name, text, strlen(text), &reply);

	cr_assert_eq(ret, 0, "%s: %s", name, reply ? reply : "");
	free(reply);
}

Test(control_roundtrip, panic_changed_in_printed_form, .init = setup)
{
	char *before = read_file("panic"), *mod, *after, *want, *want2;
	int old = kk_panic_get_timeout();

	mod = replace_line(before, "timeout:", "timeout: 5");
	write_ok("panic", mod);
	cr_expect_eq(kk_panic_get_timeout(), 5);
	after = read_file("panic");
	want = replace_line(before, "timeout:", "timeout: 5");
	cr_expect_str_eq(after, want);
	/* A status line with another value than the process has is refused, and
	 * changes nothing: the settings before it in the same write included. */
	free(mod);
	mod = replace_line(after, "panicked:", "panicked: 1");
	cr_expect_neq(kk_control_write("panic", mod, strlen(mod), NULL), 0);
	free(mod);
	want2 = replace_line(after, "timeout:", "timeout: 7");
	mod = replace_line(want2, "stop_signal:", "stop_signal: 0");
	cr_expect_neq(kk_control_write("panic", mod, strlen(mod), NULL), 0);
	cr_expect_eq(kk_panic_get_timeout(), 5);
	kk_panic_set_timeout(old);
	free(want2);
	free(mod);
	free(before);
	free(after);
	free(want);
}

Test(control_roundtrip, shazptr_stats_changed_in_printed_form, .init = setup)
{
	char *before = read_file("shazptr/stats"), *mod, *after;

	mod = replace_line(before, "skip_synchronize_self_scan ", "skip_synchronize_self_scan 1");
	write_ok("shazptr/stats", mod);
	after = read_file("shazptr/skip_synchronize_self_scan");
	cr_expect_str_eq(after, "1\n");
	free(after);
	after = read_file("shazptr/stats");
	cr_expect_str_eq(after, mod);
	write_ok("shazptr/stats", before);
	free(after);
	after = read_file("shazptr/skip_synchronize_self_scan");
	cr_expect_str_eq(after, "0\n");
	free(after);
	free(mod);
	free(before);
}

Test(control_roundtrip, dynamic_debug_listing_line_changed, .init = setup)
{
	char *list = read_file("dynamic_debug/control"), *line, *end, *after;
	char buf[512];

	line = strstr(list, "roundtrip plain");
	cr_assert(line);
	while (line > list && line[-1] != '\n')
		line--;
	end = strchr(line, '\n');
	snprintf(buf, sizeof(buf), "%.*s", (int)(end - line + 1), line);
	cr_assert(strstr(buf, " =_ "), "%s", buf);
	memcpy(strstr(buf, " =_ "), " =p ", 4);
	write_ok("dynamic_debug/control", buf);
	after = read_file("dynamic_debug/control");
	cr_expect(strstr(after, buf), "'%s' not in:\n%s", buf, after);
	free(after);
	after = NULL;
	cr_expect_eq(write_back("dynamic_debug/control", list, &after), 0, "%s", after);
	free(after);
	after = read_file("dynamic_debug/control");
	cr_expect_str_eq(after, list);
	free(after);
	free(list);
}

Test(control_roundtrip, dynamic_debug_names_param_takes_its_number, .init = setup)
{
	char *t, *reply = NULL;

	write_ok("dynamic_debug/params/rt_names", "0x2\n");
	t = read_file("dynamic_debug/params/rt_names");
	cr_expect_str_eq(t, "0x2\n");
	free(t);
	t = read_file("dynamic_debug/params/rtmod.classes");	/* the same bits */
	cr_expect_str_eq(t, "0x2\n");
	free(t);
	t = read_file("dynamic_debug/control");
	cr_expect(strstr(t, "=p \"roundtrip class b\\n\""), "%s", t);
	cr_expect(strstr(t, "=_ \"roundtrip class a\\n\""), "%s", t);
	free(t);
	/* A bit the map does not have is no value it could print. */
	cr_expect_eq(kk_control_write("dynamic_debug/params/rt_names", "0x4", 3, &reply), -EINVAL);
	cr_expect(reply && strchr(reply, '\n') && !strchr(reply, '\n')[1], "%s", reply);
	free(reply);
	write_ok("dynamic_debug/params/rtmod.classes", "0x0");
	t = read_file("dynamic_debug/params/rt_names");
	cr_expect_str_eq(t, "0x0\n");
	free(t);
}
