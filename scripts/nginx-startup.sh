#!/bin/sh
# SPDX-License-Identifier: MIT
# What adopting kernelkit costs nginx's start (issue 41): `nginx -t` of a
# stock nginx against the same nginx adopted as docs/adoption.md (example 2,
# step 1) says: only src/core/ngx_log.h changes, each ngx_log_debugN() becomes
# a dynamic-debug site (_dynamic_func_call_cls_no_desc, class = its category)
# that calls nginx's own ngx_log_error_core() when on.  Not part of make check
# (it needs an nginx source tree; nothing here uses the network).
#   scripts/nginx-startup.sh NGINX_SRC [BUILD]
# NGINX_SRC: an nginx source tree (e.g. `git archive release-1.31.4` of
# github.com/nginx/nginx).  BUILD: kernelkit's build directory (default
# build; libkernelkit.so and kkctl must be built).  Builds BUILD/nginx-stock
# and BUILD/nginx-kk with the same configure line, then prints:
#   - the adopted nginx's sites (kkctl read dynamic_debug/control on a running
#     nginx) and its static-key entries;
#   - PAIRS (default 400) interleaved pairs of `nginx -t` (the order
#     alternates each pair): the median wall time of each, the median of the
#     pair ratios, the median minor page faults; with the environment as it
#     is and with KK_CONTROL=0; the load average before and after;
#   - callgrind instructions of `nginx -t` for both (load-independent) and the
#     inclusive cost of what kernelkit runs: the objects' registration
#     (kk_jump_label_add_object, kk_dyndbg_add_object, from the program's
#     constructors) and deregistration at exit, the library's constructors
#     (_dl_init, against stock's), the loader's relocation (_dl_relocate_object);
#   - LD_DEBUG=statistics of both (relocations).
# Environment: PAIRS; NGX_CONFIGURE (default --with-debug; the same for both);
# CHRT (e.g. "chrt -f 10": prefix of the timed pairs, as in docs/results.md);
# JOBS (make -j, default 2); NGX_KEEP=1 reuses builds already there.
set -eu
[ $# -ge 1 ] || { echo "usage: scripts/nginx-startup.sh NGINX_SRC [BUILD]" >&2; exit 2; }
ngx=$(cd "$1" && pwd)
B=$(cd "${2:-build}" && pwd)
kk=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=${PAIRS:-400}
NGX_CONFIGURE=${NGX_CONFIGURE:---with-debug}
CHRT=${CHRT:-}
die() { echo "nginx-startup: $*" >&2; exit 1; }
[ -f "$ngx/auto/configure" ] && [ -f "$ngx/src/core/ngx_log.h" ] || die "$ngx: not an nginx source tree"
[ -f "$B/libkernelkit.so" ] && [ -x "$B/kkctl" ] || die "$B: libkernelkit.so and kkctl not built (make)"
run=$B/nginx-run
rm -rf "$run"
mkdir -p "$run/conf" "$run/logs"

# The adopted header: perl rewrites ngx_log.h (fails if nginx changed it).
adopt_header() {
	perl -e '
undef $/; $_ = <STDIN>;
my $inc = <<"E";
#include <ngx_core.h>

/*
 * kernelkit (docs/adoption.md, example 2, step 1): every ngx_log_debugN() is
 * a dynamic-debug site of module "nginx" in the class of its category; the
 * site is the only test, and nginx own formatter prints the line.
 */
#define KK_MODNAME "nginx"
#include <kernelkit/dynamic_debug.h>
DECLARE_DYNDBG_CLASSMAP(ngx_kk_debug_classes, DD_CLASS_TYPE_DISJOINT_BITS, 0,
    "NGX_DEBUG_CORE", "NGX_DEBUG_ALLOC", "NGX_DEBUG_MUTEX", "NGX_DEBUG_EVENT",
    "NGX_DEBUG_HTTP", "NGX_DEBUG_MAIL", "NGX_DEBUG_STREAM");
#define ngx_kk_class(level)  (__builtin_ctz(level) - 4)
#define ngx_kk_fmt(fmt, ...)  fmt
E
s/#include <ngx_core.h>\n/$inc/ or die "ngx_log.h: no #include <ngx_core.h>\n";
my $new = <<"E";
#define ngx_log_debug(level, log, err, ...)                                   \\
    _dynamic_func_call_cls_no_desc(ngx_kk_class(level),                       \\
        ngx_kk_fmt(__VA_ARGS__, 0), ngx_log_error_core, NGX_LOG_DEBUG, log,   \\
        err, __VA_ARGS__)
E
s/#define ngx_log_debug\(level, log, \.\.\.\)\s*\\\n[^\n]*\\\n[^\n]*__VA_ARGS__\)\n/$new/
	or die "ngx_log.h: no C99 ngx_log_debug() to replace\n";
print;'
}

# build stock|kk: a copy of the source in BUILD/nginx-$1/src, objs beside it
build() {
	d=$B/nginx-$1
	if [ "${NGX_KEEP:-0}" = 1 ] && [ -x "$d/objs/nginx" ]; then return 0; fi
	rm -rf "$d"
	mkdir -p "$d"
	cp -a "$ngx" "$d/src"
	if [ "$1" = kk ]; then
		adopt_header < "$ngx/src/core/ngx_log.h" > "$d/src/src/core/ngx_log.h"
		set -- --with-cc-opt="-I$kk/include" \
			--with-ld-opt="-L$B -lkernelkit -Wl,-rpath,$B"
	else
		set --
	fi
	# shellcheck disable=SC2086 # NGX_CONFIGURE is a list of options
	(cd "$d/src" && ./auto/configure $NGX_CONFIGURE --prefix="$run" \
		--builddir="$d/objs" "$@" > "$d/configure.log" 2>&1 &&
		make -j"${JOBS:-2}" -f "$d/objs/Makefile" > "$d/make.log" 2>&1) ||
		die "building $d failed: see $d/configure.log, $d/make.log"
}
echo "nginx: $ngx ($(sed -n 's/#define NGINX_VERSION *//p' "$ngx/src/core/nginx.h"))," \
	"configure $NGX_CONFIGURE"
build stock
build kk
stock=$B/nginx-stock/objs/nginx
adopted=$B/nginx-kk/objs/nginx

cat > "$run/conf/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
error_log logs/error.log;
pid logs/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    server { listen unix:$run/nginx.sock; location / { return 204; } }
}
EOF
set -- -t -p "$run/" -c conf/nginx.conf
"$stock" "$@" 2>/dev/null || die "stock nginx -t failed"
"$adopted" "$@" 2>/dev/null || die "adopted nginx -t failed"

