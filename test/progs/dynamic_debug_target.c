// SPDX-License-Identifier: MIT
/*
 * A long-running process for the dynamic-debug shell tests.
 *   dynamic_debug_target [LIB]
 * Prints its pid, then serves:
 *   target/run     write: run every site once (messages go to stderr)
 *   target/reload  write: dlclose and dlopen LIB again (module load queries)
 * and exits on SIGTERM.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

static const char *lib;
static void *h;

void target_alpha(int v)
{
	pr_debug("target alpha %d\n", v);
	pr_debug("target alpha again %d\n", v);
}

void target_beta(int v)
{
	pr_debug("target beta \"quoted\"\t%d\n", v);
}

static int load(void)
{
	if (!lib)
		return 0;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	return h ? 0 : -1;
}

static int run_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	void (*f)(int);

	(void)buf; (void)len; (void)priv;
	target_alpha(1);
	target_beta(2);
	if (h && (f = (void (*)(int))dlsym(h, "ddm_plain")))
		f(3);
	fflush(stderr);
	kk_buf_printf(out, "ran\n");
	return 0;
}

static int reload_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)buf; (void)len; (void)priv;
	if (h)
		dlclose(h);
	h = NULL;
	if (load()) {
		kk_buf_printf(out, "%s\n", dlerror());
		return -1;
	}
	return 0;
}

static const struct kk_control_file_ops run_fops = { .write = run_write };
static const struct kk_control_file_ops reload_fops = { .write = reload_write };

int main(int argc, char **argv)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (argc > 1) {
		lib = argv[1];
		if (load()) {
			fprintf(stderr, "dynamic_debug_target: %s\n", dlerror());
			return 1;
		}
	}
	kk_control_create_file("target/run", &run_fops, NULL);
	kk_control_create_file("target/reload", &reload_fops, NULL);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
