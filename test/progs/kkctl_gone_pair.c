// SPDX-License-Identifier: MIT
/*
 * Two processes, a parent and its fork child, each serving a control file
 * "peer/end" whose read kills the other one and returns once it is gone
 * ("ended PID"): a process that kkctl selected exits while kkctl is at work,
 * with no sleep and no race (kernelkit issue 37, item 10).  With --jobs 1,
 * whichever kkctl reaches first ends the other before kkctl gets to it.
 * A read of "self/end" ends the process itself before it replies.
 * Each prints its pid once its endpoint listens; both exit after 120 s.
 *   kkctl_gone_pair
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>

static pid_t peer;
static int is_parent;

/* Kill the peer and wait until it has exited: the parent reaps its child;
 * the child watches its parent's pidfd (the parent stays a zombie until
 * the test reaps it, which kkctl must count as gone too). */
static int end_peer(struct kk_buf *out, void *priv)
{
	int fd = (int)syscall(SYS_pidfd_open, peer, 0);
	struct pollfd p = { fd, POLLIN, 0 };

	(void)priv;
	if (fd < 0 || kill(peer, SIGKILL))
		return kk_buf_printf(out, "cannot end %d\n", (int)peer) < 0 ? -1 : -5;
	if (is_parent)
		waitpid(peer, NULL, 0);
	else
		while (poll(&p, 1, -1) < 0)
			;
	close(fd);
	return kk_buf_printf(out, "ended %d\n", (int)peer);
}

static const struct kk_control_file_ops end_ops = { .show = end_peer };

static int end_self(struct kk_buf *out, void *priv)
{
	(void)out;
	(void)priv;
	_exit(0);
}

static const struct kk_control_file_ops self_ops = { .show = end_self };

int main(void)
{
	pid_t parent = getpid(), child;

	if (kk_control_create_file("peer/end", &end_ops, NULL) ||
	    kk_control_create_file("self/end", &self_ops, NULL) || kk_control_start())
		return 2;
	child = fork();
	if (child < 0)
		return 1;
	is_parent = child > 0;
	peer = child ? child : parent;
	if (!child && kk_control_start())
		return 2;
	alarm(120);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
