#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Debian packages listed in mk/debian-packages.txt that are missing
# (make demo, make check and make bench run this first).
# As root this runs apt-get itself, and says so first; as anyone else it only
# prints the one command to run, and installs nothing.
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
	echo "kernelkit: not root, so nothing is installed; run: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "kernelkit: running as root: apt-get update && apt-get install -y$missing" >&2
echo "kernelkit: (the build needs these Debian packages; run make as a normal user to only be told)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq $missing >&2
