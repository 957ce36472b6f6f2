// SPDX-License-Identifier: MIT
/*
 * A program for test/scripts/dynamic_debug_session.sh (dynamic_debug/session,
 * issue 39).  Three pr_debug sites, sess_alpha, sess_beta and sess_gamma.  It
 * reads one command per line on stdin and answers one line on stdout ("ok[
 * detail]" or "fail what"), so that the script orders everything through
 * the pipe:
 *
 *   hello              "ok": main() runs (the endpoint started at load)
 *   flags FUNC         "ok =FLAGS": FUNC's site as dynamic_debug/control
 *                      lists it, read in the process (kk_control_read()), so
 *                      that no client connects to the endpoint
 *   begin LEASE QUERY  kk_control_write() of "begin LEASE\nQUERY" to
 *                      dynamic_debug/session from this thread (not the
 *                      endpoint's): "ok REPLY" or "fail REPLY"
 *   session            "ok LINE": dynamic_debug/session as read in-process
 *   fork               fork a child that sits in pause() (its stdin and
 *                      stdout are /dev/null, its endpoint its own); "ok PID
 *                      SESSION", SESSION the child's dynamic_debug/session
 *                      as it read it just after the fork
 *   quit               exit(0)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

void sess_alpha(int n)
{
	pr_debug("session alpha %d\n", n);
}

void sess_beta(int n)
{
	pr_debug("session beta %d\n", n);
}

void sess_gamma(int n)
{
	pr_debug("session gamma %d\n", n);
}

/* FUNC's flags word ("=_", "=pT") in the listing, read in the process. */
static void flags(const char *func)
{
	char *text = NULL, want[128], *p, *eq;
	int ret = kk_control_read("dynamic_debug/control", &text, NULL);

	if (ret) {
		printf("fail read: %s\n", strerror(-ret));
		return;
	}
	snprintf(want, sizeof(want), "]%.100s ", func);
	p = strstr(text, want);
	eq = p ? strchr(p, '=') : NULL;
	if (eq)
		printf("ok %.*s\n", (int)strcspn(eq, " \n"), eq);
	else
		printf("fail no site %s\n", func);
	free(text);
}

static void begin(const char *args)
{
	char body[512], *reply = NULL;
	const char *sp = strchr(args, ' ');
	int ret;

	if (!sp) {
		printf("fail usage: begin LEASE QUERY\n");
		return;
	}
	snprintf(body, sizeof(body), "begin %.*s\n%s", (int)(sp - args), args, sp + 1);
	ret = kk_control_write("dynamic_debug/session", body, strlen(body), &reply);
	printf("%s %.*s\n", ret ? "fail" : "ok", reply ? (int)strcspn(reply, "\n") : 0,
	       reply ? reply : "");
	free(reply);
}

static void fork_child(void)
{
	char *text = NULL, line[256] = "";
	int p[2], nul;
	pid_t pid;
	ssize_t n;

	if (pipe(p)) {
		printf("fail pipe: %s\n", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		printf("fail fork: %s\n", strerror(errno));
		return;
	}
	if (!pid) {
		/* what it inherited, before anything else can change it */
		if (!kk_control_read("dynamic_debug/session", &text, NULL))
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(text, "\n"), text);
		n = write(p[1], line, strlen(line) + 1);
		nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 1);
		for (;;)
			pause();
	}
	close(p[1]);
	n = read(p[0], line, sizeof(line) - 1);
	close(p[0]);
	line[n > 0 ? n : 0] = '\0';
	printf("ok %d %s\n", (int)pid, line);
}

int main(void)
{
	char line[512];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "hello")) {
			sess_alpha(0);
			sess_beta(0);
			sess_gamma(0);
			printf("ok\n");
		} else if (!strncmp(line, "flags ", 6)) {
			flags(line + 6);
		} else if (!strncmp(line, "begin ", 6)) {
			begin(line + 6);
		} else if (!strcmp(line, "session")) {
			char *text = NULL;

			if (kk_control_read("dynamic_debug/session", &text, NULL))
				printf("fail read\n");
			else
				printf("ok %.*s\n", (int)strcspn(text, "\n"), text);
			free(text);
		} else if (!strcmp(line, "fork")) {
			fork_child();
		} else if (!strcmp(line, "quit")) {
			return 0;
		} else {
			printf("fail unknown command %s\n", line);
		}
	}
	return 0;
}
