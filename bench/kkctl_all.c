// SPDX-License-Identifier: MIT
/*
 * kk-bench kkctl_all: `kkctl --all write dynamic_debug/control` (+p, then -p)
 * over 1, 10 and 100 processes of 16154 pr_debug sites each (the dyndbg
 * benchmark's modules, build/dynamic_debug-mods/), on the host and in containers
 * (each process in a rootless container of its own: `unshare -U -r -n -p -f
 * --mount-proc`, so kkctl finds it in its own network namespace and enters
 * it), beside `kkctl -p PID` on one process in the same run (the baseline).
 *
 * The targets run as a throwaway uid (as root) so that --all, run as that
 * uid, selects exactly them on a machine where others run kernelkit
 * programs too.  Not root: as ourselves, and --all also meets our other
 * processes.  Each figure is one kkctl, spawn to exit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { MAX_TARGETS = 100 };

/* ---- the target: kk-bench __insns kkctl_target ----------------------------- */

/* Load every module of dynamic_debug-mods (16154 sites), say "ready", and serve until
 * standard input closes. */
static int target_main(int argc, char **argv)
{
	char path[4200], name[128], c;
	FILE *f;

	(void)argc;
	(void)argv;
	snprintf(path, sizeof(path), "%s/dynamic_debug-mods/modules.list", kkb_self_dir());
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "kk-bench: %s missing (make all builds it)\n", path);
		return 1;
	}
	while (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		if (!name[0])
			continue;
		snprintf(path, sizeof(path), "%s/dynamic_debug-mods/lib%s.so", kkb_self_dir(), name);
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
			fprintf(stderr, "kk-bench: %s\n", dlerror());
			fclose(f);
			return 1;
		}
	}
	fclose(f);
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0 || errno == EINTR)
		;
	return 0;
}
KKB_REGISTER_INSNS("kkctl_target", target_main);

/* ---- the benchmark ------------------------------------------------------------ */

struct tgt {
	pid_t pid;	/* ours: kk-bench, or unshare */
	int in;		/* its standard input: closing it stops it */
};

static uid_t run_uid;	/* the targets' and kkctl's uid */

/* In a child: become run_uid (if we are root and it is not us). */
static void become(void)
{
	if (geteuid() == 0 && run_uid != 0) {
		if (setgroups(0, NULL) || setresgid(run_uid, run_uid, run_uid) ||
		    setresuid(run_uid, run_uid, run_uid))
			_exit(126);
	}
}

/* Start one target, in a container if @contained; wait until it serves. */
static int start_target(struct tgt *t, int contained)
{
	char self[4200], line[64];
	int in[2], out[2];
	FILE *f;

	snprintf(self, sizeof(self), "%s/kk-bench", kkb_self_dir());
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	t->pid = fork();
	if (t->pid == 0) {
		char *const plain[] = { self, "__insns", "kkctl_target", NULL };
		char *const boxed[] = { "unshare", "-U", "-r", "-n", "-p", "-f", "--mount-proc",
					self, "__insns", "kkctl_target", NULL };

		dup2(in[0], 0);
		dup2(out[1], 1);
		become();
		if (contained)
			execvp("unshare", boxed);
		else
			execv(self, plain);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	if (t->pid < 0) {
		close(out[0]);
		close(in[1]);
		return -1;
	}
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f) || strcmp(line, "ready\n")) {
		if (f)
			fclose(f);
		else
			close(out[0]);
		return -1;
	}
	fclose(f);
	return 0;
}

static void stop_targets(struct tgt *t, int n)
{
	for (int i = 0; i < n; i++)
		close(t[i].in);
	for (int i = 0; i < n; i++)
		waitpid(t[i].pid, NULL, 0);
}

/* kkctl ARGS... write dynamic_debug/control QUERY as run_uid, spawn to exit,
 * in ms; -1 if it failed. */
static double time_kkctl(char *const *sel, const char *query)
{
	char kkctl[4200];
	char *argv[16];
	int n = 0, st;
	uint64_t t0;
	pid_t pid;

	snprintf(kkctl, sizeof(kkctl), "%s/kkctl", kkb_self_dir());
	argv[n++] = "kkctl";
	for (; *sel && n < 10; sel++)
		argv[n++] = *sel;
	argv[n++] = "write";
	argv[n++] = "dynamic_debug/control";
	argv[n++] = (char *)query;
	argv[n] = NULL;
	t0 = kkb_now_ns();
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1);
		become();
		execv(kkctl, argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	return (double)(kkb_now_ns() - t0) / 1e6;
}

