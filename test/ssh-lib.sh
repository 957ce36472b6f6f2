# SPDX-License-Identifier: MIT
# A real sshd on loopback for the -H tests, sourced after control-lib.sh
# (it uses $tmp and fail()).  ssh_lib_setup makes a throwaway host key and
# client key (root by key only, its own authorized_keys, no PAM) and sets
# $KKCTL_SSH for kkctl; start_sshd N starts sshd number N on the first free
# port from a per-run one and sets $port; ssh_lib_stop stops them all.
sshds=

# Skip (77) without a usable openssh; as root, install it first if it is missing.
ssh_lib_require() {
	if ! [ -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null || ! command -v ssh >/dev/null; then
		command -v apt-get >/dev/null &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
				openssh-server openssh-client > /dev/null 2>&1
		[ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null && command -v ssh >/dev/null ||
			{ echo "skip: no sshd (openssh-server could not be installed)"; exit 77; }
	fi
}

ssh_lib_setup() {
	ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key" || fail "ssh-keygen (host)"
	ssh-keygen -q -t ed25519 -N '' -f "$tmp/id" || fail "ssh-keygen (client)"
	cp "$tmp/id.pub" "$tmp/authorized_keys"
	chmod 600 "$tmp/authorized_keys"
	# sshd's privilege separation directory (the package's, made at boot)
	[ -d /run/sshd ] || mkdir -m 755 /run/sshd
	export KKCTL_SSH="ssh -T -i $tmp/id -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR"
}

port_free() { ! grep -q ":$(printf '%04X' "$1") 00000000:0000 0A" /proc/net/tcp; }

# start_sshd N: sshd number N, listening on 127.0.0.1:$port once it returns.
start_sshd() {
	for port in $((20000 + ($$ + 97 * $1) % 20000)) $((21000 + ($$ + 97 * $1) % 20000)) \
		    $((22000 + ($$ + 97 * $1) % 20000)); do
		port_free "$port" || continue
		cat > "$tmp/sshd_config$1" <<-EOC
		Port $port
		ListenAddress 127.0.0.1
		HostKey $tmp/host_key
		PidFile $tmp/sshd$1.pid
		AuthorizedKeysFile $tmp/authorized_keys
		PermitRootLogin prohibit-password
		PubkeyAuthentication yes
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		StrictModes no
		PrintMotd no
		EOC
		/usr/sbin/sshd -D -e -f "$tmp/sshd_config$1" 2> "$tmp/sshd$1.log" &
		s=$!
		i=0
		while [ $i -lt 200 ] && port_free "$port" && kill -0 "$s" 2>/dev/null; do
			sleep 0.05
			i=$((i + 1))
		done
		port_free "$port" || { sshds="$sshds $s"; return 0; }
		kill "$s" 2>/dev/null
		wait "$s"
	done
	fail "sshd did not start: $(cat "$tmp/sshd$1.log")"
}

ssh_lib_stop() {
	for s in $sshds; do
		kill "$s" 2>/dev/null
		wait "$s"
	done
	sshds=
}
