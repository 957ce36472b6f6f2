// SPDX-License-Identifier: MIT
/*
 * kkctl record's parser of dynamic_debug/trace_pipe_json lines
 * (tools/kkctl/record_json.c, issue 39): the spec's example lines parse to
 * exactly their values (64-bit integers exact, strings unescaped, UTF-8
 * kept), kkctl's own jsonl lines too (-H), and every malformed line is
 * refused with a reason, never half taken.  The file is compiled in here: it
 * is kkctl's, not the library's.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../tools/kkctl/record_json.c"
#include "../../tools/kkctl/record_out.c"	/* kkr_utf8_len() */

#include "../progs/record_stubs.h"

static struct kkr_line l;
static char buf[4096];
static const char *why;

static int parse_str(const char *s)
{
	size_t n = strlen(s);

	cr_assert_lt(n, sizeof(buf));
	memcpy(buf, s, n + 1);
	why = NULL;
	return kkr_parse_line(buf, n, &l, &why);
}

static void fini(void)
{
	kkr_line_free(&l);
}

TestSuite(kkctl_record_json, .fini = fini);

#define EVENT_HEAD "{\"type\":\"event\",\"ts\":1795939200123456789,\"mono\":123456789012,\"pid\":42," \
		   "\"tid\":43,\"comm\":\"worker-1\",\"module\":\"http\",\"function\":\"handle\"," \
		   "\"file\":\"src/http.c\",\"line\":120,"

Test(kkctl_record_json, spec_event)
{
	cr_assert_eq(parse_str(EVENT_HEAD "\"format\":\"request len=%d path=%s\","
			       "\"message\":\"request len=12 path=/a\",\"args\":[{\"name\":\"len\","
			       "\"type\":\"int\",\"value\":12},{\"name\":\"path\",\"type\":\"string\","
			       "\"value\":\"/a\"}]}"), 0, "%s", why);
	cr_assert_eq(l.kind, KKR_EVENT);
	cr_assert_eq(l.ts, 1795939200123456789ull);
	cr_assert_eq(l.mono, 123456789012ull);
	cr_assert_eq(l.pid, 42);
	cr_assert_eq(l.tid, 43);
	cr_assert_str_eq(l.comm, "worker-1");
	cr_assert_str_eq(l.module, "http");
	cr_assert_str_eq(l.function, "handle");
	cr_assert_str_eq(l.file, "src/http.c");
	cr_assert_eq(l.line, 120);
	cr_assert_str_eq(l.format, "request len=%d path=%s");
	cr_assert_str_eq(l.message, "request len=12 path=/a");
	cr_assert_eq(l.nargs, 2);
	cr_assert_str_eq(l.args[0].name, "len");
	cr_assert_eq(l.args[0].type, KKR_INT);
	cr_assert_eq(l.args[0].v.i, 12);
	cr_assert_str_eq(l.args[1].name, "path");
	cr_assert_eq(l.args[1].type, KKR_STRING);
	cr_assert_str_eq(l.args[1].v.s, "/a");
	cr_assert_not(l.relabelled);
}

Test(kkctl_record_json, spec_lost)
{
	cr_assert_eq(parse_str("{\"type\":\"lost\",\"pid\":42,\"tid\":43,\"comm\":\"worker-1\","
			       "\"count\":17}"), 0, "%s", why);
	cr_assert_eq(l.kind, KKR_LOST);
	cr_assert_eq(l.count, 17);
	cr_assert_eq(l.tid, 43);
	cr_assert_str_eq(l.comm, "worker-1");
}

/* Every type of argument, at its limits: 64-bit integers exact. */
Test(kkctl_record_json, arg_types)
{
	cr_assert_eq(parse_str(EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":["
			       "{\"name\":\"a\",\"type\":\"int\",\"value\":-9223372036854775808},"
			       "{\"name\":\"b\",\"type\":\"uint\",\"value\":18446744073709551615},"
			       "{\"name\":\"c\",\"type\":\"char\",\"value\":65},"
			       "{\"name\":\"d\",\"type\":\"float\",\"value\":-1.5e-3},"
			       "{\"name\":\"e\",\"type\":\"float\",\"value\":\"-inf\"},"
			       "{\"name\":\"f\",\"type\":\"float\",\"value\":\"nan\"},"
			       "{\"name\":\"g\",\"type\":\"pointer\",\"value\":140737488355328},"
			       "{\"name\":\"arg7\",\"type\":\"int\",\"value\":9223372036854775807}]}"),
		     0, "%s", why);
	cr_assert_eq(l.nargs, 8);
	cr_assert_eq(l.args[0].v.i, INT64_MIN);
	cr_assert_eq(l.args[1].v.u, UINT64_MAX);
	cr_assert_eq(l.args[2].type, KKR_CHAR);
	cr_assert_eq(l.args[2].v.i, 65);
	cr_assert_eq(l.args[3].v.f, -1.5e-3);
	cr_assert(isinf(l.args[4].v.f) && l.args[4].v.f < 0);
	cr_assert(isnan(l.args[5].v.f));
	cr_assert_eq(l.args[6].type, KKR_POINTER);
	cr_assert_eq(l.args[6].v.u, 140737488355328ull);
	cr_assert_eq(l.args[7].v.i, INT64_MAX);
}

