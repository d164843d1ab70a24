#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks that the documentation keeps up with the code:
#   1. every environment variable the code reads is in the user guide's table
#      (docs/guide.md, section "Environment variables"), and
#   2. every relative link in docs/*.md and README.md points to a file that exists (and, for a
#      #anchor into a Markdown file, to one of its headings), and
#   3. every code block marked `<!-- example: docs/examples/X.cpp -->` is that file's text, less
#      its license line (`<!-- example: docs/examples/X.cpp#NAME -->`: the lines between
#      `// [NAME]` and `// [end NAME]` in it, less their common indentation) (the
#      examples are compiled by the `docs-examples` target, so the quoted code compiles), and
#   4. every SVG picture in docs/ is well-formed XML, and
#   5. LICENSE exists, and every source, build and script file under framework/, collectives/,
#      bindings/, apps/, tests/, tools/, cmake/, slurm/, docs/ and .ci/ names its license in an
#      SPDX line among its first three lines, and
#   6. docs/seeds.md, the migration guide, answers every name of the seeds' references and names
#      only C++ and Python names that exist, with no PENDING row (tools/check-seeds-doc.py).
#
#   bash tools/check-docs.sh               the checks; exit status 1 with a list of what is wrong
#   bash tools/check-docs.sh --self-test   first proves that the checks fail on a guide that lacks
#                                          a variable and on a broken link, then runs them (ctest
#                                          docs.env runs this)
#   bash tools/check-docs.sh --list        prints the variables the code reads, one per line
#
# "Reads" means, with the names spelt out in the source:
#   - C++ (framework/, collectives/, apps/, tests/): getenv("NAME"), Skein's env("NAME") helper
#     (collectives/comm/src/placement.cpp), and the OpenCL ICD loader's variables that Skein saves
#     and restores (Saved entries, framework/opencl/driver.hpp);
#   - scripts (tools/*.sh, slurm/*.sbatch, .ci/run): ${NAME:-default} / ${NAME-default}, the
#     variables a user sets to change what the script does, and every $SLURM_* a batch script reads.
# A variable read through a name built at run time cannot be found this way: add it to the table
# by hand.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="check"
case "${1:-}" in
  "") ;;
  --self-test) MODE="self-test" ;;
  --list) MODE="list" ;;
  -h|--help) sed -n '3,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "check-docs: unknown argument '$1' (expected --self-test, --list or nothing)" >&2; exit 2 ;;
esac

command -v python3 >/dev/null 2>&1 || {
  echo "check-docs: python3 is needed (tools/install-deps.sh installs it)" >&2; exit 2; }

# The checks, in Python for the parsing. Arguments: MODE ROOT GUIDE [DOC_FILES...]; the guide and
# documents can be copies (the self-test passes broken ones).
read -r -d '' CHECKER <<'PY' || true
import os, re, sys

mode, root, guide = sys.argv[1], sys.argv[2], sys.argv[3]
doc_files = sys.argv[4:]

def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()

