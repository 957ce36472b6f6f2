// SPDX-License-Identifier: MIT
/* A long-running process for the script tests: it has static-key sites,
 * serves its control endpoint, and exits on SIGTERM or after 60 s.  Its
 * name fits in a comm (15 characters): kkctl ls, --all and -n completion
 * show the comm, and the scripts match the whole name. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

DEFINE_STATIC_KEY_FALSE(target_key);
DEFINE_STATIC_KEY_TRUE(target_true_key);

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	long n = 0;

	signal(SIGTERM, on_term);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < 600 && !stop; i++) {
		if (static_branch_unlikely(&target_key))
			n++;
		if (static_branch_likely(&target_true_key))
			n++;
		usleep(100 * 1000);
	}
	return n < 0;
}
