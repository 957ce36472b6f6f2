/* SPDX-License-Identifier: MIT */
/*
 * The C++ name of a site: which instantiation its function is.  __func__ is
 * "push" for Ring<int>::push and Ring<std::string>::push alike (the kernel's
 * `func`, kept as it is); the header lists __PRETTY_FUNCTION__ next to the
 * site's address in kk_dyndbg_names, and this file makes the qualified name
 * of it, "Ring<int>::push", which the listing shows (func:"...") and `func`
 * matches too.  The compilers spell the instantiation differently:
 *
 *	g++	void Ring<T>::push(const T&) [with T = int]
 *	clang++	void Ring<int>::push(const int &)
 *	g++	T twice(T) [with T = long int]       clang++  long twice(long) [T = long]
 *
 * so the name is the function's qualified name (no return type, no
 * parameters) with the bindings put in for the template parameters, and the
 * parameters that are not in it (a function template's own) appended:
 * "twice<long int>" (g++), "twice<long>" (clang++).  The template arguments
 * stay as the compiler spells them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include "common/internal.h"
#include "dynamic_debug/internal.h"

#define CXX_MAX_BINDINGS 16

/* One "NAME = VALUE" of the bindings; @used once the name put it in. */
struct binding {
	const char *name, *value;
	size_t nlen, vlen;
	int used;
};

static int is_ident(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int opens(char c)
{
	return c == '<' || c == '(' || c == '[' || c == '{';
}

static int closes(char c)
{
	return c == '>' || c == ')' || c == ']' || c == '}';
}

/* The bindings "[with T = int; U = long]" (g++) or "[T = int, U = long]" (clang++) at the end. */
static size_t split_bindings(const char *s, size_t len, const char **bind, size_t *blen, int *gnu)
{
	int depth = 0;

	*bind = NULL;
	if (!len || s[len - 1] != ']')
		return len;
	for (size_t i = len; i-- > 0;) {
		depth += closes(s[i]) - opens(s[i]);
		if (depth || i == 0 || s[i - 1] != ' ')
			continue;
		*bind = s + i + 1;
		*blen = len - i - 2;
		*gnu = *blen >= 5 && !strncmp(*bind, "with ", 5);
		if (*gnu) {
			*bind += 5;
			*blen -= 5;
		}
		return i - 1;
	}
	return len;
}

static size_t trim(const char **p, size_t n)
{
	while (n && **p == ' ')
		(*p)++, n--;
	while (n && (*p)[n - 1] == ' ')
		n--;
	return n;
}

/* Split the bindings at the top-level ';' (g++) or ',' (clang++). */
static size_t parse_bindings(const char *b, size_t blen, struct binding *v)
{
	char sep = memchr(b, ';', blen) ? ';' : ',';
	size_t n = 0, start = 0;
	int depth = 0;

	for (size_t i = 0; i <= blen && n < CXX_MAX_BINDINGS; i++) {
		const char *e, *name;
		size_t l;

		if (i < blen) {
			depth += opens(b[i]) - closes(b[i]);
			if (depth || b[i] != sep)
				continue;
		}
		e = strstr(b + start, " = ");
		if (e && e < b + i) {
			/* the last word before " = ": "int N = 3" binds N */
			for (name = e; name > b + start && is_ident(name[-1]); name--)
				;
			v[n] = (struct binding){ name, e + 3, (size_t)(e - name),
						 (size_t)(b + i - e - 3), 0 };
			l = trim(&v[n].value, v[n].vlen);
			if (l >= 2 && v[n].value[0] == '{' && v[n].value[l - 1] == '}') {
				v[n].value++;	/* a pack: {int, long} */
				l -= 2;
			}
			v[n++].vlen = l;
		}
		start = i + 1;
	}
	return n;
}

/* [*start, end): the qualified name in the signature @s (@len bytes). */
static void name_bounds(const char *s, size_t len, size_t *start, size_t *end)
{
	const char *close = NULL;
	int depth = 0;

	*start = 0;
	*end = len;
	for (size_t i = len; i-- > 0 && !close;)
		if (s[i] == ')')
			close = s + i;
		else if (!is_ident(s[i]) && s[i] != ' ' && s[i] != '&')
			break;		/* "f()::<lambda()>": no parameter list at the end */
	for (const char *p = close; p && p-- > s;) {
		depth += (*p == ')') - (*p == '(');
		if (*p == '(' && depth < 0) {
			*end = (size_t)(p - s);
			break;
		}
	}
	depth = 0;
	for (size_t i = 0; i < *end; i++) {
		if (!depth && !strncmp(s + i, "operator", 8) && (!i || !is_ident(s[i - 1])) &&
		    !is_ident(s[i + 8]))
			break;		/* operator<, operator(): the rest is its name */
		depth += opens(s[i]) - closes(s[i]);
		if (!depth && s[i] == ' ')
			*start = i + 1;
	}
	while (*start < *end && (s[*start] == '*' || s[*start] == '&'))
		(*start)++;
}

/* @s[0..n) with every identifier that a binding names replaced by its value. */
static void substitute(struct kk_buf *out, const char *s, size_t n, struct binding *v, size_t nv)
{
	for (size_t i = 0; i < n;) {
		size_t j = i, k;

		if (!is_ident(s[i]) || (i && is_ident(s[i - 1]))) {
			kk_buf_write(out, s + i, 1);
			i++;
			continue;
		}
		while (j < n && is_ident(s[j]))
			j++;
		for (k = 0; k < nv; k++)
			if (v[k].nlen == j - i && !strncmp(v[k].name, s + i, j - i))
				break;
		if (k < nv) {
			kk_buf_write(out, v[k].value, v[k].vlen);
			v[k].used = 1;
		} else {
			kk_buf_write(out, s + i, j - i);
		}
		i = j;
	}
}

/*
 * clang++ puts the class's arguments in the name ("ring<int>::em(U) [T = int,
 * U = long]") and lists its parameters first: the number of template
 * arguments in the qualifier of @s[0..n) is the number of bindings that are
 * not the function's own.
 */
static size_t class_args(const char *s, size_t n)
{
	size_t qual = 0, count = 0;
	int depth = 0;

	for (size_t i = 0; i + 1 < n; i++) {
		depth += opens(s[i]) - closes(s[i]);
		if (!depth && s[i] == ':' && s[i + 1] == ':')
			qual = i;
	}
	depth = 0;
	for (size_t i = 0; i < qual; i++) {
		if (s[i] == '<' && !depth)
			count++;
		else if (s[i] == ',' && depth == 1)
			count++;
		depth += opens(s[i]) - closes(s[i]);
	}
	return count;
}

/* The qualified name of the instantiation @pretty names (malloc'ed), or NULL. */
static char *cxx_qname(const char *pretty)
{
	struct binding v[CXX_MAX_BINDINGS];
	struct kk_buf out = { 0 };
	const char *bind;
	size_t blen = 0, nv = 0, start, end, len, extra = 0, own = 0;
	int gnu = 0;

	len = split_bindings(pretty, strlen(pretty), &bind, &blen, &gnu);
	if (bind)
		nv = parse_bindings(bind, blen, v);
	name_bounds(pretty, len, &start, &end);
	substitute(&out, pretty + start, end - start, v, nv);
	/* g++ names the class's parameters in the name: the ones left are the function's */
	if (!gnu)
		own = class_args(pretty + start, end - start);
	for (size_t k = own; k < nv; k++) {
		if (v[k].used)
			continue;
		kk_buf_write(&out, extra ? ", " : "<", extra ? 2 : 1);
		extra++;
		kk_buf_write(&out, v[k].value, v[k].vlen);
	}
	if (extra)
		kk_buf_write(&out, ">", 1);
	if (out.error || !out.len) {
		kk_buf_free(&out);
		return NULL;
	}
	return out.data;
}

/* ---- the names, by site ------------------------------------------------------------ */

struct cxx_name {
	const struct _ddebug *desc;
	char *name;
};

/* Under the sites' lock (ddebug_lock), which fork already takes care of. */
static struct cxx_name *names;	/* sorted by desc */
static size_t nnames;

static int name_cmp(const void *a, const void *b)
{
	const struct cxx_name *x = a, *y = b;

	return x->desc < y->desc ? -1 : x->desc > y->desc;
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct _ddebug *const *)a;
	uintptr_t y = (uintptr_t)*(struct _ddebug *const *)b;

	return x < y ? -1 : x > y;
}

