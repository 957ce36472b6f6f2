#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl -H over a real sshd (kernelkit issue 25, item 3).  The test starts
# Debian's sshd on a loopback port with a throwaway host key, its own config
# (root by key only, its own authorized_keys, no PAM) and a throwaway client
# key, and stops it at the end.  "The other host" is this one: kkctl -H
# root@127.0.0.1:PORT runs ssh ... kkctl ARGS there ($KKCTL_REMOTE: the
# build's kkctl), which reaches jump_label_prog here.
#  1. ls, read, write (TEXT, and TEXT from stdin) through -H;
#  2. two -H at once: each reply under "==> HOST <==", --json objects with
#     "host" first;
#  3. a host that cannot be reached: the others still answer, one line says
#     which failed, exit 1 (an object with "ok":false in --json);
#  4. arguments reach the remote kkctl as they are, never as shell code;
#  5. the Ansible recipe of docs/control.md (an ad-hoc command over an
#     inventory, kkctl --json) through the same sshd, when ansible is there
#     (ansible-core; without it that part alone is skipped: a SKIP: line).
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
KK_CTL_LIB_NAME=kkssh
. "${KK_SRC:?}/test/control-lib.sh"
. "$KK_SRC/test/ssh-lib.sh"
K=$B/kkctl
trap 'ssh_lib_stop; cleanup' EXIT
ssh_lib_require
ssh_lib_setup
start_sshd 1
export KKCTL_REMOTE="$B/kkctl"
H1=root@127.0.0.1:$port H2=127.0.0.1:$port
start
p=$tpid

# ---- 1. one host
"$K" -H "$H1" ls > "$tmp/out" 2> "$tmp/err" || fail "-H ls: $(cat "$tmp/out" "$tmp/err")"
head -n 1 "$tmp/out" | grep -q '^PID  *UID  *COMMAND$' && grep -Eq "^$p +0 +jump_label_prog\$" "$tmp/out" ||
	fail "-H ls: $(cat "$tmp/out")"
"$K" -H "$H1" -p "$p" read static_keys > "$tmp/out" 2> "$tmp/err" || fail "-H read: $(cat "$tmp/err")"
grep -q "$key_line" "$tmp/out" && ! grep -q "^==>" "$tmp/out" || fail "-H read: $(cat "$tmp/out")"
"$K" -H "$H1" -p "$p" write dynamic_debug/all_or_nothing 0 2> "$tmp/err" || fail "-H write: $(cat "$tmp/err")"
[ "$("$K" -p "$p" read dynamic_debug/all_or_nothing)" = 0 ] || fail "-H write did not take"
echo 1 | "$K" -H "$H1" -p "$p" write dynamic_debug/all_or_nothing 2> "$tmp/err" ||
	fail "-H write from stdin: $(cat "$tmp/err")"
[ "$("$K" -p "$p" read dynamic_debug/all_or_nothing)" = 1 ] || fail "-H write from stdin did not take"

# ---- 2. two hosts at once
"$K" -H "$H1" -H "$H2" -p "$p" read dynamic_debug/all_or_nothing > "$tmp/out" 2> "$tmp/err" ||
	fail "two -H: $(cat "$tmp/out" "$tmp/err")"
printf '==> %s <==\n1\n==> %s <==\n1\n' "$H1" "$H2" | cmp -s - "$tmp/out" || fail "two -H: $(cat "$tmp/out")"
"$K" --json -H "$H1" -H "$H2" -n jump_label_prog --tree "$p" read dynamic_debug/all_or_nothing \
	> "$tmp/out" 2> "$tmp/err" || fail "two -H --json: $(cat "$tmp/out" "$tmp/err")"
for h in "$H1" "$H2"; do
	grep -qx "{\"host\":\"$h\",\"pid\":$p,\"name\":\"jump_label_prog\",\"uid\":0,\"ok\":true,\"reply\":\"1\\\\n\"}" \
		"$tmp/out" || fail "two -H --json, $h: $(cat "$tmp/out")"
done
[ "$(wc -l < "$tmp/out")" -eq 2 ] || fail "two -H --json: $(cat "$tmp/out")"

