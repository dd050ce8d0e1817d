#!/usr/bin/env python3
"""List C++ and CUDA functions longer than a number of lines.

Usage: scripts/long_functions.py [--min LINES] [PATH ...]
  PATH: files or folders (default: the project's source folders).
Prints one line per function, longest first: LINES FILE:LINE NAME.

A brace counter, not a parser: comments, string and character literals and
preprocessor lines are blanked out, then each `{` at namespace or class
scope whose header holds a parameter list opens a function, which ends at
its matching `}`. Lambdas and blocks inside a function count towards it.
Good enough to rank the project's functions; a function whose header is
built by a macro may be missed.
"""
import argparse
import os
import re
import sys

SOURCE_DIRS = ["app", "core", "gpu", "mpi", "ui", "tests", "fuzz", "bench"]
SUFFIXES = (".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh")
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "return", "sizeof", "decltype",
           "alignas", "static_assert", "requires", "noexcept"}


def blank_comments_and_literals(text):
    """The text with comments, literals and preprocessor lines replaced by
    spaces (newlines kept, so line numbers stay right)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # A preprocessor line, with its continuations.
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() \
                    and text[i - 1].isdigit():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_balanced(s, opener, open_ch, close_ch):
    """s without each `opener` ... matching close_ch (attributes, template
    parameter lists)."""
    while True:
        k = s.find(opener)
        if k < 0:
            return s
        depth, j = 0, k + len(opener) - 1
        while j < len(s):
            if s[j] == open_ch:
                depth += 1
            elif s[j] == close_ch:
                depth -= 1
                if depth == 0:
                    break
            j += 1
        s = s[:k] + " " + s[j + 1:]


def function_name(header):
    """The function's name if `header` (the text before a `{` at namespace or
    class scope) declares one, else None."""
    h = " ".join(header.split())
    h = strip_balanced(h, "__attribute__((", "(", ")")
    h = strip_balanced(h, "__launch_bounds__(", "(", ")")
    h = strip_balanced(h, "[[", "[", "]")
    h = strip_balanced(h, "template <", "<", ">")
    h = strip_balanced(h, "template<", "<", ">")
    paren = h.find("(")
    if paren < 0:
        return None
    head = h[:paren]
    if "=" in head.replace("operator=", "").replace("operator==", ""):
        return None
    if re.search(r"\b(class|struct|union|enum|namespace)\b", head) and not re.search(r"\boperator\b", head):
        return None
    m = re.search(r"((?:[A-Za-z_~][\w]*\s*(?:<[^()]*>)?\s*::\s*)*~?[A-Za-z_][\w]*|operator\s*\S+)\s*$", head)
    if not m:
        return None
    name = re.sub(r"\s+", "", m.group(1))
    if name.split("::")[-1] in CONTROL:
        return None
    return name


def long_functions(path, minimum):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank_comments_and_literals(f.read())
    found = []
    stack = []  # per open brace: ("scope" | "function" | "block", name, first line)
    header_start = 0
    line = 1
    header_line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
            continue
        if c == "{":
            inside_function = any(kind == "function" for kind, _, _ in stack)
            header = text[header_start:i]
            name = None if inside_function else function_name(header)
            if name:
                stack.append(("function", name, header_line))
            elif inside_function:
                stack.append(("block", None, line))
            else:
                stack.append(("scope", None, line))
            header_start = i + 1
            header_line = line
        elif c == "}":
            if stack:
                kind, name, first = stack.pop()
                if kind == "function" and line - first + 1 > minimum:
                    found.append((line - first + 1, path, first, name))
            header_start = i + 1
            header_line = line
        elif c == ";":
            header_start = i + 1
            header_line = line
        elif not c.isspace() and text[header_start:i].strip() == "":
            header_line = line
    return found


def source_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d not in ("build", ".git") and not d.startswith("build-"))
            for name in sorted(files):
                if name.endswith(SUFFIXES):
                    yield os.path.join(root, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=int, default=100, help="list functions longer than this many lines (100)")
    parser.add_argument("paths", nargs="*", help="files or folders (default: the source folders)")
    args = parser.parse_args()
    paths = args.paths or [d for d in SOURCE_DIRS if os.path.isdir(d)]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print(f"long_functions: {missing[0]}: no such file or folder", file=sys.stderr)
        return 2
    found = []
    for f in source_files(paths):
        found.extend(long_functions(f, args.min))
    for lines, path, first, name in sorted(found, key=lambda r: (-r[0], r[1], r[2])):
        print(f"{lines:5d} {path}:{first} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
