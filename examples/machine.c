// SPDX-License-Identifier: MIT
/*
 * The dynamic-debug demo's "machine": loads modules (shared objects) the way
 * modprobe loads kernel modules, then runs every pr_debug site on worker
 * threads until it is told to stop.  Its sites are driven from outside with
 * kkctl through the control endpoint (see examples/dynamic_debug-demo.sh).
 *
 *   dynamic_debug-machine [-w WORKERS] [-n NICE] [-v] MODDIR
 *
 * MODDIR holds lib<name>.so for every name in MODDIR/modules.list.  Messages
 * go to a counting sink instead of the terminal (millions a second once all
 * sites are on): the control file machine/stats shows the counts, and
 * machine/log the last few messages printed in the last half second, so that
 * a demo can show real pr_debug lines coming and going.  -v sends them to
 * stderr instead.  -n runs the workers at that nice level.  SIGTERM or SIGINT
 * stops the machine.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/jump_label.h>

#define MAX_MODS 64

struct mod {
	char name[64];
	void *h;
	void (*run)(int);
	unsigned nsites;
};

static struct mod mods[MAX_MODS];
static int nmods;
static atomic_int stop;
static int worker_nice;
static atomic_ullong rounds, messages, suppressed_reports;

/* The last LOG_LINES messages, each with the time it was printed. */
#define LOG_LINES	5
#define LOG_WINDOW_NS	500000000ull
static struct {
	pthread_mutex_t lock;	/* a worker that finds it taken skips the copy */
	unsigned long long next;
	unsigned long long ns[LOG_LINES];
	char text[LOG_LINES][160];
} msglog = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void log_message(const char *msg, size_t len)
{
	unsigned i;

	if (pthread_mutex_trylock(&msglog.lock))
		return;
	i = (unsigned)(msglog.next++ % LOG_LINES);
	if (len >= sizeof(msglog.text[i]))
		len = sizeof(msglog.text[i]) - 1;
	memcpy(msglog.text[i], msg, len);
	msglog.text[i][len] = '\0';
	msglog.ns[i] = now_ns();
	pthread_mutex_unlock(&msglog.lock);
}

static void count_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)arg;
	atomic_fetch_add_explicit(&messages, 1, memory_order_relaxed);
	log_message(msg, len);
	if (len > 20 && strstr(msg, "callbacks suppressed"))
		atomic_fetch_add_explicit(&suppressed_reports, 1, memory_order_relaxed);
}

static void *worker(void *arg)
{
	int v = (int)(long)arg;

	if (worker_nice)	/* -n: let the workers give way to kkctl and the endpoint */
		setpriority(PRIO_PROCESS, (id_t)gettid(), worker_nice);

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < nmods; i++)
			mods[i].run(v);
		atomic_fetch_add_explicit(&rounds, 1, memory_order_relaxed);
		v++;
	}
	return NULL;
}

/*
 * machine/stats: rounds of the worker through every site, messages printed,
 * "callbacks suppressed" reports, and the process's static-key syncs so far
 * (a demo reads them before and after a command, whatever kkctl saw).
 */
static int stats_show(struct kk_buf *out, void *priv)
{
	struct kk_jump_label_stats jl;

	(void)priv;
	kk_jump_label_get_stats(&jl);
	kk_buf_printf(out, "modules %d\nrounds %llu\nmessages %llu\nsuppressed_reports %llu\n"
		      "syncs %llu\n", nmods, (unsigned long long)atomic_load(&rounds),
		      (unsigned long long)atomic_load(&messages),
		      (unsigned long long)atomic_load(&suppressed_reports), jl.syncs);
	return out->error;
}

static const struct kk_control_file_ops stats_fops = { .show = stats_show };

/* machine/log: the messages of the last half second, oldest first. */
static int log_show(struct kk_buf *out, void *priv)
{
	unsigned long long now;
	int shown = 0;

	(void)priv;
	pthread_mutex_lock(&msglog.lock);
	now = now_ns();
	for (unsigned long long n = msglog.next > LOG_LINES ? msglog.next - LOG_LINES : 0;
	     n < msglog.next; n++) {
		unsigned i = (unsigned)(n % LOG_LINES);

		if (now - msglog.ns[i] > LOG_WINDOW_NS)
			continue;
		kk_buf_printf(out, "%s", msglog.text[i]);
		shown++;
	}
	pthread_mutex_unlock(&msglog.lock);
	if (!shown)
		kk_buf_printf(out, "(no debug message in the last 0.5 s)\n");
	return out->error;
}

static const struct kk_control_file_ops log_fops = { .show = log_show };

static int modprobe(const char *dir, const char *name)
{
	struct mod *m = &mods[nmods];
	char path[4096];

	if (nmods == MAX_MODS)
		return -1;
	snprintf(path, sizeof(path), "%s/lib%s.so", dir, name);
	m->h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!m->h) {
		fprintf(stderr, "machine: modprobe %s: %s\n", name, dlerror());
		return -1;
	}
	m->run = (void (*)(int))dlsym(m->h, "kkmod_run");
	if (!m->run) {
		fprintf(stderr, "machine: %s has no kkmod_run\n", name);
		return -1;
	}
	snprintf(m->name, sizeof(m->name), "%.63s", name);
	m->nsites = (unsigned)kk_dyndbg_count_sites(name);
	printf("dyndbg: %4u debug prints in module %s\n", m->nsites, name);
	nmods++;
	return 0;
}

int main(int argc, char **argv)
{
	int nworkers = 1, verbose = 0, opt, sig;
	pthread_t th[16];
	char line[256];
	sigset_t set;
	FILE *list;
	size_t total = 0;

	while ((opt = getopt(argc, argv, "w:n:v")) != -1) {
		switch (opt) {
		case 'n':
			worker_nice = atoi(optarg);
			break;
		case 'w':
			nworkers = atoi(optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || nworkers < 0 || nworkers > 16)
		goto usage;
	if (!verbose)
		kk_dyndbg_set_sink(count_sink, NULL);

	/* Block the stop signals before any thread starts; main waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	snprintf(line, sizeof(line), "%s/modules.list", argv[optind]);
	list = fopen(line, "r");
	if (!list) {
		fprintf(stderr, "machine: %s: %s\n", line, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), list)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		printf("modprobe %s\n", line);
		if (modprobe(argv[optind], line))
			return 1;
		total += mods[nmods - 1].nsites;
	}
	fclose(list);
	kk_control_create_file("machine/stats", &stats_fops, NULL);
	kk_control_create_file("machine/log", &log_fops, NULL);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&th[i], NULL, worker, (void *)(long)(i * 1000));
	printf("machine: pid %d: %zu sites in %d modules, %d worker thread%s running\n",
	       (int)getpid(), total, nmods, nworkers, nworkers == 1 ? "" : "s");
	fflush(stdout);

	sigwait(&set, &sig);
	atomic_store(&stop, 1);
	for (int i = 0; i < nworkers; i++)
		pthread_join(th[i], NULL);
	printf("machine: stopped after %llu rounds, %llu messages\n",
	       (unsigned long long)atomic_load(&rounds), (unsigned long long)atomic_load(&messages));
	kk_control_remove_file("machine/stats");
	kk_control_remove_file("machine/log");
	return 0;
usage:
	fprintf(stderr, "usage: %s [-w WORKERS] [-n NICE] [-v] MODDIR\n", argv[0]);
	return 2;
}
