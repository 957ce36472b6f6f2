#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record's ctf and perfetto writers (issue 39, item 2; docs/tracing.md,
# "Formats"), fed test/progs/record_writers's synthetic records: five
# processes on two hosts, every kkr_type, names that collide, strings with
# quotes, control characters and bytes that are not UTF-8, lost records, an
# exit and a pid reused after it, a record out of time order, enough records
# that packets rotate.  test/record-writers-check.py compares what the
# readers see with what was fed:
#   - ctf: babeltrace2 prints every event at its UTC time, in order, and warns
#     of each loss; its Python bindings (bt2) see the typed fields, vpid,
#     vtid, procname and hostname, and a clock whose origin is the epoch;
#   - perfetto: Python parses it as strict UTF-8 JSON, the events in order
#     with typed args, one process_name per process and one thread_name per
#     named thread; written to stdout ("-") it is the same bytes;
#   - a path a writer cannot use gets one line "kkctl: ..." and -1, and
#     leaves nothing behind;
#   - a full disk (a small tmpfs): one line, and what is on disk reads, a
#     prefix of each stream.
set -u
B=${KK_BUILD:?}
prog=$B/test/progs/record_writers
check=${KK_SRC:?}/test/record-writers-check.py
tmp=$(mktemp -d /tmp/kk-recw.XXXXXX)
full=
cleanup() {
	[ -z "$full" ] || umount "$full" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$prog" ] || fail "$prog is not built"
command -v python3 > /dev/null || { echo "python3 is not installed"; exit 77; }

# The Python that has the bt2 module (Debian's python3-bt2), if any.
bt2py=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import bt2' 2>/dev/null; then bt2py=$p; break; fi
done
have_bt=$(command -v babeltrace2 || true)

# one_line FILE WHAT: FILE holds exactly one line, "kkctl: ...".
one_line() {
	[ "$(grep -c . "$1")" -eq 1 ] && grep -q '^kkctl: .' "$1" ||
		fail "$2: stderr is not one line 'kkctl: ...': $(cat "$1")"
}

# ---- perfetto ------------------------------------------------------------
"$prog" perfetto "$tmp/p.json" "$tmp/p.expect" 2> "$tmp/p.err" || fail "perfetto: rc $? $(cat "$tmp/p.err")"
[ ! -s "$tmp/p.err" ] || fail "perfetto wrote to stderr: $(cat "$tmp/p.err")"
[ "$(stat -c %a "$tmp/p.json")" = 600 ] || fail "perfetto file mode $(stat -c %a "$tmp/p.json"), want 600"
python3 "$check" perfetto "$tmp/p.json" "$tmp/p.expect" || fail "perfetto file"
"$prog" perfetto - "$tmp/p2.expect" > "$tmp/p2.json" || fail "perfetto to stdout: rc $?"
cmp -s "$tmp/p.json" "$tmp/p2.json" || fail "perfetto to stdout differs from the file"

# ---- ctf -----------------------------------------------------------------
mkdir "$tmp/empty"	# an empty directory is taken as a new one
"$prog" ctf "$tmp/empty" "$tmp/c.expect" 2> "$tmp/c.err" || fail "ctf: rc $? $(cat "$tmp/c.err")"
[ ! -s "$tmp/c.err" ] || fail "ctf wrote to stderr: $(cat "$tmp/c.err")"
mv "$tmp/empty" "$tmp/ctf"
[ "$(ls -A "$tmp/ctf" | tr '\n' ' ')" = "b_host-pid1001 metadata pid1001 pid1002 pid1002.1 pid1003 " ] ||
	fail "ctf files: $(ls -A "$tmp/ctf" | tr '\n' ' ')"
[ "$(stat -c %a "$tmp/ctf/metadata")" = 600 ] || fail "ctf metadata mode $(stat -c %a "$tmp/ctf/metadata")"
if [ -n "$have_bt" ]; then
	babeltrace2 --clock-gmt --clock-date "$tmp/ctf" > "$tmp/bt.out" 2> "$tmp/bt.err" ||
		fail "babeltrace2: rc $? $(head -c 2000 "$tmp/bt.err")"
	python3 "$check" ctf-cli "$tmp/ctf" "$tmp/c.expect" "$tmp/bt.out" "$tmp/bt.err" ||
		fail "babeltrace2's output"
else
	echo "SKIP: babeltrace2 is not installed (Debian babeltrace2; mk/debian-packages.txt)"
fi
if [ -n "$bt2py" ]; then
	"$bt2py" "$check" ctf "$tmp/ctf" "$tmp/c.expect" || fail "ctf read with bt2"
else
	echo "SKIP: no Python bt2 module (Debian python3-bt2): ctf's typed fields not checked"
fi

# ---- paths a writer cannot use -------------------------------------------
# bad FORMAT PATH WHAT: open says why in one line and fails; nothing is made.
bad() {
	: > "$tmp/bad.err"
	before=$(ls -A "$tmp" | tr '\n' ' ')
	"$prog" "$1" "$2" "$tmp/x.expect" > /dev/null 2> "$tmp/bad.err"
	rc=$?
	[ $rc -eq 2 ] || fail "$3: rc $rc, want 2 (open refused) $(cat "$tmp/bad.err")"
	one_line "$tmp/bad.err" "$3"
	rm -f "$tmp/x.expect"
	[ "$(ls -A "$tmp" | tr '\n' ' ')" = "$before" ] || fail "$3 left something in $tmp"
	echo "$3: $(cat "$tmp/bad.err")"
}
mkdir "$tmp/full-dir" && : > "$tmp/full-dir/f"
: > "$tmp/file"
bad ctf "$tmp/none/trace" "ctf, no parent"
bad ctf "$tmp/full-dir" "ctf, a directory not empty"
bad ctf "$tmp/file" "ctf, a file"
bad ctf - "ctf, stdout"
bad perfetto "$tmp/none/p.json" "perfetto, no parent"
bad perfetto "$tmp/full-dir" "perfetto, a directory"
[ "$(ls -A "$tmp/full-dir")" = f ] || fail "the non-empty directory was changed"

# ---- a full disk ---------------------------------------------------------
# full FORMAT OUT: 20000 records into 256 KiB: the writer fails once, in one
# line, and what is on disk reads.
full_run() {
	"$prog" "$1" "$2" "$tmp/f.expect" 20000 > "$tmp/f.out" 2> "$tmp/f.err"
	rc=$?
	[ $rc -eq 3 ] || fail "$1 on a full disk: rc $rc, want 3 $(cat "$tmp/f.err")"
	one_line "$tmp/f.err" "$1 on a full disk"
	grep -q 'No space left on device' "$tmp/f.err" || fail "$1 on a full disk said: $(cat "$tmp/f.err")"
	echo "$1 on a full disk: $(cat "$tmp/f.out"): $(cat "$tmp/f.err")"
}
mkdir "$tmp/full"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=256k,mode=700 kk-recw "$tmp/full" 2>/dev/null; then
	full=$tmp/full
	full_run perfetto "$full/p.json"
	python3 "$check" perfetto "$full/p.json" "$tmp/f.expect" --prefix || fail "perfetto after a full disk"
	rm -f "$full/p.json"
	full_run ctf "$full/ctf"
	if [ -n "$have_bt" ]; then
		babeltrace2 "$full/ctf" > /dev/null 2> "$tmp/bt.err" ||
			fail "babeltrace2 after a full disk: $(head -c 2000 "$tmp/bt.err")"
	fi
	[ -z "$bt2py" ] || "$bt2py" "$check" ctf "$full/ctf" "$tmp/f.expect" --prefix ||
		fail "ctf after a full disk"
else
	echo "SKIP: no tmpfs to fill (needs root and mount): the full-disk case did not run"
fi
echo "record_writers: ok"
