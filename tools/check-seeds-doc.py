#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Keeps the migration guide docs/seeds.md true. Its tables (those whose header's first cell is
`seed name`) must:
  1. name, in their first column, every public name of the seeds' references
     (docs/seeds-names.txt, made by tools/seed-names.py), and only those: a name is written in
     backticks, `grunnur.API.all_available`, with or without `(...)`; `prefix.{A, B, C}` stands for
     prefix.A, prefix.B and prefix.C;
  2. name only C++ names (`skein::...` in backticks, anywhere in a row) that an installed public
     header declares: headers under */include/skein/ (framework, collectives, the C binding),
     parsed for their namespaces, classes, enums and declarations, so that `skein::Array::reshape`
     passes only if class skein::Array declares reshape (or a base class of it does);
  3. name only Python names (`skein.X.Y` in backticks) that the package defines: every component
     after `skein` must be a name bound in bindings/python/src/*.cpp (class_, enum_, def, value,
     attr, submodule, ...) or defined in bindings/python/skein/*.py, and when X is a class, Y one
     bound on that class (py::class_<T>(m, "X").def("Y", ...), through any variable of type
     py::class_<T>, or a member of the Python class X and its bases);
  4. hold no PENDING marker: a row whose Skein column is still to be filled fails the check;
  5. give a reason (the notes column) in every row whose C++ column says "not offered".
Every failure names the row (file:line and its first cell).

    python3 tools/check-seeds-doc.py [DOC]        the check (default docs/seeds.md); exit 1 on a
                                                   failure, with the list
    python3 tools/check-seeds-doc.py --self-test  first proves that doctored copies of the guide
                                                   fail (a row naming a C++ name no header
                                                   declares, a Python name the package lacks, a
                                                   PENDING row, a row not offered without a
                                                   reason, a misspelt seed name, a seed name left
                                                   out), then checks the guide (ctest docs.seeds)
    python3 tools/check-seeds-doc.py --names      prints the C++ names the headers declare
"""
import glob
import os
import re
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# --- C++: what the installed headers declare ---------------------------------------------------

def installed_headers():
    """The headers the install step installs: include/skein/ of each library (cmake/SkeinLibrary
    .cmake, collectives/CMakeLists.txt, bindings/c/CMakeLists.txt)."""
    paths = []
    for pattern in ("framework/include/skein/*.hpp", "collectives/include/skein/*.hpp",
                    "collectives/*/include/skein/*.hpp", "bindings/c/include/skein/*.h*"):
        paths += glob.glob(os.path.join(ROOT, pattern))
    return sorted(paths)


def strip_code(text):
    """The header without comments, string and character literals, and preprocessor lines."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\\n])'", "''", text)
    lines, continued = [], False
    for line in text.split("\n"):
        is_directive = continued or line.lstrip().startswith("#")
        continued = is_directive and line.rstrip().endswith("\\")
        lines.append("" if is_directive else line)
    return "\n".join(lines)


KEYWORDS = {"requires", "if", "sizeof", "decltype", "alignas", "static_assert", "noexcept",
            "return", "while", "for", "switch", "alignof", "explicit", "SKEIN_EXPORT"}


def strip_prefixes(head):
    """A statement's head without access specifiers, template headers and requires-clauses."""
    head = re.sub(r"\b(public|private|protected)\s*:(?!:)", " ", head)
    # Invocations of macros that declare things of their own and end without ';' (a run of
    # SKEIN_DTYPE_TRAIT(...) lines before the next declaration).
    head = re.sub(r"^\s*(?:[A-Z][A-Z0-9_]*\s*\([^()]*\)\s*)+", " ", head)
    while True:
        m = re.search(r"\btemplate\s*<", head)
        if not m:
            break
        depth, i = 1, m.end()
        while i < len(head) and depth:
            depth += {"<": 1, ">": -1}.get(head[i], 0)
            i += 1
        head = head[:m.start()] + " " + head[i:]
    m = re.search(r"\brequires\s*\(", head)
    if m:
        depth, i = 1, m.end()
        while i < len(head) and depth:
            depth += {"(": 1, ")": -1}.get(head[i], 0)
            i += 1
        head = head[:m.start()] + " " + head[i:]
    return head.strip()


def declared_name(head):
    """The name a declaration statement declares (a function, a variable, a type alias), or None."""
    head = strip_prefixes(head)
    if not head or head.startswith(("friend class", "friend struct")):
        return None
    m = re.match(r"(?:friend\s+)?.*?\boperator\s*(\(\)|[^\s(]+)\s*\(", head, re.S)
    if m and "operator" in head.split("(")[0]:
        return "operator" + m.group(1)
    m = re.match(r"using\s+(\w+)\s*=", head)
    if m:
        return m.group(1)
    m = re.match(r"(?:class|struct|union|enum(?:\s+class)?)\s+(?:SKEIN_EXPORT\s+)?(\w+)\s*$",
                 head)
    if m:
        return m.group(1)
    if head.startswith(("using ", "namespace ", "static_assert", "typedef ")):
        return None
    depth_paren = 0
    for m in re.finditer(r"(~?\w+)?\s*\(|\)", head):
        if m.group(0) == ")":
            depth_paren -= 1
            continue
        if depth_paren == 0 and m.group(1) and m.group(1) not in KEYWORDS:
            return m.group(1)
        depth_paren += 1
    # No function: a variable (data member, constant); the name before '=', '[' or the end.
    cut = re.split(r"=|\[", head, 1)[0].strip()
    m = re.search(r"(\w+)\s*$", cut)
    return m.group(1) if m else None


def parse_header(text, declared, bases):
    """Adds the qualified names the header declares to `declared` ({"skein::Array::reshape"}) and
    the base classes of its classes to `bases` ({"skein::TrivialManager": ["VirtualManager"]})."""
    text = strip_code(text)
    stack = []  # (kind, qualified name parts or None)
    head_start = 0
    enum_body_start = None

    def scope():
        if any(parts is None for _, parts in stack):
            return None
        out = []
        for _, parts in stack:
            out += parts
        return out

    def record(name):
        s = scope()
        if s is not None and name and s and s[0] == "skein" and "detail" not in s:
            declared.add("::".join(s + [name]))

    i = 0
    while i < len(text):
        c = text[i]
        if c in "{};":
            head = " ".join(text[head_start:i].split())
            if c == "{":
                h = strip_prefixes(head)
                m_ns = re.match(r"(?:inline\s+)?namespace\s*([\w:]*)\s*$", h)
                m_cls = re.match(r"(class|struct|union)\s+(?:SKEIN_EXPORT\s+)?(\w+)\s*(?:<[^{]*>)?"
                                 r"\s*(?:final\s*)?(?::\s*(.*))?$", h)
                m_enum = re.match(r"enum\s+(?:class\s+|struct\s+)?(\w+)\s*(?::\s*[\w:]+\s*)?$", h)
                if m_ns:
                    stack.append(("namespace", [p for p in m_ns.group(1).split("::") if p]))
                elif m_cls:
                    record(m_cls.group(2))
                    s = scope()
                    if s is not None and m_cls.group(3):
                        bases["::".join(s + [m_cls.group(2)])] = [
                            re.sub(r"^(public|private|protected|virtual)\s+", "", b.strip())
                            .split("<")[0].split("::")[-1]
                            for b in m_cls.group(3).split(",")]
                    stack.append(("class", [m_cls.group(2)]))
                elif m_enum:
                    record(m_enum.group(1))
                    stack.append(("enum", [m_enum.group(1)]))
                    enum_body_start = i + 1
                else:
                    # A function body or an initializer: it declares its head's name, and nothing
                    # inside it counts.
                    if head and not head.endswith(("=", "(", ",")) and stack and \
                            stack[-1][0] in ("namespace", "class"):
                        record(declared_name(head))
                    stack.append(("block", None))
            elif c == "}":
                if stack:
                    kind, parts = stack.pop()
                    if kind == "enum" and enum_body_start is not None:
                        for item in text[enum_body_start:i].split(","):
                            m = re.match(r"\s*(\w+)", item)
                            if m:
                                stack.append((kind, parts))
                                record(m.group(1))
                                stack.pop()
                        enum_body_start = None
            else:  # ';'
                if stack and stack[-1][0] in ("namespace", "class") and head:
                    record(declared_name(head))
            head_start = i + 1
        elif c == "(":
            # Skip balanced parentheses: braces and semicolons inside them (default arguments,
            # requires-expressions) do not end the statement.
            depth, j = 1, i + 1
            while j < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            i = j
            continue
        i += 1


def cpp_declarations():
    declared, bases = set(), {}
    for path in installed_headers():
        parse_header(read(path), declared, bases)
    return declared, bases


def cpp_name_declared(name, declared, bases):
    if name in declared:
        return True
    parts = name.split("::")
    if len(parts) >= 3:  # a member of a base class
        owner = "::".join(parts[:-1])
        for base in bases.get(owner, []):
            for candidate in (f"{'::'.join(parts[:-2])}::{base}", f"skein::{base}"):
                if cpp_name_declared(f"{candidate}::{parts[-1]}", declared, bases):
                    return True
    return False


# --- Python: what the package binds -------------------------------------------------------------

PY_BINDING = [
    r"(?:class_|enum_|exception|register_exception)\s*<[^;]*?>\s*\w*\s*\(\s*\w+\s*,\s*\"(\w+)\"",
    r"\.def(?:_static|_property|_property_readonly|_property_static|_readonly|_readwrite|"
    r"_readonly_static|_readwrite_static)?\s*\(\s*\"(\w+)\"",
    r"\.value\s*\(\s*\"(\w+)\"",
    r"\.attr\s*\(\s*\"(\w+)\"\s*\)",
    r"submodule\s*\(\s*\"(\w+)\"",
    r"register_exception\s*<[^>]*>\s*\(\s*\w+\s*,\s*\"(\w+)\"",
    r"\w+\s*\[\s*\"(\w+)\"\s*\]\s*=",
    # Local helpers that bind under a name given to them: unary("sum", &skein::sum, ...),
    # gemm("gemm_batched", true).
    r"(?<![\w:])\w+\s*\(\s*\"(\w+)\"\s*,\s*(?:true|false|&)",
]


def python_names():
    """Every name the package binds anywhere (the fallback for containers not parsed below)."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "bindings/python/src/*.[ch]pp")):
        text = read(path)
        for rx in PY_BINDING:
            names.update(re.findall(rx, text))
    for path in glob.glob(os.path.join(ROOT, "bindings/python/skein/*.py")):
        text = read(path)
        names.update(re.findall(r"^\s*(?:def|class)\s+(\w+)", text, re.M))
        names.update(re.findall(r"^(\w+)\s*=", text, re.M))
        names.update(re.findall(r"^\w+\.(\w+)\s*=", text, re.M))
        names.add(os.path.splitext(os.path.basename(path))[0])
    return names


def cpp_statements(text):
    """The statements of a C++ file (split at ';' outside parentheses, braces of lambdas inside
    parentheses included), without comments and with string contents kept."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c in ";{}" and depth == 0:
            out.append(text[start:i])
            start = i + 1
        i += 1
    out.append(text[start:])
    return out


MEMBER = re.compile(r"\.(?:def\w*|value)\s*\(\s*\"(\w+)\"")


def python_classes():
    """{Python class name: the names bound on it} for the classes and enums of the bindings
    (members bound in the chain after py::class_<T>(m, "Name") and through any variable of type
    py::class_<T>), and the Python classes of bindings/python/skein/*.py (with their bases')."""
    name_of_type, members = {}, {}
    texts = [read(p) for p in sorted(glob.glob(os.path.join(ROOT, "bindings/python/src/*.cpp")))]
    head = re.compile(r"^\s*(?:py::)?(?:class_|enum_)\s*<\s*([\w:]+)[^>]*>+\s*&?\s*(\w*)")
    # More members of a class bound in another file: py::reinterpret_borrow<py::class_<T>>(...).
    borrowed = re.compile(r"^\s*(?:py::)?reinterpret_borrow\s*<\s*(?:py::)?class_\s*<\s*([\w:]+)")
    for text in texts:
        for st in cpp_statements(text):
            for m in re.finditer(r"(?:class_|enum_)\s*<\s*([\w:]+)[^;]*?>\s*\w*\s*\(\s*\w+\s*,"
                                 r"\s*\"(\w+)\"", st):
                name_of_type[m.group(1)] = m.group(2)
    for text in texts:
        # A variable of type py::class_<T> (a declaration or a helper's parameter) in this file.
        type_of_var = {}
        for m in re.finditer(r"(?:class_|enum_)\s*<\s*([\w:]+)[^;{]*?>\s*&?\s*(\w+)\s*[(,)]",
                             text):
            type_of_var[m.group(2)] = m.group(1)
        for st in cpp_statements(text):
            m = head.match(st) or borrowed.match(st)
            if m:
                owner = m.group(1)
            else:
                m = re.match(r"^\s*(\w+)\s*\.\s*(?:def|attr)", st)
                owner = type_of_var.get(m.group(1)) if m else None
            if owner is None:
                continue
            members.setdefault(owner, set()).update(MEMBER.findall(st))
    classes = {name_of_type[t]: names for t, names in members.items() if t in name_of_type}
    # Python classes (the errors, ...): their methods and class attributes, and their bases'.
    py_classes, py_bases = {}, {}
    for path in glob.glob(os.path.join(ROOT, "bindings/python/skein/*.py")):
        current = None
        for line in read(path).splitlines():
            m = re.match(r"^class\s+(\w+)\s*(?:\((.*)\))?:", line)
            if m:
                current = m.group(1)
                py_classes.setdefault(current, set())
                py_bases[current] = [b.strip().split(".")[-1] for b in (m.group(2) or "").split(",")
                                     if b.strip()]
            elif re.match(r"^(\w+)\.(\w+)\s*=", line):  # Communicator.group = _group
                m = re.match(r"^(\w+)\.(\w+)\s*=", line)
                py_classes.setdefault(m.group(1), set()).add(m.group(2))
                current = None
            elif current and re.match(r"^\S", line):
                current = None
            elif current:
                m = re.match(r"^\s+(?:def\s+(\w+)|(\w+)\s*(?::[^=]*)?=)", line)
                if m:
                    py_classes[current].add(m.group(1) or m.group(2))

    def with_bases(name, seen=()):
        out = set(py_classes.get(name, ()))
        for b in py_bases.get(name, []):
            if b not in seen:
                out |= with_bases(b, seen + (name,))
        return out
    for name in py_classes:
        classes.setdefault(name, set()).update(with_bases(name))
    return classes


# --- The guide's tables ---------------------------------------------------------------------------

def cells(line):
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def seed_rows(path):
    """(line number, cells) of every row of the seed tables."""
    rows, previous_in_table, seed_table, fenced = [], False, False, False
    lines = read(path).splitlines()
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|"):
            previous_in_table = False
            continue
        c = cells(line)
        if not previous_in_table:  # a table's first line: its header
            previous_in_table = True
            seed_table = c[0].lower() == "seed name"
            continue
        if seed_table and not re.fullmatch(r"[\s|:-]+", line):
            rows.append((number, c))
    return rows


def expand(name):
    """`a.{B, C}` -> [a.B, a.C]; `f(...)` -> f."""
    name = re.sub(r"\(.*\)$", "", name.strip())
    m = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", name)
    if m:
        return [f"{m.group(1)}{x.strip()}{m.group(3)}" for x in m.group(2).split(",") if x.strip()]
    return [name]


# A qualified C++ name in the tables: skein::A::b, skein::A::operator(), skein::A::operator==.
CPP_NAME = re.compile(r"(?<![\w:])skein::((?:\w+::)*"
                      r"(?:operator(?:\(\)|[=!<>+\-*/%&|^~\[\]]+)|~?\w+))")


