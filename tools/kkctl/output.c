// SPDX-License-Identifier: MIT
/*
 * kkctl: output: text or --json, and nothing a process sent reaches the
 * terminal raw.
 */
#include <stdio.h>
#include <string.h>

#include "kkctl.h"

/*
 * Print what a process sent us with its control characters escaped: the
 * process is not trusted to write to our terminal.  @keep: "\n\t" for file
 * text, "" for one-line fields.
 */
void kkctl_put_escaped(FILE *f, const char *s, size_t n, const char *keep)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(c && strchr(keep, c))) || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else if (c == '\\' && *keep == '\0')
			fputs("\\\\", f);
		else
			putc(c, f);
	}
}

/* A JSON string: quotes, backslashes and every control character escaped. */
void kkctl_put_json(FILE *f, const char *s, size_t n)
{
	putc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

/* Print @t's container: " [container HOST, pid N, cgroup PATH, net:[INO]]" in
 * text, ',"pid_inside":N,"container":{..}' in JSON; nothing if it is in
 * ours. */
static void put_container(FILE *f, const struct target *t)
{
	if (!t->contained)
		return;
	if (kkctl_json) {
		fprintf(f, ",\"pid_inside\":%d,\"container\":{", (int)t->inpid);
		if (t->host[0]) {
			fputs("\"hostname\":", f);
			kkctl_put_json(f, t->host, strlen(t->host));
			putc(',', f);
		}
		fputs("\"cgroup\":", f);
		kkctl_put_json(f, t->cgroup, strlen(t->cgroup));
		fprintf(f, ",\"netns\":%lu}", t->netns);
		return;
	}
	fputs("  [", f);
	if (t->host[0]) {
		fputs("container ", f);
		kkctl_put_escaped(f, t->host, strlen(t->host), "");
		fputs(", ", f);
	}
	fprintf(f, "pid %d inside", (int)t->inpid);
	if (t->cgroup[0]) {
		fputs(", cgroup ", f);
		kkctl_put_escaped(f, t->cgroup, strlen(t->cgroup), "");
	}
	if (t->netns)
		fprintf(f, ", net:[%lu]", t->netns);
	putc(']', f);
}

/* ,"KEY":"S" */
static void put_json_field(const char *key, const char *s, size_t n)
{
	printf(",\"%s\":", key);
	kkctl_put_json(stdout, s, n);
}

/* A target's JSON object up to its "ok": {"pid":..,"name":..,"uid":..,
 * its container, "ok":BOOL -- the same for ls and for a reply. */
void kkctl_put_json_head(const struct target *t, bool ok)
{
	printf("{\"pid\":%d,\"name\":", (int)t->pid);
	kkctl_put_json(stdout, t->name, strlen(t->name));
	printf(",\"uid\":%ld", t->uid == (uid_t)-1 ? -1L : (long)t->uid);
	put_container(stdout, t);
	printf(",\"ok\":%s", ok ? "true" : "false");
}

static void report_json(const struct target *t, const struct result *r)
{
	kkctl_put_json_head(t, r->ok);
	if (r->ok) {
		put_json_field("reply", r->body, r->len);
	} else {
		if (r->gone && t->selected && !t->reached)	/* no failure */
			fputs(",\"gone\":true", stdout);
		put_json_field("error", r->err, strlen(r->err));
		if (r->body && r->len)
			put_json_field("message", r->body, r->len);
		if (r->note[0])
			put_json_field("note", r->note, strlen(r->note));
	}
	fputs("}\n", stdout);
}

/* A failure goes to stderr, after what is already on stdout. */
static void report_failure(const struct target *t, const struct result *r, bool many)
{
	fflush(stdout);
	/* A process a selector found is named in its line, even alone: it
	 * may not be the one the caller thought of. */
	if ((r->named || many || t->selected) && strcmp(t->name, "?")) {
		fprintf(stderr, "%s: process %d (", kkctl_prog, (int)t->pid);
		kkctl_put_escaped(stderr, t->name, strlen(t->name), "");
		fputs("): ", stderr);
	} else if (r->named || many || t->selected)
		fprintf(stderr, "%s: process %d: ", kkctl_prog, (int)t->pid);
	else
		fprintf(stderr, "%s: ", kkctl_prog);
	kkctl_put_escaped(stderr, r->err, strlen(r->err), "");
	if (r->body && r->len) {
		fputs(": ", stderr);
		kkctl_put_escaped(stderr, r->body, r->len, "\n\t");
	}
	if (r->note[0])
		fprintf(stderr, " (%s)", r->note);
	fputc('\n', stderr);
}

/* Print target @t's reply, or why there is none; with @many, each reply
 * after a "==> PID NAME <==" line. */
void kkctl_report(const struct target *t, const struct result *r, bool many)
{
	if (kkctl_json && r->ok && r->trace_clock) {
		kkctl_report_trace(t, r);	/* one object a record */
		return;
	}
	if (kkctl_json) {
		report_json(t, r);
		return;
	}
	if (!r->ok) {
		report_failure(t, r, many);
		return;
	}
	if (many) {
		printf("==> %d ", (int)t->pid);
		kkctl_put_escaped(stdout, t->name, strlen(t->name), "");
		printf(" <==\n");
	}
	kkctl_put_escaped(stdout, r->body, r->len, "\n\t");
}

/* ls's header line (none in JSON). */
void kkctl_report_ls_header(void)
{
	if (!kkctl_json)
		printf("%-8s %-6s %s\n", "PID", "UID", "COMMAND");
}

/* ls's line for @t: reachable (@ok), or why not (@r). */
void kkctl_report_ls(const struct target *t, bool ok, const struct result *r)
{
	if (kkctl_json) {
		kkctl_put_json_head(t, ok);
		if (!ok) {
			put_json_field("error", r->err, strlen(r->err));
			if (r->note[0])
				put_json_field("note", r->note, strlen(r->note));
		}
		fputs("}\n", stdout);
		return;
	}
	if (t->uid == (uid_t)-1)
		printf("%-8d %-6s ", (int)t->pid, "?");
	else
		printf("%-8d %-6u ", (int)t->pid, (unsigned)t->uid);
	kkctl_put_escaped(stdout, t->name, strlen(t->name), "");
	put_container(stdout, t);
	if (!ok) {
		fputs("  (unreachable: ", stdout);
		kkctl_put_escaped(stdout, r->err, strlen(r->err), "");
		if (r->note[0]) {
			fputs("; ", stdout);
			kkctl_put_escaped(stdout, r->note, strlen(r->note), "");
		}
		putchar(')');
	}
	putchar('\n');
}