# The sites: a running adopted nginx, read through its endpoint.
count_sites() {
	rm -f "$run/logs/nginx.pid"
	"$adopted" -p "$run/" -c conf/nginx.conf 2>/dev/null &
	pid=$!
	i=0	# the pid file is written after the constructors: the endpoint is up
	while [ ! -s "$run/logs/nginx.pid" ] && kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.05; i=$((i + 1))
	done
	sites=$("$B/kkctl" -p $pid read dynamic_debug/control | grep -vc '^#') || sites=?
	entries=$(readelf -SW "$adopted" | awk '$2 == "kk_jump_table" { print $6 }')
	echo "sites: $sites (kkctl -p PID read dynamic_debug/control), static-key entries:" \
		"$(( 0x$entries / 16 )) (kk_jump_table $((0x$entries)) bytes)"
	kill $pid
	wait $pid 2>/dev/null || true
}
count_sites

# The pair timer: posix_spawn to wait4, medians (time, pair ratio, minor faults).
cc -O2 -o "$run/pairs" -x c - <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}
static double run(char **argv, double *flt)
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	double t0 = now();
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) ||
	    wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "pairs: %s failed\n", argv[0]);
		exit(1);
	}
	*flt = (double)ru.ru_minflt;
	return now() - t0;
}
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}
static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
/* pairs N A B ARGS...: A ARGS and B ARGS, N pairs, the first of each pair alternating */
int main(int argc, char **argv)
{
	int n = argc > 3 ? atoi(argv[1]) : 0;
	double *v = calloc(5 * (size_t)(n > 0 ? n : 1), sizeof(double));
	double *a = v, *b = v + n, *r = v + 2 * n, *fa = v + 3 * n, *fb = v + 4 * n;
	char **pa = calloc((size_t)argc, sizeof(char *)), **pb = calloc((size_t)argc, sizeof(char *));

	if (n <= 0 || !v || !pa || !pb)
		return 2;
	pa[0] = argv[2];
	pb[0] = argv[3];
	for (int i = 4; i < argc; i++)
		pa[i - 3] = pb[i - 3] = argv[i];
	for (int i = 0; i < n; i++) {
		if (i % 2) {
			b[i] = run(pb, &fb[i]);
			a[i] = run(pa, &fa[i]);
		} else {
			a[i] = run(pa, &fa[i]);
			b[i] = run(pb, &fb[i]);
		}
		r[i] = b[i] / a[i];
	}
	printf("stock %.1f us, adopted %.1f us: ratio %.3f, pair ratio %.3f;"
	       " minor faults %.0f, %.0f\n", median(a, n) / 1e3, median(b, n) / 1e3,
	       median(b, n) / median(a, n), median(r, n), median(fa, n), median(fb, n));
	return 0;
}
EOF
load() { cut -d' ' -f1-3 /proc/loadavg; }
pairs() {	# LABEL ENV...
	l=$1
	shift
	a=$(load)
	# shellcheck disable=SC2086 # CHRT is a command prefix
	r=$(env "$@" $CHRT "$run/pairs" "$PAIRS" "$stock" "$adopted" -t -p "$run/" -c conf/nginx.conf) ||
		die "the timed runs failed"
	echo "$l, $PAIRS pairs: $r (load $a -> $(load))"
}
echo "nginx -t, medians of interleaved pairs${CHRT:+ under $CHRT}:"
pairs "  as is"
pairs "  KK_CONTROL=0" KK_CONTROL=0