def check(doc, names_file):
    errors = []
    seed_names = []
    for line in read(names_file).splitlines():
        if line and not line.startswith("#"):
            seed_names.append(line.split("\t")[3])
    known = set(seed_names)
    declared, bases = cpp_declarations()
    py = python_names()
    py_classes = python_classes()
    rel = os.path.relpath(doc, ROOT)
    rows = seed_rows(doc)
    if not rows:
        errors.append(f"{rel}: no seed tables (tables whose header's first cell is 'seed name')")
    named = set()
    counts = {"not offered": 0, "pending": 0, "equivalent": 0}
    for number, c in rows:
        where = f"{rel}:{number}: row {c[0]}"
        if len(c) != 4:
            errors.append(f"{where}: {len(c)} cells, not 4 (seed name, C++, Python, notes): a '|' "
                          "inside a cell must be written '\\|'")
        first = re.findall(r"`([^`]+)`", c[0])
        row_names = [n for f in first for n in expand(f)]
        for n in row_names:
            if n not in known:
                errors.append(f"{where}: '{n}' is not a name of the seeds' references "
                              f"({os.path.relpath(names_file, ROOT)}): a typo?")
        named.update(row_names)
        rest = " | ".join(c[1:])
        if "PENDING" in rest:
            errors.append(f"{where}: PENDING: the Skein equivalent is still to be written in")
            if len(c) < 4 or not c[3].strip():
                errors.append(f"{where}: PENDING without a note of what the seed's call does")
            counts["pending"] += len(row_names)
        elif re.search(r"\bnot offered\b", c[1] if len(c) > 1 else "", re.I):
            counts["not offered"] += len(row_names)
            if len(c) < 4 or not c[3].strip():
                errors.append(f"{where}: not offered, without the reason and what to do instead "
                              "(the notes column)")
        else:
            counts["equivalent"] += len(row_names)
        code = " ".join(re.findall(r"`([^`]+)`", rest))
        for m in CPP_NAME.finditer(code):
            name = "skein::" + m.group(1)
            if not cpp_name_declared(name, declared, bases):
                errors.append(f"{where}: {name} is not declared in an installed header "
                              "(*/include/skein/): name one that is, or fix the header")
        for m in re.finditer(r"(?<![\w.])skein\.((?:\w+\.)*\w+)", code):
            parts = m.group(1).split(".")
            missing = [p for p in parts if p not in py]
            if not missing and len(parts) >= 2 and parts[0] in py_classes and \
                    parts[1] not in py_classes[parts[0]]:
                missing = [f"{parts[1]}' in class '{parts[0]}"]
            if missing:
                errors.append(f"{where}: skein.{m.group(1)}: the Python package binds no "
                              f"'{missing[0]}' (bindings/python/src/*.cpp, bindings/python/skein)")
    for n in seed_names:
        if n not in named:
            errors.append(f"{rel}: {n} (a name of the seeds' references) is in no table row")
    return errors, counts, len(seed_names)