static void put_ms(struct kkb_ctx *ctx, const char *key, double ms)
{
	if (ms < 0)
		kkb_json_null(ctx, key);
	else
		kkb_json_num(ctx, key, ms);
}

static int run(struct kkb_ctx *ctx)
{
	static const int counts[] = { 1, 10, 100 };
	static struct tgt t[MAX_TARGETS];
	char *all[] = { "--all", NULL }, *seq[] = { "--jobs", "1", "--all", NULL };
	char key[64], pid[16];
	int ret = 0;

	run_uid = geteuid() == 0 ? (uid_t)(3996000 + getpid() % 1000) : geteuid();
	signal(SIGPIPE, SIG_IGN);
	for (int contained = 0; contained < 2; contained++) {
		int started = 0;

		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			int n = counts[c];
			double on, off;

			while (started < n && !start_target(&t[started], contained))
				started++;
			if (started < n) {
				fprintf(stderr, "kk-bench: kkctl_all: could not start target %d%s\n",
					started + 1, contained ? " (in a rootless container: "
					"no unshare, or no unprivileged user namespaces?)" : "");
				for (; c < sizeof(counts) / sizeof(counts[0]); c++) {
					snprintf(key, sizeof(key), "%s_%d_on_ms",
						 contained ? "containers" : "host", counts[c]);
					kkb_json_null(ctx, key);
					snprintf(key, sizeof(key), "%s_%d_off_ms",
						 contained ? "containers" : "host", counts[c]);
					kkb_json_null(ctx, key);
				}
				ret |= !contained;
				break;
			}
			if (!contained && n == 1) {	/* the baseline: one process by -p */
				char *one[] = { "-p", pid, NULL };

				snprintf(pid, sizeof(pid), "%d", (int)t[0].pid);
				put_ms(ctx, "baseline_p_on_ms", time_kkctl(one, "module !kkbench +p"));
				put_ms(ctx, "baseline_p_off_ms", time_kkctl(one, "module !kkbench -p"));
			}
			on = time_kkctl(all, "module !kkbench +p");
			off = time_kkctl(all, "module !kkbench -p");
			snprintf(key, sizeof(key), "%s_%d_on_ms", contained ? "containers" : "host", n);
			put_ms(ctx, key, on);
			snprintf(key, sizeof(key), "%s_%d_off_ms", contained ? "containers" : "host", n);
			put_ms(ctx, key, off);
			ret |= on < 0 || off < 0;
			if (n > 1) {	/* one target at a time, as before --jobs */
				on = time_kkctl(seq, "module !kkbench +p");
				off = time_kkctl(seq, "module !kkbench -p");
				snprintf(key, sizeof(key), "%s_%d_on_jobs1_ms",
					 contained ? "containers" : "host", n);
				put_ms(ctx, key, on);
				snprintf(key, sizeof(key), "%s_%d_off_jobs1_ms",
					 contained ? "containers" : "host", n);
				put_ms(ctx, key, off);
				ret |= on < 0 || off < 0;
			}
		}
		stop_targets(t, started);
	}
	kkb_json_num(ctx, "sites_per_process", 16154);
	kkb_note(ctx, "kkctl --all write dynamic_debug/control 'module !kkbench +p' (then -p) as "
		 "uid %u, spawn to exit, over N processes with 16154 sites each; containers_*: "
		 "each process in its own rootless container (unshare -U -r -n -p -f "
		 "--mount-proc); *_jobs1_*: with --jobs 1 (one target at a time; the default serves "
		 "8 at once); baseline_p_*: kkctl -p PID on one host process", (unsigned)run_uid);
	if (ret)
		fprintf(stderr, "kk-bench: kkctl_all: a kkctl failed\n");
	return ret;
}
KKB_REGISTER("kkctl_all", "kkctl --all over 1, 10, 100 processes of 16154 sites, host and "
	     "containers, vs -p on one", run);
