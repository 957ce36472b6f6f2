// SPDX-License-Identifier: MIT
/*
 * Messages for the journal sink test (test/scripts/dyndbg_journal.sh).
 *   dd_journal TAG [api]
 * Run with KK_DYNDBG='module kkjournal +p' and KK_DYNDBG_SINK=journal (or
 * "api": the program selects the sink itself).  From a second thread it
 * prints, each tagged TAG: one line, a multi-line message, a 70000-byte
 * message and a 1 MiB one (past any datagram: the memfd path).  On stdout,
 * what the journal must show: "KEY=value" lines per message kind.
 */
#define KK_MODNAME "kkjournal"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

static const char *tag;

static void expect(const char *kind, int line, const char *func)
{
	printf("%s CODE_FILE=%s\n%s CODE_LINE=%d\n%s CODE_FUNC=%s\n%s TID=%d\n", kind, __FILE__,
	       kind, line, kind, func, kind, (int)gettid());
}

static void big(size_t n, const char *kind)
{
	char *s = malloc(n + 1);

	if (!s)
		exit(2);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + i % 26);
	s[n] = '\0';
	expect(kind, __LINE__ + 1, __func__);
	pr_debug("%s %s %s\n", tag, kind, s);
	free(s);
}

static void *messages(void *unused)
{
	(void)unused;
	expect("one", __LINE__ + 1, __func__);
	pr_debug("%s one line\n", tag);
	expect("multi", __LINE__ + 1, __func__);
	pr_debug("%s multi\nsecond line\n\tthird=3\n", tag);
	big(70000, "big");
	big(1 << 20, "huge");
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2)
		return 2;
	tag = argv[1];
	if (argc > 2 && !strcmp(argv[2], "api"))
		kk_dyndbg_set_sink(kk_dyndbg_sink_journal, NULL);
	printf("all _PID=%d\n", (int)getpid());
	if (pthread_create(&t, NULL, messages, NULL) || pthread_join(t, NULL))
		return 2;
	return fflush(stdout) ? 2 : 0;
}
