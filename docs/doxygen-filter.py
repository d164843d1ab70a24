#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Doxygen INPUT_FILTER for Skein's headers: makes their plain `//` comments the reference's text.

Skein's headers document declarations with ordinary `//` comments (no `///` or `/** */`), and
they are edited by many people: rather than rewrite them for Doxygen, this filter rewrites the
text Doxygen reads (the files themselves are never changed). Doxygen runs it as

    python3 doxygen-filter.py HEADER      (the filtered text goes to stdout)

Rules, chosen so that only comments that *are* documentation become documentation:
  - the file's license line (`// SPDX-License-Identifier: ...`, its first) is left out;
  - the comment block that opens a file (after the license line, before `#pragma once`) becomes the
    file's description (`\\file`), shown verbatim since headers lay it out by hand (tables,
    code, lists);
  - a block of whole-line `//` comments directly above a declaration (no blank line between)
    becomes `///`: the declaration's description;
  - a trailing `// text` after a member or enumerator (code ending in `;` or `,`, or the last
    enumerator) becomes `///< text`;
  - comments above a blank line, a preprocessor line or a closing brace, and comments inside
    function bodies, stay plain comments.
Doc text is escaped (backslashes, `<`, `>`, `@`, `&`, `$`, `#`, `%`, quotes) outside `code`
spans, so that words like `MultiDevice<Array>` or `${name}` are shown as written instead of being
taken for HTML tags or Doxygen commands, which would warn (and the docs build fails on warnings).

The line count is kept (one line out per line in), so Doxygen's line numbers match the header.
"""
import re
import sys

COMMENT = re.compile(r"^(\s*)//(?!/)(.*)$")
# A member or enumerator with a comment after it: the code ends in `;` or `,`, or is the last
# enumerator (a bare name).
TRAILING = re.compile(r"^(?P<code>.*?[;,]|\s*\w+)(?P<gap>\s+)//(?!/)\s?(?P<text>.*)$")
FUNCTION_HEAD = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(->[^{]*)?\s*$")
SCOPE_KEYWORD = re.compile(r"\b(class|struct|enum|namespace|union)\b")

_SPECIAL = re.compile(r"([\\@<>&$#%\"])")


def escape(text: str) -> str:
    """Escapes Doxygen/HTML specials outside `...` code spans (code spans are shown literally)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unbalanced backtick: treat it as text
        return _SPECIAL.sub(r"\\\1", text).replace("`", "\\`")
    out = []
    for i, part in enumerate(parts):
        out.append(part if i % 2 else _SPECIAL.sub(r"\\\1", part))
    return "`".join(out)


def inside_string(code: str) -> bool:
    """Whether `//` at the end of `code` sits inside a string literal (e.g. a URL)."""
    return code.count('"') % 2 == 1


def filter_lines(lines):
    out = list(lines)
    n = len(lines)
    body_stack = []  # for each open brace: whether it opened a function body
    i = 0
    # The license line that opens every file (`// SPDX-License-Identifier: ...`) is no part of the
    # reference: it is left out, and the description starts after it.
    first = 0
    if n and "SPDX-License-Identifier:" in lines[0]:
        out[0] = ""
        i = first = 1
    header_done = False
    while i < n:
        line = lines[i]
        m = COMMENT.match(line)
        if m:
            # A block of whole-line comments.
            j = i
            while j < n and COMMENT.match(lines[j]):
                j += 1
            nxt = lines[j] if j < n else ""
            stripped = nxt.strip()
            if not header_done and i == first:
                # The file's description, verbatim since headers lay it out by hand.
                # `\file` goes last: an argument after it on the same line would be a file name.
                for k in range(i, j):
                    out[k] = COMMENT.match(lines[k]).group(2).replace("*/", "* /")
                out[i] = "/** \\verbatim" + out[i]
                out[j - 1] += " \\endverbatim \\file */"
                header_done = True
            elif not any(body_stack) and stripped and not stripped.startswith(("#", "}")):
                for k in range(i, j):
                    mk = COMMENT.match(lines[k])
                    out[k] = mk.group(1) + "///" + escape(mk.group(2))
            i = j
            continue
        header_done = True
        code = line
        t = TRAILING.match(line)
        if t and not any(body_stack) and not inside_string(t.group("code")) \
                and not t.group("code").lstrip().startswith(("#", "}")):
            out[i] = t.group("code") + t.group("gap") + "///< " + escape(t.group("text"))
            code = t.group("code")
        elif "//" in line and not inside_string(line.split("//", 1)[0]):
            code = line.split("//", 1)[0]
        # Track braces to know whether we are inside a function body: a brace opened after a
        # `)` (a function head, a constructor's initialisers, a lambda, `if (...) {`), or inside a
        # body, opens a body; class, struct, enum and namespace braces are declaration scopes. A
        # brace alone on its line belongs to the line before.
        for pos, ch in enumerate(code):
            if ch == "{":
                head = code[:pos] if code[:pos].strip() or i == 0 else lines[i - 1]
                body_stack.append(any(body_stack) or (bool(FUNCTION_HEAD.search(head)) and
                                                      not SCOPE_KEYWORD.search(head)))
            elif ch == "}" and body_stack:
                body_stack.pop()
        i += 1
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: doxygen-filter.py HEADER (writes the filtered text to stdout)\n")
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    sys.stdout.write("\n".join(filter_lines(lines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
