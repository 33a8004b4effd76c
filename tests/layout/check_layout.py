#!/usr/bin/env python3
"""check_layout.py - the tree keeps the layout the README describes.

A *folder* is a directory that holds C/C++ code of one library (or of one
room of a library: exporter/report/, collector/core/).  A file's folder is
the directory it sits in, except that white-box tests (D/tests/) belong to
D.  Code under include/, tests/, bench/, docs/, scripts/, cmake/ and
examples/ belongs to no folder.

Checks, over every C/C++ source and header of the source tree (build
directories aside):
  1. no file outside a folder F includes one of F's private headers (a
     header in F), by a relative path or through an include directory that a
     CMakeLists.txt outside F points into F.  One exception: F/face.h is the
     face F shows the other folders under the same top-level directory
     (collector/core/face.h, used by collector/cuda/ ...); it is private to
     that top-level directory;
  2. every folder is named in the README's Layout section (a nested folder
     by its full path, e.g. "exporter/report/"), and every directory named
     there exists;
  3. one library per folder: each folder has a CMakeLists.txt.
Prints one line per violation and exits 1 if there is any.
"""
import os
import re
import sys

SRC = os.environ.get("STPROF_SRC") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODE_EXT = (".c", ".h", ".cpp", ".cc", ".hpp", ".cu")
# Top-level directories that are not libraries of their own.
NOT_LIBS = {"include", "tests", "bench", "docs", "scripts", "cmake", "examples"}
FACE = "face.h"


def rel(path):
    return os.path.relpath(path, SRC)


def top_dir(path):
    r = rel(path)
    return r.split(os.sep)[0] if os.sep in r else ""


def folder_of_dir(d):
    """The folder a directory belongs to ('' for none): white-box tests/
    count as their parent's."""
    parts = rel(d).split(os.sep)
    if not parts or parts[0] in (".", "") or parts[0] in NOT_LIBS:
        return ""
    if "tests" in parts:
        parts = parts[:parts.index("tests")]
    return "/".join(parts)


def folder_of(path):
    return folder_of_dir(os.path.dirname(path))


def walk():
    for root, dirs, files in os.walk(SRC):
        r = rel(root)
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (r == "." and d.startswith("build"))
                   and d not in ("__pycache__", "fuzz-corpus")]
        for f in files:
            yield os.path.join(root, f)


def visible(header, here):
    """May a file of folder `here` include `header`?"""
    owner = folder_of(header)
    if not owner or owner == here:
        return True
    if os.path.basename(header) == FACE:
        return here.split("/")[0] == owner.split("/")[0]
    return False


def main():
    bad = []
    folders = set()
    # include directories that CMake files point into a folder they are not in
    for path in walk():
        if os.path.basename(path) != "CMakeLists.txt":
            continue
        here = folder_of(path)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in re.finditer(r"target_include_directories\(([^)]*)\)", text, re.S):
            for d in re.findall(r"\$\{CMAKE_SOURCE_DIR\}/([A-Za-z0-9_/]+)", m.group(1)):
                owner = folder_of_dir(os.path.join(SRC, d.rstrip("/")))
                if owner and owner != here:
                    bad.append(f"{rel(path)}: puts {d}/ (private headers) on an include path outside {owner}/")

    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for path in walk():
        if not path.endswith(CODE_EXT):
            continue
        here = folder_of(path)
        if here:
            folders.add(here)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in inc.finditer(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            if not os.path.exists(target):
                continue  # found through an include path (include/, tests/lib, generated)
            if not visible(target, here):
                line = text.count("\n", 0, m.start()) + 1
                owner = folder_of(target)
                why = (f"{owner}/'s face, private to {owner.split('/')[0]}/"
                       if os.path.basename(target) == FACE else f"private to {owner}/")
                bad.append(f"{rel(path)}:{line}: includes {m.group(1)}, {why}")

    readme = open(os.path.join(SRC, "README.md"), encoding="utf-8").read()
    sec = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", readme, re.M | re.S)
    if not sec:
        bad.append("README.md: no '## Layout' section")
    else:
        named = set(re.findall(r"^ {4,}([a-z][a-z0-9_/]*?)/\s", sec.group(1), re.M))
        for d in sorted(folders - named):
            bad.append(f"README.md: Layout does not name {d}/")
        for d in sorted(named):
            if not os.path.isdir(os.path.join(SRC, d)):
                bad.append(f"README.md: Layout names {d}/, which does not exist")
    for d in sorted(folders):
        if not os.path.exists(os.path.join(SRC, d, "CMakeLists.txt")):
            bad.append(f"{d}/: code without a CMakeLists.txt (one library per folder)")

    for b in bad:
        print(b)
    print(f"layout: {len(folders)} code folders, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
