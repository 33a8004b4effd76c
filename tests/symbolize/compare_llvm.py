"""Compares llvm-addr2line -f -i -C -a output with symbolize_bench output
(see test_symbolize_llvm.sh).  Exit status 1 on a difference that is not
one of the two intended ones."""
import re
import sys


def read_llvm(path):
    res, cur, lines = {}, None, open(path).read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("0x"):
            cur = int(line, 16)
            res[cur] = []
            i += 1
            continue
        if cur is None or not line:
            i += 1
            continue
        func, loc = line, lines[i + 1]
        i += 2
        loc = re.sub(r" \(discriminator \d+\)", "", loc)
        file, _, num = loc.rpartition(":")
        res[cur].append(norm(func, file, num))
    return res


def read_ours(path):
    res = {}
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        frames = []
        for p in parts[1:]:
            p = p.replace(" [inlined]", "")
            m = re.match(r"^(.*) \((.*):(\d+)\)$", p)
            frames.append(norm(m.group(1), m.group(2), m.group(3)) if m else norm(p, "??", "0"))
        res[int(parts[0], 16)] = frames
    return res


def norm(func, file, num):
    # "func+0x1a (lib.so)", "func (lib.so)", "lib.so+0x1234" -> bare names
    func = re.sub(r"\+0x[0-9a-f]+ \([^()]*\)$", "", func)
    func = re.sub(r" \([^()]*\)$", "", func)
    if num in ("0", "?") or file in ("??", ""):
        file, num = "??", "0"
    return (func, file, num)


def main():
    llvm, ours, obj = read_llvm(sys.argv[1]), read_ours(sys.argv[2]), sys.argv[3]
    same = padding = outer_name = bad = 0
    for addr, mine in sorted(ours.items()):
        theirs = llvm.get(addr, [])
        if mine == theirs:
            same += 1
            continue
        if len(mine) == len(theirs) and mine[:-1] == theirs[:-1] and \
                mine[-1][1:] == theirs[-1][1:]:
            if re.search(r"\+0x[0-9a-f]+$", mine[-1][0]):
                padding += 1  # no symbol covers addr: module+offset
                continue
            if mine[-1][0] and theirs[-1][0] != "??":
                outer_name += 1  # ELF alias vs DWARF name
                continue
        bad += 1
        if bad <= 10:
            print("0x%x\n  llvm %s\n  ours %s" % (addr, theirs, mine))
    print("%s: %d addresses: %d same, %d in padding, %d outer names differ, %d wrong"
          % (obj, len(ours), same, padding, outer_name, bad))
    return 1 if bad or not same else 0


sys.exit(main())
