#!/bin/sh
# SPDX-License-Identifier: MIT
# The docs say what is true about themselves:
#  1. every relative link of README.md and docs/*.md names a file of the tree,
#     every #anchor a heading of its file, and every section named in prose
#     (`the README's "Title"`, `name.md's "Title"`) a heading of that file
#     (scripts/doc-links.py; the installed docs are checked by
#     install_uninstall.sh);
#  2. the README stays a page: at most 200 lines;
#  3. the checker fails on a broken link, a missing anchor and a missing named
#     section (a checker that passes everything proves nothing).
set -u
[ "${KK_TEST_LABEL:-default}" = default ] || { echo "skip: runs in the default build only"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-docs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$SRC/scripts/doc-links.py" "$SRC" >"$tmp/out" || { cat "$tmp/out"; fail "broken links in the docs"; }
cat "$tmp/out"

n=$(wc -l <"$SRC/README.md")
[ "$n" -le 200 ] || fail "README.md has $n lines (at most 200: details belong in docs/)"
echo "README.md: $n lines"

mkdir -p "$tmp/t/docs"
cat >"$tmp/t/README.md" <<'MD'
# T
## Real section
See [a](docs/a.md), [b](docs/a.md#there), [c](docs/gone.md), [d](docs/a.md#not-there).
MD
cat >"$tmp/t/docs/a.md" <<'MD'
# A
## There
Back to the README's "Real section", and to the README's "Moved section".
MD
python3 "$SRC/scripts/doc-links.py" "$tmp/t" >"$tmp/bad" && fail "the checker passed a tree with broken links"
for want in 'link to docs/gone.md: no such file' 'no heading or anchor "not-there"' \
	    'names section "Moved section" of README'; do
	grep -qF "$want" "$tmp/bad" || { cat "$tmp/bad"; fail "the checker missed: $want"; }
done
[ "$(grep -c 'faults$' "$tmp/bad")" = 1 ] && grep -q ' 3 faults$' "$tmp/bad" ||
	{ cat "$tmp/bad"; fail "the checker reported more than the 3 faults"; }
echo "the checker finds a missing file, anchor and named section: ok"
