#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks Skein's Spack recipe against the CMake options, without Spack.

    python3 tools/spack/check_variants.py [SOURCE_TREE]

The recipe (tools/spack/spack_repo/skein/packages/skein/package.py) must compile as Python, and its
SKEIN_WITH_VARIANTS mapping must name every SKEIN_WITH_* option the CMake files declare
(skein_dependency_option(NAME ...) in cmake/SkeinOptions.cmake, or option()/set(... CACHE) of a
SKEIN_WITH_* anywhere in the build files) and no other, each through a variant the recipe declares
with variant(). Exit status 0 when they agree; 1 with what differs otherwise. Before checking the
tree, it proves on altered copies that a missing, an extra and an undeclared variant each fail.
"""

import ast
import os
import re
import sys

RECIPE = os.path.join("tools", "spack", "spack_repo", "skein", "packages", "skein", "package.py")
DEPENDENCY_OPTION = re.compile(r"^\s*skein_dependency_option\(\s*([A-Z0-9_]+)", re.M)
DECLARED_OPTION = re.compile(
    r"^\s*(?:option\(\s*(SKEIN_WITH_[A-Z0-9_]+)\b|set\(\s*(SKEIN_WITH_[A-Z0-9_]+)\b[^)]*\bCACHE\b)",
    re.M)


def cmake_options(root):
    """SKEIN_WITH_* options declared by the tree's CMake files."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(("build", "."))]
        for name in filenames:
            if name != "CMakeLists.txt" and not name.endswith(".cmake"):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                text = f.read()
            if name == "SkeinOptions.cmake":
                found.update("SKEIN_WITH_" + m for m in DEPENDENCY_OPTION.findall(text))
            found.update(a or b for a, b in DECLARED_OPTION.findall(text))
    return found


def recipe_mapping(source, path):
    """(SKEIN_WITH_VARIANTS as a dict, the names given to variant()) of the recipe's text."""
    tree = ast.parse(compile(source, path, "exec", ast.PyCF_ONLY_AST))
    mapping = None
    variants = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "SKEIN_WITH_VARIANTS" for t in node.targets):
            mapping = ast.literal_eval(node.value)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "variant" and node.args
                and isinstance(node.args[0], ast.Constant)):
            variants.add(node.args[0].value)
    if not isinstance(mapping, dict):
        raise ValueError(f"{path}: no SKEIN_WITH_VARIANTS = {{...}} dict literal")
    return mapping, variants


def problems(options, mapping, variants):
    """What differs, as sentences; empty when the recipe and the options agree."""
    out = []
    mapped = set(mapping.values())
    for option in sorted(options - mapped):
        out.append(f"{option} is a CMake option but no variant sets it: add it to SKEIN_WITH_VARIANTS "
                   "with a variant, its dependencies and its conflicts")
    for option in sorted(mapped - options):
        out.append(f"{option} is set by the recipe but no CMake file declares it")
    for variant in sorted(set(mapping) - variants):
        out.append(f"variant '{variant}' is mapped to {mapping[variant]} but not declared with variant()")
    return out


def self_test(options, mapping, variants):
    """The check must fail on a recipe that lost a variant, gained one, or forgot to declare one."""
    some = sorted(mapping)[0]
    cases = {
        "a missing variant": (options, {k: v for k, v in mapping.items() if k != some}, variants),
        "an extra variant": (options, {**mapping, "extra": "SKEIN_WITH_EXTRA"}, variants | {"extra"}),
        "an undeclared variant": (options, mapping, variants - {some}),
        "a new option": (options | {"SKEIN_WITH_NEW"}, mapping, variants),
    }
    for what, args in cases.items():
        if not problems(*args):
            print(f"check_variants: self-test: {what} passed the check", file=sys.stderr)
            return False
    return True


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    path = os.path.join(root, RECIPE)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    compile(source, path, "exec")  # what python3 -m py_compile does, without writing __pycache__
    options = cmake_options(root)
    mapping, variants = recipe_mapping(source, path)
    if not options:
        print("check_variants: no SKEIN_WITH_* option found in the CMake files", file=sys.stderr)
        return 1
    if not self_test(options, mapping, variants):
        return 1
    found = problems(options, mapping, variants)
    for p in found:
        print(f"check_variants: {p}", file=sys.stderr)
    if found:
        return 1
    print(f"check_variants: the recipe's variants map the {len(options)} options "
          f"({', '.join(sorted(options))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
