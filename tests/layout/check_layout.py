#!/usr/bin/env python3
"""check_layout.py - the tree keeps the layout the README describes.

Checks, over every C/C++ source and header of the source tree (build
directories aside):
  1. no file outside a top-level directory D includes one of D's private
     headers (a header under D/), by a relative path or through an include
     directory that a CMakeLists.txt outside D points into D;
  2. every top-level directory that holds code is named in the README's
     Layout section, and every directory named there exists;
  3. one static library per code directory: each such directory has a
     CMakeLists.txt.
Prints one line per violation and exits 1 if there is any.
"""
import os
import re
import sys

SRC = os.environ.get("STPROF_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODE_EXT = (".c", ".h", ".cpp", ".cc", ".hpp")
# Directories that are not libraries of their own.
NOT_LIBS = {"include", "tests", "bench", "docs", "scripts", "cmake", "examples"}


def top_dir(path):
    rel = os.path.relpath(path, SRC)
    return rel.split(os.sep)[0] if os.sep in rel else ""


def walk():
    for root, dirs, files in os.walk(SRC):
        rel = os.path.relpath(root, SRC)
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (rel == "." and d.startswith("build"))
                   and d not in ("__pycache__", "fuzz-corpus")]
        for f in files:
            yield os.path.join(root, f)


def main():
    bad = []
    code_dirs = set()
    # include directories that CMake files outside D point into D
    leaks = {}
    for path in walk():
        if os.path.basename(path) != "CMakeLists.txt":
            continue
        here = top_dir(path)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in re.finditer(r"target_include_directories\(([^)]*)\)", text, re.S):
            for d in re.findall(r"\$\{CMAKE_SOURCE_DIR\}/([A-Za-z0-9_]+)", m.group(1)):
                if d not in NOT_LIBS and d != here:
                    leaks.setdefault(d, []).append(os.path.relpath(path, SRC))
    for d, who in sorted(leaks.items()):
        for w in who:
            bad.append(f"{w}: puts {d}/ (private headers) on an include path outside {d}/")

    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for path in walk():
        if not path.endswith(CODE_EXT):
            continue
        here = top_dir(path)
        if here and here not in NOT_LIBS:
            code_dirs.add(here)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in inc.finditer(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            if not os.path.exists(target):
                continue  # found through an include path (include/, tests/lib, generated)
            owner = top_dir(target)
            if owner and owner not in NOT_LIBS and owner != here:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{os.path.relpath(path, SRC)}:{line}: includes {m.group(1)}, private to {owner}/")

    readme = open(os.path.join(SRC, "README.md"), encoding="utf-8").read()
    sec = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    if not sec:
        bad.append("README.md: no '## Layout' section")
    else:
        named = set(re.findall(r"^    ([a-z][a-z0-9_/]*?)/\s", sec.group(1), re.M))
        named = {n.split("/")[0] for n in named}
        for d in sorted(code_dirs - named):
            bad.append(f"README.md: Layout does not name {d}/")
        for d in sorted(named):
            if not os.path.isdir(os.path.join(SRC, d)):
                bad.append(f"README.md: Layout names {d}/, which does not exist")
    for d in sorted(code_dirs):
        if not os.path.exists(os.path.join(SRC, d, "CMakeLists.txt")):
            bad.append(f"{d}/: code without a CMakeLists.txt (one library per directory)")

    for b in bad:
        print(b)
    print(f"layout: {len(code_dirs)} code directories, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