# ---- 3. a host that is not there
bad=1
while [ $bad -lt 60 ] && ! port_free $((port + bad)); do bad=$((bad + 1)); done
Hbad=root@127.0.0.1:$((port + bad))
"$K" -H "$H1" -H "$Hbad" -p "$p" read dynamic_debug/all_or_nothing > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "a host down: exit $rc: $(cat "$tmp/out" "$tmp/err")"
printf '==> %s <==\n1\n==> %s <==\n' "$H1" "$Hbad" | cmp -s - "$tmp/out" || fail "a host down: $(cat "$tmp/out")"
grep -qx "kkctl: host $Hbad: ssh exited with status 255" "$tmp/err" || fail "a host down: $(cat "$tmp/err")"
"$K" --json -H "$Hbad" -p "$p" read dynamic_debug/all_or_nothing > "$tmp/out" 2> "$tmp/err"
grep -qx "{\"host\":\"$Hbad\",\"ok\":false,\"error\":\"ssh exited with status 255\"}" "$tmp/out" ||
	fail "a host down, --json: $(cat "$tmp/out")"
"$K" -H "$H1" -p "$p" read no_such_file > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "^kkctl: host $H1: the remote kkctl exited with status 1\$" "$tmp/err" ||
	fail "a failed read: exit $rc: $(cat "$tmp/err")"
"$K" -H -oProxyCommand=x ls > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "an option as a host: exit $rc: $(cat "$tmp/out" "$tmp/err")"

# ---- 4. no shell code: the remote command gets our arguments as they were
"$K" -H "$H1" -p "$p" read "static_keys; touch $tmp/pwned" > "$tmp/out" 2> "$tmp/err"
"$K" -H "$H1" -p "$p" read "\$(touch $tmp/pwned)'\"" > "$tmp/out" 2> "$tmp/err"
[ -e "$tmp/pwned" ] && fail "an argument ran on the remote host"
printf '#!/bin/sh\nprintf "[%%s]\\n" "$@"\n' > "$tmp/args"
chmod 755 "$tmp/args"
KKCTL_REMOTE=$tmp/args "$K" -H "$H1" --json -t 3 -p "$p" -n 'a b' write f "0 'x' \$y \\ \`id\`" \
	> "$tmp/out" 2> "$tmp/err" || fail "the argument printer: $(cat "$tmp/err")"
printf '%s\n' '[--json]' '[--timeout]' '[3]' '[-p]' "[$p]" '[-n]' '[a b]' '[write]' '[f]' \
	"[0 'x' \$y \\ \`id\`]" | cmp -s - "$tmp/out" || fail "the remote arguments: $(cat "$tmp/out")"

# ---- 5. Ansible: ansible all -i INVENTORY -m command -a 'kkctl --json ...'
if command -v ansible >/dev/null && [ -x /usr/bin/python3 ]; then
	cat > "$tmp/inventory" <<-EOF
	[kernelkit]
	h1 ansible_host=127.0.0.1 ansible_port=$port ansible_user=root ansible_ssh_private_key_file=$tmp/id ansible_python_interpreter=/usr/bin/python3
	EOF
	HOME=$tmp ANSIBLE_HOST_KEY_CHECKING=False ANSIBLE_LOCAL_TEMP=$tmp/ansible \
	ANSIBLE_SSH_ARGS="-o UserKnownHostsFile=/dev/null -o ControlMaster=no" \
	ANSIBLE_NOCOLOR=1 \
		timeout 120 ansible kernelkit -i "$tmp/inventory" -o -m command \
		-a "$B/kkctl --json --tree $p read dynamic_debug/all_or_nothing" > "$tmp/out" 2> "$tmp/err" ||
		fail "ansible: $(cat "$tmp/out" "$tmp/err")"
	grep -q "^h1 | CHANGED | rc=0 | (stdout) {\"pid\":$p,\"name\":\"jump_label_prog\",\"uid\":0,\"ok\":true,\"reply\":\"1\\\\n\"}\$" \
		"$tmp/out" || fail "ansible: $(cat "$tmp/out")"
else
	echo "SKIP: 5, the Ansible recipe of docs/control.md, not run: no ansible (ansible-core) or no /usr/bin/python3"
fi
echo "kkctl_ssh: ok"