/* Escapes, surrogate pairs and raw UTF-8 come out as UTF-8. */
Test(kkctl_record_json, strings)
{
	cr_assert_eq(parse_str(EVENT_HEAD "\"format\":\"a\\\"b\\\\c\\/d\\n\\t\\u0001\","
			       "\"message\":\"\\u00e9\\ud83d\\ude00\xc3\xa9\\ufffd\",\"args\":[]}"),
		     0, "%s", why);
	cr_assert_str_eq(l.format, "a\"b\\c/d\n\t\x01");
	cr_assert_str_eq(l.message, "\xc3\xa9\xf0\x9f\x98\x80\xc3\xa9\xef\xbf\xbd");
	cr_assert_eq(l.nargs, 0);
}

/* kkctl record --format jsonl's own lines (what -H reads back). */
Test(kkctl_record_json, jsonl_lines)
{
	cr_assert_eq(parse_str("{\"type\":\"exited\",\"host\":\"h1\",\"pid\":4242,\"vpid\":7,"
			       "\"process\":\"srv\",\"ts\":5}"), 0, "%s", why);
	cr_assert_eq(l.kind, KKR_EXITED);
	cr_assert(l.relabelled);
	cr_assert_str_eq(l.host, "h1");
	cr_assert_str_eq(l.process, "srv");
	cr_assert_eq(l.vpid, 7);
	cr_assert_eq(l.pid, 4242);
	cr_assert_eq(parse_str("{\"type\":\"lost\",\"host\":\"\",\"pid\":1,\"vpid\":1,"
			       "\"process\":\"p\",\"tid\":2,\"comm\":\"t\",\"count\":3,\"ts\":9}"),
		     0, "%s", why);
	cr_assert_eq(l.ts, 9);
}

static const char *const malformed[] = {
	"",
	"[]",
	"{}",
	"{\"type\":\"event\"}",						/* keys missing */
	"{\"pid\":1,\"type\":\"lost\",\"tid\":2,\"comm\":\"\",\"count\":1}",	/* type not first */
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1,\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1,\"x\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1,\"module\":\"m\"}",
	"{\"type\":\"nope\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":-1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1.5}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":01}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":18446744073709551616}",
	"{\"type\":\"lost\",\"pid\":-1,\"tid\":2,\"comm\":\"\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":4294967296,\"tid\":2,\"comm\":\"\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"a\x01\",\"count\":1}",	/* raw control */
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\xc3\",\"count\":1}",	/* bad UTF-8 */
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\xc0\xaf\",\"count\":1}",	/* overlong */
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\xed\xa0\x80\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\\ud800\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\\udc00x\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\\u00\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\\u0000\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\\x\",\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"abc,\"count\":1}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1}x",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1,}",
	"{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1,\"host\":\"h\"}",
	"{\"type\":\"exited\",\"pid\":1,\"ts\":1}",			/* exited only relabelled */
	"{'type':\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"\",\"count\":1}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":{}}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"value\":1,"
		   "\"type\":\"int\"}]}",					/* value before type */
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"long\","
		   "\"value\":1}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"int\","
		   "\"value\":\"1\"}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"int\","
		   "\"value\":9223372036854775808}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"uint\","
		   "\"value\":-1}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"float\","
		   "\"value\":\"infinity\"}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"float\","
		   "\"value\":1.}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"type\":\"int\",\"value\":1}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"int\","
		   "\"value\":1,\"extra\":2}]}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[{\"name\":\"a\",\"type\":\"int\","
		   "\"value\":1}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[],\"line\":2}",
	EVENT_HEAD "\"format\":\"f\",\"message\":\"m\",\"args\":[]}{}",
};

Test(kkctl_record_json, malformed_lines)
{
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		cr_expect_eq(parse_str(malformed[i]), -1, "line %zu taken: %s", i, malformed[i]);
		cr_expect_not_null(why, "line %zu: no reason", i);
	}
}

/* A NUL inside the line (the reply is counted, not NUL-terminated). */
Test(kkctl_record_json, nul_in_line)
{
	static const char s[] = "{\"type\":\"lost\",\"pid\":1,\"tid\":2,\"comm\":\"a\0b\",\"count\":1}";

	memcpy(buf, s, sizeof(s));
	cr_assert_eq(kkr_parse_line(buf, sizeof(s) - 1, &l, &why), -1);
}

/* A line cut anywhere is refused, never half taken. */
Test(kkctl_record_json, every_prefix)
{
	static const char s[] = EVENT_HEAD "\"format\":\"x=%d\",\"message\":\"x=1\",\"args\":"
				"[{\"name\":\"x\",\"type\":\"int\",\"value\":1}]}";

	for (size_t n = 0; n < sizeof(s) - 1; n++) {
		memcpy(buf, s, n);
		cr_expect_eq(kkr_parse_line(buf, n, &l, &why), -1, "prefix of %zu bytes taken", n);
	}
	memcpy(buf, s, sizeof(s));
	cr_assert_eq(kkr_parse_line(buf, sizeof(s) - 1, &l, &why), 0, "%s", why);
}