def self_test(doc, names_file):
    """Doctored copies of the guide must fail, each naming what is wrong."""
    text = read(doc)
    rows = seed_rows(doc)
    if not rows:
        sys.exit(f"check-seeds-doc: self-test: {doc} has no seed tables")
    number, c = rows[0]
    lines = text.split("\n")
    victim = expand(re.findall(r"`([^`]+)`", c[0])[0])[0]
    extra = ["| `grunnur.API` | `skein::Array::no_such_member` | | a doctored row |",
             "| `grunnur.API` | `skein::Api` | `skein.API.no_such_attribute` | a doctored row |",
             "| `grunnur.API` | PENDING | | a doctored row |",
             "| `grunnur.API` | not offered | | |",
             "| `grunnur.APi.all_available` | `skein::Api::all_available` | | a doctored row |"]
    cases = [
        ("a C++ name no header declares", extra[0], "skein::Array::no_such_member is not declared"),
        ("a Python name the package lacks", extra[1], "binds no 'no_such_attribute'"),
        ("a PENDING row", extra[2], "PENDING: the Skein equivalent"),
        ("a row not offered without a reason", extra[3], "not offered, without the reason"),
        ("a misspelt seed name", extra[4], "'grunnur.APi.all_available' is not a name of the seeds'"),
    ]
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "seeds.md")
        for what, row, expected in cases:
            doctored = lines[:number] + [row] + lines[number:]
            with open(copy, "w", encoding="utf-8") as f:
                f.write("\n".join(doctored))
            errors, _, _ = check(copy, names_file)
            if not any(expected in e for e in errors):
                sys.exit(f"check-seeds-doc: self-test: a guide with {what} passed or failed "
                         f"without saying '{expected}':\n  " + "\n  ".join(errors))
        # A row without its first seed name: the name must be reported missing.
        first_cell = lines[number - 1].split("|")[1]
        doctored = list(lines)
        doctored[number - 1] = doctored[number - 1].replace(first_cell, " ", 1)
        with open(copy, "w", encoding="utf-8") as f:
            f.write("\n".join(doctored))
        errors, _, _ = check(copy, names_file)
        if not any(f"{victim} (a name of the seeds' references) is in no table row" in e
                   for e in errors):
            sys.exit(f"check-seeds-doc: self-test: a guide without {victim} passed:\n  " +
                     "\n  ".join(errors))
    # The parser finds what it must, and nothing it must not.
    declared, bases = cpp_declarations()
    for must in ("skein::Array::reshape", "skein::Dtype::float32", "skein::blas::gemm",
                 "skein::Kernel::prepare", "skein::TrivialManager::allocate",
                 "skein::ElementwiseKernel", "skein::DeviceParameters::warp_size"):
        if not cpp_name_declared(must, declared, bases):
            sys.exit(f"check-seeds-doc: self-test: the header parser does not find {must}")
    # skein::is_c_contiguous: a member of skein::Array only, never a free function.
    for must_not in ("skein::Array::as_bytes", "skein::is_c_contiguous", "skein::Buffer::shape"):
        if cpp_name_declared(must_not, declared, bases):
            sys.exit(f"check-seeds-doc: self-test: the header parser finds {must_not}, which no "
                     "header declares")
    print("check-seeds-doc: self-test: rows naming an undeclared C++ name, a Python name the "
          "package lacks, a PENDING marker, a name not offered without a reason, a misspelt seed "
          f"name, and a guide without {victim}, all fail, as they must")


def main():
    args = sys.argv[1:]
    doc = os.path.join(ROOT, "docs", "seeds.md")
    names_file = os.path.join(ROOT, "docs", "seeds-names.txt")
    if args and args[0] == "--names":
        declared, _ = cpp_declarations()
        print("\n".join(sorted(declared)))
        return 0
    if args and args[0] == "--self-test":
        self_test(doc, names_file)
        args = args[1:]
    if args:
        doc = os.path.abspath(args[0])
    errors, counts, total = check(doc, names_file)
    rel = os.path.relpath(doc, ROOT)
    if errors:
        print(f"check-seeds-doc: {len(errors)} problem(s) in {rel}:")
        for e in errors:
            print(f"  {e}")
        print(f"check-seeds-doc: the tables name {counts['equivalent']} seed names with an "
              f"equivalent, {counts['not offered']} not offered and {counts['pending']} PENDING, "
              f"of {total}")
        return 1
    print(f"check-seeds-doc: OK: {rel} names all {total} names of the seeds' references "
          f"({counts['equivalent']} with an equivalent, {counts['not offered']} not offered), and "
          "every skein:: and skein. name in its tables exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
