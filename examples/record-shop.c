// SPDX-License-Identifier: MIT
/*
 * A small multi-process server for `make demo`'s tracing part
 * (examples/trace-demo.sh): a master and two workers, each with a thread
 * named "serve-N" that "serves" a request every 20 ms.  Every request passes
 * the pr_debug() of shop_request(), whose arguments become typed fields in a
 * recorded trace (an integer, an unsigned, a string and a float); the master
 * also reports its totals once a second in shop_stats().  All are off until
 * somebody switches them on from outside:
 *   kkctl --tree PID record --format ctf -o DIR 'file record-shop.c +T'
 * It runs until SIGTERM or SIGINT (the master then stops its workers), and a
 * worker whose master is gone stops by itself.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

static const char *const paths[] = { "/", "/index.html", "/api/cart", "/img/logo.png" };
static volatile sig_atomic_t stop;
static int served;

static void shop_request(int id, unsigned int bytes, const char *path, double ms)
{
	pr_debug("request id=%d bytes=%u path=%s ms=%.3f\n", id, bytes, path, ms);
}

static void shop_stats(int total)
{
	pr_debug("stats served=%d\n", total);
}

static void *serve(void *arg)
{
	const struct timespec gap = { 0, 20 * 1000 * 1000 };
	char name[16];

	snprintf(name, sizeof(name), "serve-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	for (int id = 0; !stop; id++) {
		shop_request(id, 200u + (unsigned int)(id * 37 % 1800),
			     paths[id % 4], 0.25 + (id % 7) * 0.5);
		__atomic_add_fetch(&served, 1, __ATOMIC_RELAXED);
		nanosleep(&gap, NULL);
	}
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One process's life: its serving thread, then (master) its totals. */
static int run(long n, pid_t master)
{
	const struct timespec second = { 1, 0 };
	pthread_t t;

	if (pthread_create(&t, NULL, serve, (void *)n))
		return 1;
	while (!stop) {
		nanosleep(&second, NULL);
		if (n == 0)
			shop_stats(__atomic_load_n(&served, __ATOMIC_RELAXED));
		else if (getppid() != master)
			stop = 1;
	}
	pthread_join(t, NULL);
	return 0;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	pid_t master = getpid(), workers[2];

	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (int i = 0; i < 2; i++) {
		workers[i] = fork();
		if (workers[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			return run(i + 1, master);
		}
	}
	printf("record-shop: master %d, workers %d %d\n", (int)master, (int)workers[0], (int)workers[1]);
	fflush(stdout);
	run(0, master);
	for (int i = 0; i < 2; i++)
		if (workers[i] > 0) {
			kill(workers[i], SIGTERM);
			waitpid(workers[i], NULL, 0);
		}
	return 0;
}