static struct cxx_name *find_locked(const struct _ddebug *d)
{
	struct cxx_name key = { d, NULL };

	return nnames ? bsearch(&key, names, nnames, sizeof(*names), name_cmp) : NULL;
}

/* Sort, and keep the first name of a site named twice (an entry of several objects). */
static void sort_unique_locked(void)
{
	size_t k = 0;

	qsort(names, nnames, sizeof(*names), name_cmp);
	for (size_t i = 0; i < nnames; i++) {
		if (k && names[k - 1].desc == names[i].desc)
			free(names[i].name);
		else
			names[k++] = names[i];
	}
	nnames = k;
}

/* The names of @start..@stop, made before the lock: *@k of them. */
static struct cxx_name *make_names(const struct kk_dyndbg_name *start, size_t n, size_t *k)
{
	struct cxx_name *add = calloc(n, sizeof(*add));

	*k = 0;
	for (size_t i = 0; add && i < n; i++) {
		const struct _ddebug *d = start[i].desc;
		char *q = d && start[i].pretty ? cxx_qname(start[i].pretty) : NULL;

		if (q && strcmp(q, d->function))	/* "f" for f: nothing to add */
			add[(*k)++] = (struct cxx_name){ d, q };
		else
			free(q);
	}
	return add;
}

/*
 * Name the sites of @start..@stop.  A site named already keeps its name (an
 * inline function's entry in several objects); a name equal to __func__ is
 * not kept.  Out of memory: no new name, one line says so, -ENOMEM.
 */
KK_EXPORT int kk_dyndbg_add_names(const struct kk_dyndbg_name *start, const struct kk_dyndbg_name *stop)
{
	size_t n = start && stop > start ? (size_t)(stop - start) : 0, k = 0;
	struct cxx_name *add, *all = NULL;

	if (!n)
		return 0;
	add = make_names(start, n, &k);
	kk_dd_sites_lock();
	if (add && k)
		all = realloc(names, (nnames + k) * sizeof(*names));
	if (all) {
		names = all;
		memcpy(names + nnames, add, k * sizeof(*add));
		nnames += k;
		sort_unique_locked();
	}
	kk_dd_sites_unlock();
	if (add && (all || !k)) {
		free(add);
		return 0;
	}
	for (size_t i = 0; add && i < k; i++)
		free(add[i].name);
	free(add);
	fprintf(stderr, "kernelkit: out of memory naming C++ dynamic-debug sites: "
		"they are listed by __func__ only\n");
	return -ENOMEM;
}

const char *kk_dd_cxx_name_locked(const struct _ddebug *d)
{
	const struct cxx_name *c = find_locked(d);

	return c ? c->name : NULL;
}

/* @sites (sorted by address) are going away with their object. */
void kk_dd_cxx_names_forget_locked(struct _ddebug *const *sites, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < nnames; i++) {
		const struct _ddebug *d = names[i].desc;

		if (n && bsearch(&d, sites, n, sizeof(*sites), ptr_cmp))
			free(names[i].name);
		else
			names[k++] = names[i];
	}
	nnames = k;
}
