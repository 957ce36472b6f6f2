// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/session: a lease on what a tracer switched on.
 *
 * `kkctl record` switches sites on (+T) in processes it does not own, and
 * must not leave them on when it goes away, however it goes (Ctrl-C,
 * SIGKILL, its ssh connection dropped).  So what it switches on is held by
 * a lease.  A session remembers, for each site its queries changed, the
 * flags before and the flags it set; its holder renews the lease (`renew`,
 * or a read of trace_pipe_json: kk_dd_session_touch()), and when LEASE_MS
 * pass without a renewal the endpoint's thread ends the session itself, as
 * `end` would: every site whose flags are still the ones the session set
 * gets its flags back, and a site somebody else changed meanwhile is left
 * as they left it.
 *
 * One session per process: a begin is refused (EBUSY) while one is open.
 * The session's state is under the sites lock (ddebug_lock, which every
 * write of dynamic_debug/control takes), so a begin or an end never
 * interleaves with another write.  The lease's end is also kept in an
 * atomic of its own, which the endpoint's thread reads each turn to bound
 * its poll(): it is 0 while no session is open, so having none costs no
 * wake-up at all.  A fork child keeps the session (same id, same sites)
 * with a fresh lease: its holder joins it with `renew`, or it ends alone.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>
#include <sys/types.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/internal.h"
#include "dynamic_debug/query.h"

#define LEASE_MIN_MS	100
#define LEASE_MAX_MS	60000
/* A lease whose holder we watch is this many times LEASE_MS: only a backstop
 * against a holder alive but stuck (stopped, hung), for the pidfd ends the
 * session when the holder is gone.  kkctl's 1000 ms make 10 s: ten
 * renewals' time, far more than a renewal takes on a loaded machine (kkctl
 * renews every read, 300 ms while it pauses; with 100 busy writers on two
 * cores, reads came seconds apart). */
#define HELD_FACTOR	10
#define SESSION_MAX_WRITE	(4096 + 64)	/* control's 4096 of queries, and the verb */

struct session {
	uint64_t id;			/* 0: none open */
	unsigned int lease_ms;		/* the lease now: asked_ms, or HELD_FACTOR times it */
	unsigned int asked_ms;		/* LEASE_MS of the begin */
	struct kk_dd_change *sites;	/* the sites it changed */
	size_t n;
	bool warned;			/* said that putting them back failed */
	struct kk_fd holder;		/* pidfd of the holder ("held"); fd -1: none */
	pid_t holder_pid;		/* as our pid namespace sees it */
	struct ddebug_block queries;	/* the begin's, for objects that come later */
};

static struct session sess = { .holder = KK_FD_INIT };	/* under the sites lock */
static uint64_t sess_due;		/* atomic: when the lease ends (now_ms()); 0: no session */
static unsigned int sess_lease;		/* atomic: sess.lease_ms, for kk_dd_session_touch() */
static int sess_watch = -1;		/* atomic: sess.holder.fd, for the endpoint's poll() */

static uint64_t now_ms(void)
{
	return kk_now_ns() / 1000000;
}

/* 64 bits nobody guessed: a holder's id is what lets it renew and end. */
static uint64_t new_id(void)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (kk_now_ns() ^ (uintptr_t)&r) * 0x9e3779b97f4a7c15ull;
	return r ? r : 1;
}

/* The lease runs @ms from now. */
static void lease_set_locked(unsigned int ms)
{
	sess.lease_ms = ms;
	__atomic_store_n(&sess_lease, ms, __ATOMIC_RELAXED);
	__atomic_store_n(&sess_due, now_ms() + ms, __ATOMIC_RELEASE);
}

/* Watch @fd (a pidfd of the process @pid, just opened) as the holder: the
 * session ends when it exits, and the lease becomes a backstop.  Any
 * failure leaves the time lease, and says nothing: a kernel or a seccomp
 * filter that refuses pidfds is no error of the holder's. */
static void holder_set_locked(int fd, pid_t pid)
{
	if (fd < 0 || sess.holder.fd >= 0 || kk_fd_adopt(&sess.holder, fd) < 0) {
		if (fd >= 0 && sess.holder.fd >= 0)
			close(fd);	/* just opened: ours */
		return;
	}
	sess.holder_pid = pid;
	__atomic_store_n(&sess_watch, sess.holder.fd, __ATOMIC_RELEASE);
	lease_set_locked(sess.asked_ms * HELD_FACTOR);
}