# Callgrind: instructions, and the inclusive cost of the functions named.
if command -v valgrind > /dev/null 2>&1 && command -v callgrind_annotate > /dev/null 2>&1; then
	fns='_dl_start _dl_relocate_object _dl_init __kk_jump_label_ctor kk_jump_label_add_object
sift_down __kk_dyndbg_ctor kk_dyndbg_add_object kk_control_autostart
__kk_jump_label_dtor kk_jump_label_del_object __kk_dyndbg_dtor kk_dyndbg_del_object main'
	echo "callgrind, nginx -t (instructions; inclusive, with all they call):"
	for v in stock kk; do
		bin=$stock
		[ $v = kk ] && bin=$adopted
		env KK_CONTROL="${KK_CONTROL-}" valgrind --tool=callgrind \
			--callgrind-out-file="$run/cg.$v" "$bin" -t -p "$run/" -c conf/nginx.conf \
			2> "$run/vg.$v" || die "callgrind of $v failed: $run/vg.$v"
		total=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$run/vg.$v")
		callgrind_annotate --inclusive=yes --threshold=100 "$run/cg.$v" 2> /dev/null |
			tr -d , | sed 's/([ 0-9.]*%)//' | awk -v fns="$fns" -v v=$v -v total="$total" '
			BEGIN { n = split(fns, f, /[ \n]+/); for (i = 1; i <= n; i++) want[f[i]] = 1 }
			$1 ~ /^[0-9]+$/ && $2 ~ /:/ { fn = $2; sub(/.*:/, "", fn)
				if ((fn in want) && $1 + 0 > got[fn]) got[fn] = $1 + 0 }
			END { printf "  %-6s total %d\n", v, total
				for (i = 1; i <= n; i++) if (f[i] in got) printf "  %-6s %-26s %d\n", v, f[i], got[f[i]] }'
	done
else
	echo "callgrind: not run (no valgrind)"
fi

echo "LD_DEBUG=statistics:"
for v in stock kk; do
	bin=$stock
	[ $v = kk ] && bin=$adopted
	LD_DEBUG=statistics "$bin" -t -p "$run/" -c conf/nginx.conf 2>&1 >/dev/null |
		tr -s '\t ' ' ' | sed -n "s/^ [0-9]*: *\(total startup time.*\|.*number of relocations.*\|number of relative.*\)/  $v: \1/p"
done
