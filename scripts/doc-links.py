#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the links of the Markdown docs under ROOT (a source tree or an
installed doc directory): every relative link names a file that exists,
every #anchor names a heading (GitHub's slugs) or an explicit anchor of that
file, and every section named in prose as `the README's "Title"` or
`name.md's "Title"` is a heading of that file.  One line per fault; exit 1
if any.  Usage: doc-links.py ROOT [FILE.md...] (default: README.md and
docs/*.md under ROOT)."""
import os
import re
import sys

LINK = re.compile(r'(?<!!)\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
NAMED = re.compile(r'(README|[\w.-]+\.md)(?:\]\([^)]*\))?`?\'s "([^"]+)"')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
ANCHOR = re.compile(r'<a\s+(?:id|name)="([^"]+)"')
FENCE = re.compile(r'^\s*(```|~~~)')


def slug(title):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    dropped, spaces to hyphens."""
    t = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', title)
    t = t.replace('`', '').lower()
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')


def prose_lines(path):
    """(number, line) of the lines outside fenced code blocks."""
    fenced = False
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line


def anchors(path, cache={}):
    if path not in cache:
        seen, titles = {}, set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if m:
                titles.add(m.group(2).replace('`', ''))
                s = slug(m.group(2))
                k = seen.get(s, 0)
                seen[s] = k + 1
                titles.add('#' + (s if k == 0 else '%s-%d' % (s, k)))
            for a in ANCHOR.findall(line):
                titles.add('#' + a)
        cache[path] = titles
    return cache[path]


def find_doc(root, here, name):
    """The file a prose reference names: README, or a docs page."""
    if name == 'README':
        name = 'README.md'
    for d in (os.path.dirname(here), root, os.path.join(root, 'docs')):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def check_file(root, path):
    faults = []
    rel = os.path.relpath(path, root)
    for n, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r'^[a-z][a-z0-9+.-]*:', target):
                continue  # http:, https:, mailto:, man:
            file_part, _, frag = target.partition('#')
            dest = path if not file_part else \
                os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(dest):
                faults.append('%s:%d: link to %s: no such file' % (rel, n, target))
            elif frag and dest.endswith('.md') and '#' + frag not in anchors(dest):
                faults.append('%s:%d: link to %s: no heading or anchor "%s" there'
                              % (rel, n, target, frag))
        for name, title in NAMED.findall(line):
            doc = find_doc(root, path, name)
            if doc is None:
                faults.append('%s:%d: names a section of %s: no such file' % (rel, n, name))
            elif title.replace('`', '') not in anchors(doc):
                faults.append('%s:%d: names section "%s" of %s: no such heading'
                              % (rel, n, title, name))
    return faults


def main(argv):
    if len(argv) < 2:
        sys.stderr.write('usage: doc-links.py ROOT [FILE.md...]\n')
        return 2
    root = argv[1]
    files = argv[2:] or [os.path.join(root, 'README.md')] + sorted(
        os.path.join(root, 'docs', f) for f in os.listdir(os.path.join(root, 'docs'))
        if f.endswith('.md'))
    faults = []
    for f in files:
        faults += check_file(root, f)
    for f in faults:
        print(f)
    print('doc-links: %d files, %d faults' % (len(files), len(faults)))
    return 1 if faults else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
