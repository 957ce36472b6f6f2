#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl -H never hands ssh an option for a host (kernelkit issue 37, item 8).
# A host is validated after its brackets are stripped ("[-V]" is "-V"), a
# host or user beginning with '-' is refused in any form, and ssh gets "--"
# before the host.  No sshd is needed: a fake ssh, first in PATH, records its
# arguments; kkctl must refuse each bad host in one line, with status 2, and
# never run it; a good host reaches it with "--" just before the host.  A
# port outside 1 to 65535, empty or not a number is a bad host too.
set -u
KK_CTL_LIB_NAME=kksshopt
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
mkdir "$tmp/bin"
cat > "$tmp/bin/ssh" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done > "$tmp/argv"
exit 0
EOF
chmod 755 "$tmp/bin/ssh"
unset KKCTL_SSH KKCTL_REMOTE

for h in '[-V]' '[-oProxyCommand=touch /tmp/x]' '-V' 'root@[-V]' 'root@-V' '[-V]:22' \
	'-oProxyCommand=x' 'root@[-oProxyCommand=x]:2222' '@-V' '[-]' \
	'web1:0' 'web1:65536' 'web1:' 'web1:22x' 'web1:-22' 'root@[::1]:99999'; do
	rm -f "$tmp/argv"
	PATH="$tmp/bin:$PATH" "$K" -H "$h" ls > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "-H '$h': exit $rc, want 2: $(cat "$tmp/err")"
	[ -e "$tmp/argv" ] && fail "-H '$h' ran ssh with: $(tr '\n' ' ' < "$tmp/argv")"
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "-H '$h': not one line: $(cat "$tmp/err")"
	grep -q '^kkctl: bad host: ' "$tmp/err" || fail "-H '$h': $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "-H '$h' printed: $(cat "$tmp/out")"
done

# A good host: ssh runs, "--" comes right before the host.
for h in 'root@[::1]:2222 root@::1' 'web1 web1' 'a-b@host-1:22 a-b@host-1'; do
	set -- $h
	rm -f "$tmp/argv"
	PATH="$tmp/bin:$PATH" "$K" -H "$1" ls > "$tmp/out" 2> "$tmp/err" ||
		fail "-H '$1': exit $?: $(cat "$tmp/err")"
	[ -e "$tmp/argv" ] || fail "-H '$1' did not run ssh"
	grep -qx -- "$2" "$tmp/argv" || fail "-H '$1': no '$2' in: $(tr '\n' ' ' < "$tmp/argv")"
	[ "$(grep -x -B1 -- "$2" "$tmp/argv" | head -1)" = "--" ] ||
		fail "-H '$1': no '--' before the host: $(tr '\n' ' ' < "$tmp/argv")"
done
# A port is 1 to 65535, given to ssh as -p PORT.
for p in 1 65535; do
	rm -f "$tmp/argv"
	PATH="$tmp/bin:$PATH" "$K" -H "web1:$p" ls > "$tmp/out" 2> "$tmp/err" ||
		fail "-H 'web1:$p': exit $?: $(cat "$tmp/err")"
	[ "$(grep -x -A1 -- -p "$tmp/argv" | tail -n 1)" = "$p" ] ||
		fail "-H 'web1:$p': no '-p $p' in: $(tr '\n' ' ' < "$tmp/argv")"
done
echo "kkctl_ssh_option: ok"
