#!/usr/bin/env python3
"""Functions longer than a limit in Rust sources: `scripts/long_fns.py [--limit N] [PATH...]`.

Prints `lines path:line name` for each `fn` item whose body, from the line of `fn` to its
closing brace, spans more than N lines (100 unless told), longest first, then their count.
A simple brace-matching pass: strings, chars and comments are skipped; closures and nested
functions count within the function that holds them (and nested ones on their own too).
PATH defaults to src/; directories are searched for *.rs."""

import os
import re
import sys

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def strip(src):
    """The source with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:]) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", src[i : j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^'\\])'", src[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def long_fns(path, limit):
    src = strip(open(path, encoding="utf-8").read())
    found = []
    for m in FN.finditer(src):
        # The body: the first `{` after the signature, unless a `;` ends the item first.
        j = m.end()
        depth_paren = 0
        while j < len(src):
            ch = src[j]
            if ch in "([<":
                depth_paren += 1
            elif ch in ")]>":
                depth_paren -= 1
            elif ch == ";" and depth_paren <= 0:
                j = -1
                break
            elif ch == "{" and depth_paren <= 0:
                break
            j += 1
        if j < 0 or j >= len(src):
            continue
        depth, k = 0, j
        while k < len(src):
            if src[k] == "{":
                depth += 1
            elif src[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        first = src.count("\n", 0, m.start()) + 1
        last = src.count("\n", 0, k) + 1
        lines = last - first + 1
        if lines > limit:
            found.append((lines, f"{path}:{first}", m.group(1)))
    return found


def main(argv):
    limit = 100
    if argv[:1] == ["--limit"]:
        limit, argv = int(argv[1]), argv[2:]
    paths = argv or ["src"]
    found = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith(".rs"):
                        found += long_fns(os.path.join(root, f), limit)
        else:
            found += long_fns(p, limit)
    for lines, at, name in sorted(found, reverse=True):
        print(f"{lines:5} {at} {name}")
    print(f"{len(found)} functions over {limit} lines")


if __name__ == "__main__":
    main(sys.argv[1:])
