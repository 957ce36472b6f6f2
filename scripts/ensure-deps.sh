#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages listed in mk/debian-packages.txt that are missing.
# As root this runs apt-get itself; as anyone else it prints the one command to run.
set -eu
here=$(dirname "$0")/..
list="$here/mk/debian-packages.txt"
missing=""
for p in $(sed -e 's/#.*//' "$list"); do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "kernelkit: missing Debian packages:$missing" >&2
	echo "kernelkit: run: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "kernelkit: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq $missing >&2