def files_under(dirs, suffixes):
    for d in dirs:
        top = os.path.join(root, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [x for x in dirnames if not x.startswith(("build", "."))]
            for name in sorted(filenames):
                if name.endswith(suffixes):
                    yield os.path.join(dirpath, name)

NAME = r"[A-Z][A-Z0-9_]*"
CPP_READS = [re.compile(r"\bgetenv\(\s*\"(" + NAME + r")\""),
             re.compile(r"(?<![\w.>])env\(\s*\"(" + NAME + r")\""),
             re.compile(r"Saved\s+\w+\[\d*\]\s*=\s*\{(.*)\}")]
SH_DEFAULT = re.compile(r"\$\{(" + NAME + r"):?-")
SH_SLURM = re.compile(r"\$\{?(SLURM_[A-Z0-9_]+)")

def variables_read():
    found = {}  # name -> first file that reads it
    def add(name, path):
        found.setdefault(name, os.path.relpath(path, root))
    for path in files_under(["framework", "collectives", "apps", "tests"], (".cpp", ".hpp")):
        for line in read(path).splitlines():
            for rx in CPP_READS[:2]:
                for m in rx.finditer(line):
                    add(m.group(1), path)
            m = CPP_READS[2].search(line)
            if m:
                for name in re.findall(r"\"(" + NAME + r")\"", m.group(1)):
                    add(name, path)
    scripts = list(files_under(["tools"], (".sh",))) + list(files_under(["slurm"], (".sbatch",)))
    ci = os.path.join(root, ".ci", "run")
    if os.path.exists(ci):
        scripts.append(ci)
    for path in scripts:
        if os.path.basename(path) == "check-docs.sh":
            continue
        text = read(path)
        for m in SH_DEFAULT.finditer(text):
            add(m.group(1), path)
        if path.endswith(".sbatch"):
            for m in SH_SLURM.finditer(text):
                add(m.group(1), path)
    return found

def table_variables(guide_path):
    """Backticked names in the first column of the tables under '## Environment variables'."""
    names, in_section = set(), False
    for line in read(guide_path).splitlines():
        if line.startswith("## "):
            in_section = line.strip().lower() == "## environment variables"
            continue
        if in_section and line.startswith("|"):
            first = line.split("|")[1]
            names.update(re.findall(r"`(" + NAME + r")`", first))
    return names

def anchors(path):
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces to
    hyphens, a -1, -2 ... suffix for repeated ones."""
    seen, out, fenced = {}, set(), False
    for line in read(path).splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")

def broken_links(path):
    problems, fenced = [], False
    for number, line in enumerate(read(path).splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = m.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                continue  # a URL
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            if not os.path.exists(resolved):
                problems.append(f"{os.path.relpath(path, root)}:{number}: link to '{target}': "
                                f"{os.path.relpath(resolved, root)} does not exist")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                problems.append(f"{os.path.relpath(path, root)}:{number}: link to '{target}': "
                                f"{os.path.relpath(resolved, root)} has no heading with the "
                                f"anchor #{anchor}")
    return problems

EXAMPLE = re.compile(r"^<!--\s*example:\s*([^\s#]+)(?:#([\w-]+))?\s*-->\s*$")

def example_text(source, region=None):
    """An example file's text as the documents quote it: without its license line; or, for
    FILE#REGION, the lines between `// [REGION]` and `// [end REGION]`, without their common
    indentation (None when the file has no such region)."""
    lines = read(source).rstrip().split("\n")
    if region:
        marks = [i for i, l in enumerate(lines) if l.strip() in (f"// [{region}]",
                                                                   f"// [end {region}]")]
        if len(marks) != 2:
            return None
        body = lines[marks[0] + 1:marks[1]]
        indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
        return "\n".join(l[indent:] for l in body).rstrip()
    if lines and "SPDX-License-Identifier:" in lines[0]:
        lines = lines[1:]
    return "\n".join(lines)

def stale_examples(path):
    """Code blocks marked `<!-- example: FILE -->` must be FILE's text exactly."""
    problems, lines = [], read(path).splitlines()
    for number, line in enumerate(lines, 1):
        m = EXAMPLE.match(line)
        if not m:
            continue
        source = os.path.join(root, m.group(1))
        if number >= len(lines) or not lines[number].startswith("```"):
            problems.append(f"{os.path.relpath(path, root)}:{number}: the example marker is not "
                            "followed by a code block")
            continue
        end = number + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        quoted = "\n".join(lines[number + 1:end]).rstrip()
        if not os.path.exists(source):
            problems.append(f"{os.path.relpath(path, root)}:{number}: example {m.group(1)} does "
                            "not exist")
        elif example_text(source, m.group(2)) is None:
            problems.append(f"{os.path.relpath(path, root)}:{number}: {m.group(1)} has no region "
                            f"'// [{m.group(2)}]' ... '// [end {m.group(2)}]'")
        elif example_text(source, m.group(2)) != quoted:
            what = f"{m.group(1)}#{m.group(2)}" if m.group(2) else m.group(1)
            problems.append(f"{os.path.relpath(path, root)}:{number}: the code block differs from "
                            f"{what}: copy the file (or region) into the block again")
    return problems

def broken_pictures():
    """Every SVG in docs/ must be well-formed XML (a browser shows nothing for a broken one)."""
    import xml.etree.ElementTree as ET
    problems = []
    for path in files_under(["docs"], (".svg",)):
        try:
            ET.parse(path)
        except ET.ParseError as e:
            problems.append(f"{os.path.relpath(path, root)}: not well-formed XML: {e}")
    return problems

LICENSE_ID = "SPDX-License-Identifier: BSD-3-Clause"
LICENSED_SUFFIXES = (".cpp", ".hpp", ".h", ".c", ".cu", ".py", ".sh", ".cmake", ".txt", ".in",
                     ".supp", ".sbatch", ".f90")

def unlicensed():
    """LICENSE must exist, and every source, build and script file must carry the SPDX line."""
    problems = []
    if not os.path.exists(os.path.join(root, "LICENSE")):
        problems.append("LICENSE does not exist at the top of the tree")
    paths = list(files_under(["framework", "collectives", "bindings", "apps", "tests", "tools",
                              "cmake", "slurm", "docs"], LICENSED_SUFFIXES))
    paths += [os.path.join(root, "CMakeLists.txt"), os.path.join(root, ".ci", "run")]
    paths += [p for p in os.environ.get("CHECK_DOCS_LICENSE_EXTRA", "").split(":") if p]
    for path in paths:
        if not os.path.exists(path):
            continue
        head = read(path).split("\n", 3)[:3]
        if not any(LICENSE_ID in line for line in head):
            problems.append(f"{os.path.relpath(path, root)}: no '{LICENSE_ID}' line among its "
                            "first three lines: add it as a comment at the top (after a #! line)")
    return problems

read_vars = variables_read()
if mode == "list":
    for name in sorted(read_vars):
        print(f"{name}\t{read_vars[name]}")
    sys.exit(0)

errors = []
if not os.path.exists(guide):
    errors.append(f"the user guide {guide} does not exist")
else:
    documented = table_variables(guide)
    if not documented:
        errors.append(f"{guide}: no table rows under '## Environment variables' (expected lines "
                      "like '| `SKEIN_API` | ... |')")
    for name in sorted(set(read_vars) - documented):
        errors.append(f"{name} is read by {read_vars[name]} but is not in the environment-variable "
                      f"table of {os.path.relpath(guide, root)}: add a row saying who reads it and "
                      "what it does")
errors.extend(broken_pictures())
errors.extend(unlicensed())
for path in doc_files:
    errors.extend(broken_links(path))
    errors.extend(stale_examples(path))

if errors:
    print(f"check-docs: {len(errors)} problem(s):")
    for e in errors:
        print(f"  {e}")
    sys.exit(1)
print(f"check-docs: OK: {len(read_vars)} environment variables read by the code are all in "
      f"{os.path.relpath(guide, root)}; the relative links and quoted examples of {len(doc_files)} "
      "documents are right; LICENSE and every file's SPDX line are there")
PY

GUIDE="$ROOT/docs/guide.md"
DOCS=("$ROOT/README.md" "$ROOT"/docs/*.md)

run_checks() {  # GUIDE DOC_FILES...
  python3 -c "$CHECKER" "$MODE_FOR_PYTHON" "$ROOT" "$@"
}

if [[ "$MODE" == "list" ]]; then
  MODE_FOR_PYTHON=list run_checks "$GUIDE"
  exit 0
fi

MODE_FOR_PYTHON=check
if [[ "$MODE" == "self-test" ]]; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  # A guide without the row of one variable the code reads must fail, naming it: one read by
  # C++ code and one read by a script, so that both scans are proved.
  listed="$(MODE_FOR_PYTHON=list run_checks "$GUIDE")"
  victims=("$(grep -m1 -E $'^SKEIN_[A-Z0-9_]+\t.*\\.(cpp|hpp)$' <<<"$listed" | cut -f1)"
           "$(grep -m1 -E $'\t(tools|slurm)/' <<<"$listed" | cut -f1)")
  for victim in "${victims[@]}"; do
    if [[ -z "$victim" ]]; then
      echo "check-docs: self-test: found no variable read by C++ code or by a script; the scan is" \
           "broken" >&2
      exit 1
    fi
    grep -v "^| *\`$victim\`" "$GUIDE" > "$scratch/guide.md"
    if out="$(run_checks "$scratch/guide.md" 2>&1)"; then
      echo "check-docs: self-test: a guide without the row of $victim passed the check" >&2
      exit 1
    fi
    grep -q "$victim is read by" <<<"$out" || {
      echo "check-docs: self-test: the check failed without naming $victim:" >&2
      echo "$out" >&2
      exit 1
    }
  done
  # A document with a link to a missing file must fail, naming the link.
  mkdir -p "$scratch/docs"
  printf 'See [the missing page](no-such-page.md), [no such part](#nowhere) and [a site](https://example.org).\n' \
    > "$scratch/docs/broken.md"
  if out="$(run_checks "$GUIDE" "$scratch/docs/broken.md" 2>&1)"; then
    echo "check-docs: self-test: a link to a missing file passed the check" >&2
    exit 1
  fi
  grep -q "no-such-page.md" <<<"$out" && grep -q "anchor #nowhere" <<<"$out" || {
    echo "check-docs: self-test: the check failed without naming the broken link:" >&2
    echo "$out" >&2
    exit 1
  }
  # A quoted example that differs from its file must fail.
  sed '0,/skein::Queue queue(ctx);/s//skein::Queue queue(ctx);  \/\/ edited/' "$GUIDE" \
    > "$scratch/guide-edited.md"
  if out="$(run_checks "$scratch/guide-edited.md" "$scratch/guide-edited.md" 2>&1)"; then
    echo "check-docs: self-test: an edited copy of a quoted example passed the check" >&2
    exit 1
  fi
  grep -q "differs from" <<<"$out" || {
    echo "check-docs: self-test: the check failed without naming the edited example:" >&2
    echo "$out" >&2
    exit 1
  }
  # The same for a quoted region of an example (docs/seeds.md quotes docs/examples/seeds.cpp#NAME).
  sed '0,/const auto apis = skein::Api::all_available();/s//const auto apis = skein::Api::all_available();  \/\/ edited/' \
    "$ROOT/docs/seeds.md" > "$scratch/seeds-edited.md"
  if out="$(run_checks "$GUIDE" "$scratch/seeds-edited.md" 2>&1)"; then
    echo "check-docs: self-test: an edited copy of a quoted region passed the check" >&2
    exit 1
  fi
  grep -q "differs from docs/examples/seeds.cpp#discovery" <<<"$out" || {
    echo "check-docs: self-test: the check failed without naming the edited region:" >&2
    echo "$out" >&2
    exit 1
  }
  # A source file without its license line must fail, naming it.
  printf '// a file without its license line\nint main() { return 0; }\n' > "$scratch/unlicensed.cpp"
  if out="$(CHECK_DOCS_LICENSE_EXTRA="$scratch/unlicensed.cpp" run_checks "$GUIDE" 2>&1)"; then
    echo "check-docs: self-test: a source file without its SPDX line passed the check" >&2
    exit 1
  fi
  grep -q "unlicensed.cpp: no 'SPDX-License-Identifier" <<<"$out" || {
    echo "check-docs: self-test: the check failed without naming the unlicensed file:" >&2
    echo "$out" >&2
    exit 1
  }
  echo "check-docs: self-test: a guide without ${victims[*]}, a broken link, an edited example, an" \
       "edited region of one and a file without its license line all fail, as they must"
fi

status=0
run_checks "$GUIDE" "${DOCS[@]}" || status=1
# The migration guide's tables: every seed name answered, every skein:: and skein. name real, no
# PENDING row (tools/check-seeds-doc.py; its --self-test is ctest docs.seeds).
seeds_args=()
[[ "$MODE" == "self-test" ]] && seeds_args=(--self-test)
python3 "$ROOT/tools/check-seeds-doc.py" "${seeds_args[@]}" || status=1
exit "$status"
