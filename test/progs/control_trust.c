// SPDX-License-Identifier: MIT
/*
 * A program whose ids change on command, for the endpoint's trust tests
 * (test/scripts/control_trust_request.sh, control_trust_trace.sh,
 * control_nul.sh; kernelkit issue 37, findings 5, 6 and 9).  It has three
 * pr_debug sites, trust_a, trust_b and trust_secret, reads one command per
 * line on stdin and answers one line on stdout ("ok[ detail]" or "fail
 * what"), so that the scripts order everything through the pipe:
 *
 *   seteuid UID    seteuid(UID): glibc's, every thread; the real and saved
 *                  uids stay (a root daemon acting as a user for a moment)
 *   dumpable N     prctl(PR_SET_DUMPABLE, N)
 *   drop UID       setgroups(0), setresgid(UID x3), setresuid(UID x3): for good
 *   setresgid R E S, setresuid R E S   the system calls, as given
 *   secret         trust_secret(): its pr_debug holds the secret (recorded
 *                  into the trace ring when the site has T)
 *   ab             trust_a() and trust_b()
 *   ids            "ok RUID EUID SUID RGID EGID SGID DUMPABLE"
 *   quit           exit(0)
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

__attribute__((noinline)) void trust_a(void)
{
	pr_debug("trust a\n");
}

__attribute__((noinline)) void trust_b(void)
{
	pr_debug("trust b\n");
}

__attribute__((noinline)) void trust_secret(const char *s)
{
	pr_debug("the secret is %s\n", s);
}

static void answer(int err, const char *what)
{
	if (err)
		printf("fail %s: %s\n", what, strerror(errno));
	else
		puts("ok");
}

static void ids(void)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (getresuid(&r, &e, &s) || getresgid(&rg, &eg, &sg)) {
		answer(1, "getresuid");
		return;
	}
	printf("ok %u %u %u %u %u %u %d\n", (unsigned)r, (unsigned)e, (unsigned)s, (unsigned)rg,
	       (unsigned)eg, (unsigned)sg, prctl(PR_GET_DUMPABLE));
}

static int drop(uid_t u)
{
	return setgroups(0, NULL) || setresgid(u, u, u) || setresuid(u, u, u);
}

int main(void)
{
	char line[256];
	unsigned int r, e, s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "seteuid ", 8)) {
			answer(seteuid((uid_t)atol(line + 8)), "seteuid");
		} else if (!strncmp(line, "dumpable ", 9)) {
			answer(prctl(PR_SET_DUMPABLE, atol(line + 9), 0, 0, 0), "prctl");
		} else if (!strncmp(line, "setresgid ", 10)) {
			answer(sscanf(line + 10, "%u %u %u", &r, &e, &s) != 3 ||
			       setresgid((gid_t)r, (gid_t)e, (gid_t)s), "setresgid");
		} else if (!strncmp(line, "setresuid ", 10)) {
			answer(sscanf(line + 10, "%u %u %u", &r, &e, &s) != 3 ||
			       setresuid((uid_t)r, (uid_t)e, (uid_t)s), "setresuid");
		} else if (!strncmp(line, "drop ", 5)) {
			answer(drop((uid_t)atol(line + 5)), "drop");
		} else if (!strcmp(line, "secret")) {
			trust_secret("s3cr3t-of-root");
			answer(0, "");
		} else if (!strcmp(line, "ab")) {
			trust_a();
			trust_b();
			answer(0, "");
		} else if (!strcmp(line, "ids")) {
			ids();
		} else if (!strcmp(line, "quit")) {
			exit(0);
		} else {
			printf("fail unknown command %s\n", line);
		}
	}
	return 0;
}
