/* SPDX-License-Identifier: MIT */
/* Helpers for the dynamic-debug tests (Criterion programs): writes, listings, captured output. */
#ifndef DYNDBG_UTIL_H
#define DYNDBG_UTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

/* A write of @text to control file @file; *reply (may be NULL) is the text
 * back, malloc'ed, "" when there is none. */
static inline int control_file_write(const char *file, const char *text, char **reply)
{
	char *r = NULL;
	int ret = kk_control_write(file, text, strlen(text), &r);

	if (reply)
		*reply = r ? r : strdup("");
	else
		free(r);
	return ret;
}

/* A write to dynamic_debug/control. */
static inline int dynamic_debug_write(const char *q, char **reply)
{
	return control_file_write("dynamic_debug/control", q, reply);
}

/* A write to dynamic_debug/control that must succeed (the test fails with its reply). */
static inline void dynamic_debug_must_write(const char *q)
{
	char *r = NULL;

	cr_assert_eq(dynamic_debug_write(q, &r), 0, "%s: %s", q, r);
	free(r);
}

/* dynamic_debug/trace's text, malloc'ed ("" when it has none); the read must succeed. */
static inline char *dynamic_debug_trace_text(void)
{
	char *t = NULL;
	size_t n;

	cr_assert_eq(kk_control_read("dynamic_debug/trace", &t, &n), 0);
	return t ? t : strdup("");
}

#if defined(__x86_64__) && !defined(KK_NO_JUMP_LABEL)
#include <signal.h>
#include <unistd.h>

static int dynamic_debug_blocker_pipes[2][2];

/* Blocks SIGTRAP, names itself "trapblocker" and waits to be released. */
static inline void *dynamic_debug_trap_blocker(void *arg)
{
	sigset_t s;
	char c;

	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	pthread_setname_np(pthread_self(), "trapblocker");
	(void)!write(dynamic_debug_blocker_pipes[0][1], "r", 1);
	(void)!read(dynamic_debug_blocker_pipes[1][0], &c, 1);
	return NULL;
}

/*
 * Write @q as a batch that is refused: the signal method is forced while a
 * thread ("trapblocker") blocks SIGTRAP.  The write's value (-EOPNOTSUPP
 * when refused), *reply its text; -EAGAIN if the blocker could not start.
 */
static inline int dynamic_debug_write_refused(const char *q, char **reply)
{
	pthread_t t;
	char c;
	int ret;

	if (pipe(dynamic_debug_blocker_pipes[0]) || pipe(dynamic_debug_blocker_pipes[1]) ||
	    pthread_create(&t, NULL, dynamic_debug_trap_blocker, NULL))
		return -EAGAIN;
	if (read(dynamic_debug_blocker_pipes[0][0], &c, 1) != 1)
		ret = -EAGAIN;
	else if (setenv("KK_TEXT_SYNC", "signal", 1))
		ret = -EAGAIN;
	else
		ret = dynamic_debug_write(q, reply);
	unsetenv("KK_TEXT_SYNC");
	(void)!write(dynamic_debug_blocker_pipes[1][1], "x", 1);
	pthread_join(t, NULL);
	for (int i = 0; i < 4; i++)
		close(dynamic_debug_blocker_pipes[i / 2][i % 2]);
	return ret;
}
#endif

/* The listing, malloc'ed. */
static inline char *dynamic_debug_listing(void)
{
	char *t = NULL;
	size_t n;

	if (kk_control_read("dynamic_debug/control", &t, &n))
		return NULL;
	return t;
}

/* The listed flags ("p", "pmf", "_") of the first site whose line contains @needle. */
static inline const char *dynamic_debug_flags_of(const char *needle)
{
	static char out[16];
	char *l = dynamic_debug_listing(), *p, *eq;

	out[0] = '\0';
	if (!l)
		return "?";
	for (p = strtok(l, "\n"); p; p = strtok(NULL, "\n")) {
		if (p[0] == '#' || !strstr(p, needle))
			continue;
		eq = strstr(p, " =");
		if (eq && sscanf(eq + 2, "%15s", out) == 1)
			break;
	}
	free(l);
	return out[0] ? out : "?";
}

/* "matched M changed C" of query @n (1-based) in a reply; -1 if absent. */
static inline int dynamic_debug_counts(const char *reply, int n, long *matched, long *changed)
{
	char key[32];
	const char *p;

	snprintf(key, sizeof(key), "query %d \"", n);
	p = strstr(reply, key);
	if (!p || !(p = strstr(p, "\": matched ")))
		return -1;
	return sscanf(p, "\": matched %ld changed %ld", matched, changed) == 2 ? 0 : -1;
}

/* A sink that keeps the messages. */
struct dynamic_debug_capture {
	pthread_mutex_t lock;
	char buf[65536];
	size_t len;
	int n;
};

static inline void dynamic_debug_capture_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	struct dynamic_debug_capture *c = arg;

	(void)d;
	pthread_mutex_lock(&c->lock);
	if (c->len + len < sizeof(c->buf)) {
		memcpy(c->buf + c->len, msg, len);
		c->len += len;
		c->buf[c->len] = '\0';
	}
	c->n++;
	pthread_mutex_unlock(&c->lock);
}

static inline void dynamic_debug_capture_start(struct dynamic_debug_capture *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	kk_dyndbg_set_sink(dynamic_debug_capture_sink, c);
}

static inline int dynamic_debug_count_str(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

#endif