/* Stop watching the holder (closed if the number is still our pidfd): the
 * lease is LEASE_MS again, from now. */
static void holder_drop_locked(bool ours)
{
	__atomic_store_n(&sess_watch, -1, __ATOMIC_RELEASE);
	if (ours)
		kk_fd_release(&sess.holder);
	sess.holder.fd = -1;
	sess.holder_pid = 0;
	if (sess.id)
		lease_set_locked(sess.asked_ms);
}

/* Is the holder gone?  A pidfd is readable once its process has exited
 * (SIGKILL included).  If the program closed our number (closefrom()), we
 * forget it and keep the time lease. */
static bool holder_gone_locked(void)
{
	struct pollfd p = { .fd = sess.holder.fd, .events = POLLIN };

	if (sess.holder.fd < 0)
		return false;
	if (!kk_fd_ours(&sess.holder)) {
		holder_drop_locked(false);
		return false;
	}
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

static void close_locked(void)
{
	holder_drop_locked(true);
	__atomic_store_n(&sess_due, 0, __ATOMIC_RELEASE);
	free(sess.sites);
	ddebug_block_free(&sess.queries);
	memset(&sess, 0, sizeof(sess));
	sess.holder.fd = -1;
}

/* Put the sites back and close: 0, or -errno and the session stays open. */
static int end_locked(unsigned long *restored, unsigned long *left)
{
	int ret = kk_dd_restore_locked(sess.sites, sess.n, restored, left);

	if (!ret)
		close_locked();
	return ret;
}

/* The holder is gone, or the lease ended with nobody to renew it: end the
 * session as `end` would. */
static void expire_locked(uint64_t now)
{
	uint64_t due = __atomic_load_n(&sess_due, __ATOMIC_ACQUIRE);
	unsigned long restored, left;
	int ret;

	if (!sess.id || !due || (now < due && !holder_gone_locked()))
		return;
	ret = end_locked(&restored, &left);
	if (!ret)
		return;
	/* Still switched on, and nobody holds it: say so (once), and try again. */
	if (sess.holder.fd >= 0)
		holder_drop_locked(true);	/* (gone: its pidfd would wake us at once) */
	__atomic_store_n(&sess_due, now + sess.lease_ms, __ATOMIC_RELEASE);
	if (!sess.warned)
		kk_warn("dynamic_debug/session %016llx: its lease ended, but putting its %zu sites back "
			"failed (%s); trying again every %u ms", (unsigned long long)sess.id, sess.n,
			strerror(-ret), sess.lease_ms);
	sess.warned = true;
}

/* The endpoint's thread, at the lease's end or the holder's
 * (kk_control_set_timer()). */
static void session_timer(void)
{
	kk_dd_sites_lock();
	expire_locked(now_ms());
	kk_dd_sites_unlock();
}

void kk_dd_session_touch(void)
{
	uint64_t due = __atomic_load_n(&sess_due, __ATOMIC_ACQUIRE);
	uint64_t want;

	do {
		if (!due)
			return;		/* no session: nothing to renew */
		want = now_ms() + __atomic_load_n(&sess_lease, __ATOMIC_RELAXED);
	} while (!__atomic_compare_exchange_n(&sess_due, &due, want, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
}

static uint64_t left_ms(uint64_t now)
{
	uint64_t due = __atomic_load_n(&sess_due, __ATOMIC_ACQUIRE);

	return due > now ? due - now : 0;
}

/* ---- the verbs -------------------------------------------------------------------------- */

/* Exactly 16 hex digits at @s, ending at @s[16] (a space or the end): 0 if not. */
static uint64_t parse_id(const char *s)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (d < 0)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	return !s[i] || kk_is_space((unsigned char)s[i]) ? v : 0;
}

/* The open session is @id, or the one line that says why not (ENOENT). */
static int check_id_locked(const char *arg, struct kk_buf *out)
{
	uint64_t id = parse_id(arg);

	if (!id) {
		kk_buf_printf(out, "expected a session id (16 hex digits), got '%s'\n", arg);
		return -EINVAL;
	}
	if (id == sess.id)
		return 0;
	if (sess.id)
		kk_buf_printf(out, "no session %016llx: the open session is another one\n",
			      (unsigned long long)id);
	else
		kk_buf_printf(out, "no session %016llx: no session is open\n", (unsigned long long)id);
	return -ENOENT;
}

/* After a begin's lease or a renew's id: nothing (0), "held" (1), or
 * -EINVAL with its line. */
static int parse_held(const char *s, const char *verb, struct kk_buf *out)
{
	s += strspn(s, " \t");
	if (!*s)
		return 0;
	if (!strcmp(s, "held"))
		return 1;
	kk_buf_printf(out, "expected 'held' or nothing after %s, got '%s'\n", verb, s);
	return -EINVAL;
}

/* The process whose request this is becomes the holder, if it can be
 * watched and the session has none (a fork child's, joined by its kkctl). */
static void take_holder_locked(void)
{
	pid_t pid;
	int fd;

	if (sess.holder.fd >= 0)
		return;
	fd = kk_control_peer_pidfd(&pid);
	holder_set_locked(fd, pid);
}

/*
 * "renew ID [held]", or a read's "session ID ..." line: a renewal that reaches the open session counts, even
 * one that came after the lease's end (it waited in the backlog while the
 * endpoint did not run): only a holder gone ends it here.
 */
static int do_renew(const char *arg, bool line, struct kk_buf *out)
{
	/* (a read's line written back: its words after the id are not ours) */
	int held = line ? 0 : parse_held(arg + strcspn(arg, " \t"), "renew ID", out), ret;

	if (held < 0)
		return held;
	kk_dd_sites_lock();
	if (sess.id && holder_gone_locked())
		expire_locked(now_ms());
	ret = check_id_locked(arg, out);
	if (!ret) {
		if (held)
			take_holder_locked();
		lease_set_locked(sess.lease_ms);
		kk_buf_printf(out, "session %016llx: lease renewed, %u ms\n",
			      (unsigned long long)sess.id, sess.lease_ms);
	}
	kk_dd_sites_unlock();
	return ret;
}

static int do_end(const char *arg, struct kk_buf *out)
{
	unsigned long restored, left;
	uint64_t id;
	int ret;

	kk_dd_sites_lock();
	expire_locked(now_ms());
	id = sess.id;
	ret = check_id_locked(arg, out);
	if (!ret) {
		ret = end_locked(&restored, &left);
		if (ret)
			kk_buf_printf(out, "session %016llx: putting the sites back failed (%s): "
				      "nothing was changed, the session stays open\n",
				      (unsigned long long)id, ret == -ENOMEM ? "out of memory" :
				      kk_jump_label_strerror());
		else
			kk_buf_printf(out, "session %016llx ended: restored %lu, left %lu\n",
				      (unsigned long long)id, restored, left);
	}
	kk_dd_sites_unlock();
	return ret;
}

/* "no session", as a read printed it: true while none is open. */
static int do_none(const char *arg, struct kk_buf *out)
{
	int ret = 0;

	if (strcmp(arg, "session")) {
		kk_buf_printf(out, "expected 'no session', got 'no %s'\n", arg);
		return -EINVAL;
	}
	kk_dd_sites_lock();
	expire_locked(now_ms());
	if (sess.id) {
		kk_buf_printf(out, "busy: session %016llx is open (its lease ends in %llu ms)\n",
			      (unsigned long long)sess.id, (unsigned long long)left_ms(now_ms()));
		ret = -EBUSY;
	}
	kk_dd_sites_unlock();
	return ret;
}

/* The lease of "begin LEASE_MS [held]": 0, or -EINVAL with its line. */
static int parse_lease(const char *arg, unsigned int *ms, struct kk_buf *out)
{
	unsigned long v = 0;
	const char *p = arg;

	for (; *p >= '0' && *p <= '9' && v <= LEASE_MAX_MS; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (p == arg || (*p && !kk_is_space((unsigned char)*p)) || v < LEASE_MIN_MS ||
	    v > LEASE_MAX_MS) {
		kk_buf_printf(out, "bad lease '%s': expected 'begin LEASE_MS [held]', LEASE_MS from %d to %d; "
			      "no session began\n", arg, LEASE_MIN_MS, LEASE_MAX_MS);
		return -EINVAL;
	}
	*ms = (unsigned int)v;
	return 0;
}

/* The queries, parsed: 0, or the one line that says why not. */
static int parse_queries(const char *text, size_t len, struct ddebug_block *b, struct kk_buf *out)
{
	struct ddebug_msgs m = { 0 };
	unsigned int bad = 0;
	int ret = ddebug_parse_block(text, len, NULL, b, &m, &bad);

	if (ret == -EINVAL) {
		/* the parser's first message says what is wrong */
		const char *why = m.buf ? m.buf : "";
		size_t wl = strcspn(why, "\n");

		if (!strncmp(why, "dyndbg: ", 8) && wl >= 8) {
			why += 8;
			wl -= 8;
		}
		kk_buf_printf(out, "query %u is malformed (%.*s): no session began\n", bad,
			      (int)wl, why);
	} else if (ret) {
		kk_buf_printf(out, "out of memory: no session began\n");
	} else if (!b->n) {
		kk_buf_printf(out, "no query after 'begin LEASE_MS': no session began\n");
		ddebug_block_free(b);
		ret = -EINVAL;
	}
	ddebug_msgs_free(&m);
	return ret;
}

/* The last line of @why (the reason a block was refused), into @out. */
static void last_line(const struct kk_buf *why, struct kk_buf *out)
{
	const char *s = why->data ? why->data : "", *e = s + why->len, *b;

	while (e > s && e[-1] == '\n')
		e--;
	for (b = e; b > s && b[-1] != '\n'; b--)
		;
	kk_buf_printf(out, "%.*s\n", (int)(e - b), b);
}

/* Under the sites lock: apply @b and open the session (@held: its writer
 * holds it), which takes @b on success. */
static int begin_locked(struct ddebug_block *b, unsigned int lease, bool held,
			struct kk_buf *out)
{
	struct kk_dyndbg_result res;
	struct kk_buf why = { 0 };
	struct kk_dd_change *ch;
	uint64_t now = now_ms();
	size_t n;
	int ret;

	expire_locked(now);
	if (sess.id) {
		kk_buf_printf(out, "busy: session %016llx is open (its lease ends in %llu ms)\n",
			      (unsigned long long)sess.id, (unsigned long long)left_ms(now));
		return -EBUSY;
	}
	ret = kk_dd_apply_locked(b, NULL, &res, &ch, &n, &why);
	if (ret) {
		last_line(&why, out);
		kk_buf_free(&why);
		return ret;
	}
	kk_buf_free(&why);
	sess = (struct session){ new_id(), lease, lease, ch, n, false, KK_FD_INIT, 0, *b };
	*b = (struct ddebug_block){ 0 };
	lease_set_locked(lease);
	if (held)
		take_holder_locked();
	kk_dd_tr_raw_session_begun();
	kk_buf_printf(out, "session %016llx: matched %lu changed %zu\n", (unsigned long long)sess.id,
		      res.matched, n);
	return 0;
}

static int do_begin(const char *arg, const char *rest, size_t rlen, struct kk_buf *out)
{
	struct ddebug_block b;
	unsigned int lease;
	int ret, held;

	ret = parse_lease(arg, &lease, out);
	held = ret ? 0 : parse_held(arg + strspn(arg, "0123456789"), "begin LEASE_MS", out);
	if (!ret && held >= 0)
		ret = parse_queries(rest, rlen, &b, out);
	if (ret || held < 0)
		return ret ? ret : held;
	kk_control_set_timer(&sess_due, &sess_watch, session_timer);
	kk_dd_sites_lock();
	ret = begin_locked(&b, lease, held, out);
	kk_dd_sites_unlock();
	ddebug_block_free(&b);
	if (!ret)
		kk_control_timer_kick();	/* a begin from another thread than the endpoint's */
	return ret;
}

/* ---- the file --------------------------------------------------------------------------- */

static int session_show(struct kk_buf *out, void *priv)
{
	uint64_t now = now_ms();

	(void)priv;
	kk_dd_sites_lock();
	expire_locked(now);
	if (sess.id && sess.holder.fd >= 0)
		kk_buf_printf(out, "session %016llx lease_ms %u expires_in_ms %llu sites %zu "
			      "holder %d\n", (unsigned long long)sess.id, sess.lease_ms,
			      (unsigned long long)left_ms(now), sess.n, (int)sess.holder_pid);
	else if (sess.id)
		kk_buf_printf(out, "session %016llx lease_ms %u expires_in_ms %llu sites %zu\n",
			      (unsigned long long)sess.id, sess.lease_ms,
			      (unsigned long long)left_ms(now), sess.n);
	else
		kk_buf_printf(out, "no session\n");
	kk_dd_sites_unlock();
	return out->error;
}

/*
 * "begin LEASE_MS" and the queries on the lines after it; "renew ID"; "end
 * ID"; and what a read prints, written back: "no session" (true while none
 * is open) and "session ID ..." (renews it).
 */
static int session_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	const char *end = buf + len, *nl = memchr(buf, '\n', len), *rest = nl ? nl + 1 : end;
	size_t line = (size_t)((nl ? nl : end) - buf), vl;
	char first[128], *arg;

	(void)priv;
	while (line && kk_is_space((unsigned char)buf[line - 1]))
		line--;
	while (line && kk_is_space((unsigned char)*buf)) {
		buf++;
		line--;
	}
	if (line >= sizeof(first)) {	/* no word of ours is this long: not cut, refused */
		kk_buf_printf(out, "the first line is too long (%zu bytes, at most %zu): expected "
			      "'begin LEASE_MS' (and 'held'), 'renew ID' (and 'held') or 'end ID'\n",
			      line, sizeof(first) - 1);
		return -EINVAL;
	}
	memcpy(first, buf, line);
	first[line] = '\0';
	vl = strcspn(first, " \t");
	arg = first + vl + strspn(first + vl, " \t");
	first[vl] = '\0';
	if (!strcmp(first, "begin"))
		return do_begin(arg, rest, (size_t)(end - rest), out);
	if (!strcmp(first, "renew") || !strcmp(first, "session"))
		return do_renew(arg, first[0] == 's', out);
	if (!strcmp(first, "end"))
		return do_end(arg, out);
	if (!strcmp(first, "no"))
		return do_none(arg, out);
	kk_buf_printf(out, "expected 'begin LEASE_MS' (and 'held') and queries, 'renew ID' (and 'held') or 'end ID'\n");
	return -EINVAL;
}

static const struct kk_control_file_ops session_fops = {
	.show = session_show,
	.write = session_write,
	.max_write = SESSION_MAX_WRITE,
};
KK_CONTROL_LIB_FILE(session_file, "dynamic_debug/session", &session_fops);

/* fork(): the child keeps the session, with a lease of its own from now,
 * LEASE_MS as the begin asked: its parent's holder did not begin it here, so
 * the child's copy of the pidfd is closed, and the kkctl that joins it with
 * `renew ID held` becomes its holder.  (The sites lock is held across the
 * fork: the state is whole.) */
static void session_child(void)
{
	if (sess.holder.fd >= 0)
		holder_drop_locked(true);
	if (sess.id)
		lease_set_locked(sess.asked_ms);
	kk_dd_tr_raw_session_begun();	/* (the kkctl that joins it reads it first) */
}

static const struct kk_fork_ops session_fork_ops = {
	KK_INIT_DYNDBG, NULL, NULL, session_child
};

void kk_dd_session_init(void)
{
	kk_fork_register(&session_fork_ops);
	kk_control_add_lib_file(&session_file);
}

/*
 * An object's sites come while a session is open: its queries apply to them
 * as to the others, and its end puts them back.  A process loads its shared
 * libraries one by one, and a kkctl record can begin before the last (or a
 * dlopen can come at any time): without this, the sites of what came after
 * the begin stayed off for the whole session.  Failing (out of memory) the
 * object is left as it is, as a refused begin leaves every site.
 */
void kk_dd_session_add_locked(struct ddebug_table *t, size_t nsites)
{
	struct kk_dyndbg_result res;
	struct kk_buf why = { 0 };
	struct kk_dd_change *ch, *v;
	size_t n;

	if (!sess.id || !sess.queries.n || !nsites)
		return;
	/* Room for every site the table has, before anything changes: it can
	 * change no more, and a failure then changes nothing. */
	v = realloc(sess.sites, (sess.n + nsites) * sizeof(*v));
	if (!v)
		return;
	sess.sites = v;
	if (!kk_dd_apply_locked(&sess.queries, t, &res, &ch, &n, &why) && n) {
		memcpy(v + sess.n, ch, n * sizeof(*v));
		sess.n += n;
		free(ch);
	}
	kk_buf_free(&why);
}

/* An object's sites go: remember them as gone (an end counts them as left). */
static int addr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct _ddebug *const *)a;
	uintptr_t y = (uintptr_t)*(struct _ddebug *const *)b;

	return x < y ? -1 : x > y;
}

void kk_dd_session_forget_locked(struct _ddebug *const *sites, size_t n)
{
	for (size_t i = 0; i < sess.n && n; i++)
		if (sess.sites[i].dp && bsearch(&sess.sites[i].dp, sites, n, sizeof(*sites), addr_cmp))
			sess.sites[i].dp = NULL;
}
