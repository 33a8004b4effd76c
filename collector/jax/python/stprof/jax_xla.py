"""stprof.jax_xla - what XLA says about a JAX program's memory, for the
buffer recorder (stprof.jax_buffers) and the allocator report:

  - each compiled program (jax._src.compiler.compile_or_get_cached wrapped:
    compiled or read from the persistent cache): its temporary bytes
    (get_compiled_memory_stats().temp_size_in_bytes: the one temp buffer
    XLA allocates for each run) and, for each output, the HLO value that
    makes it: the root instruction's op_name and the source line XLA keeps
    for it (HLO text: metadata={op_name=... stack_frame_id=N} and the
    module's StackFrames table, or source_file/source_line in older ones);
  - the allocator's settings as run, as annotations at install:
    xla.preallocate (XLA_PYTHON_CLIENT_PREALLOCATE, default true),
    xla.mem_fraction_ppm (XLA_PYTHON_CLIENT_MEM_FRACTION, default .75),
    xla.allocator_platform (XLA_PYTHON_CLIENT_ALLOCATOR=platform);
  - after each dispatch, memory_stats() of every device that has them (not
    the CPU) as annotations xla.KEY:ID, ID the device's local hardware id,
    each only when it changed (detector/xlafeed.c reads them).

Only programs of the program's own jitted functions are parsed (their
names are registered by stprof.jax_steps); JAX's internal ones (one per
eager op) are skipped.  Nothing here changes what XLA compiles or runs.
"""
import os
import re

from . import ANNOTATION, mark

STAT_KEYS = ("bytes_in_use", "peak_bytes_in_use", "pool_bytes", "peak_pool_bytes", "largest_free_block_bytes",
             "bytes_limit", "bytes_reserved", "peak_bytes_reserved", "num_allocs", "largest_alloc_size")

_name_re = re.compile(r"[^0-9a-zA-Z_]")
_table_re = re.compile(r"^(\d+) (.*)$")
_kv_re = re.compile(r"(\w+)=(\d+)")
_instr_re = re.compile(r"^\s*(ROOT )?%?([\w.\-]+) = (.*)$")
_meta_re = re.compile(r'metadata=\{([^}]*)\}')
_comment_re = re.compile(r"/\*.*?\*/")  # /*index=5*/ in long tuples
_opname_re = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


class Program:
    """One compiled XLA program: temp bytes, outputs' HLO values."""
    __slots__ = ("name", "temp", "outputs", "shapes")

    def __init__(self, name, temp, outputs, shapes):
        self.name = name
        self.temp = temp          # bytes of its temporary buffer
        self.outputs = outputs    # per output: (op_name, file, line, function) or None
        self.shapes = shapes      # per output: "f32[64,32]" as the entry layout says


def _tables(text):
    """The StackFrames tables of an HLO module's text: frame id -> (file, line, function)."""
    sect, files, funcs, locs, frames = None, {}, {}, {}, {}
    for line in text.split("\n", 400000):
        if line.startswith("%") or line.startswith("ENTRY"):
            break
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            sect = line
            continue
        m = _table_re.match(line)
        if not m or sect is None:
            continue
        k, v = int(m.group(1)), m.group(2)
        if sect in ("FileNames", "FunctionNames"):
            (files if sect == "FileNames" else funcs)[k] = v.strip('"')
        else:
            kv = dict((a, int(b)) for a, b in _kv_re.findall(v))
            (locs if sect == "FileLocations" else frames)[k] = kv
    out = {}
    for fid, fr in frames.items():
        loc = locs.get(fr.get("file_location_id"))
        if loc:
            out[fid] = (files.get(loc.get("file_name_id"), "?"), loc.get("line", 0),
                        funcs.get(loc.get("function_name_id"), "?"))
    return out


def _value_of(meta, frames):
    """(op_name, file, line, function) of an instruction's metadata."""
    m = _opname_re.search(meta)
    op = m.group(1) if m else ""
    kv = dict(_kv_re.findall(meta))
    if "stack_frame_id" in kv and int(kv["stack_frame_id"]) in frames:
        f, line, fn = frames[int(kv["stack_frame_id"])]
        return (op, f, line, fn)
    sf = re.search(r'source_file="([^"]*)"', meta)
    if sf and "source_line" in kv:
        return (op, sf.group(1), int(kv["source_line"]), "")
    return (op, "", 0, "") if op else None


def _split_top(s):
    """s split at the commas outside brackets and braces."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(s[start:i])
            start = i + 1
    out.append(s[start:])
    return [x.strip() for x in out if x.strip()]


def _result_shapes(head):
    """The result shapes of entry_computation_layout={(...)->RESULT} in the
    module's first line, layouts dropped: ["f32[64,32]", "f32[]"]."""
    i = head.find(")->")
    if i < 0:
        return []
    j = i + 3
    depth = 0
    for k in range(j, len(head)):
        c = head[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
    else:
        k = len(head)
    res = head[j:k]
    if res.startswith("(") and res.endswith(")"):
        res = res[1:-1]
    return [x.split("{")[0].strip() for x in _split_top(_comment_re.sub("", res))]


def parse_hlo(text):
    """Outputs' HLO values and shapes of a module's text (see Program)."""
    frames = _tables(text)
    shapes = _result_shapes(text.split("\n", 1)[0])
    at = text.find("\nENTRY ")
    if at < 0:
        return [], shapes
    body = text[at + 1:]
    meta = {}
    root = None
    for line in body.split("\n")[1:]:
        if line.startswith("}"):
            break
        m = _instr_re.match(line)
        if not m:
            continue
        name, rest = m.group(2), m.group(3)
        mm = _meta_re.search(rest)
        meta[name] = mm.group(1) if mm else ""
        if m.group(1):
            root = (name, rest)
    if root is None:
        return [], shapes
    name, rest = root
    t = re.search(r"\btuple\((.*)\)", rest)
    if t:
        names = [x.strip().lstrip("%") for x in _comment_re.sub("", t.group(1)).split(",") if x.strip()]
        return [_value_of(meta.get(n, ""), frames) for n in names], shapes
    return [_value_of(meta.get(name, ""), frames)], shapes


class Xla:
    def __init__(self):
        self.names = set()      # module names of the program's own jitted functions
        self.programs = {}      # module name -> [Program]
        self.devices = None     # devices with memory_stats, once known
        self.last = {}          # (device id, key) -> value last annotated
        self.compiler = None

    # ---- compiled programs
    def register(self, jitted, fun):
        self.names.add("jit_" + _name_re.sub("_", jitted._stprof_name))

    def compiled(self, module_name, ex):
        if module_name not in self.names:
            return
        try:
            ms = ex.get_compiled_memory_stats()
            temp = int(getattr(ms, "temp_size_in_bytes", 0) or 0)
        except Exception:
            temp = 0
        outputs, shapes = [], []
        try:
            mods = ex.hlo_modules()
            if mods:
                outputs, shapes = parse_hlo(mods[0].to_string())
        except Exception:
            pass
        self.programs.setdefault(module_name, []).append(Program(module_name, temp, outputs, shapes))

    def program_of(self, jitted, leaves):
        """The program a dispatch of jitted ran: the newest of its name whose
        outputs have the shapes of the arrays it returned."""
        progs = self.programs.get("jit_" + _name_re.sub("_", jitted._stprof_name))
        if not progs:
            return None
        if len(progs) == 1:
            return progs[0]
        want = None
        for p in reversed(progs):
            if len(p.shapes) != len(leaves):
                continue
            if want is None:
                want = [_shape_str(x) for x in leaves]
            if p.shapes == want:
                return p
        return progs[-1]

    def wrap_compiler(self, compiler):
        real = compiler.compile_or_get_cached
        if getattr(real, "_stprof", False):
            return
        xla = self

        def compile_or_get_cached(backend, computation, *args, **kwargs):
            ex = real(backend, computation, *args, **kwargs)
            try:
                from jax._src.lib.mlir import ir
                name = ir.StringAttr(computation.operation.attributes["sym_name"]).value
                xla.compiled(name, ex)
            except Exception:
                pass
            return ex
        compile_or_get_cached._stprof = True
        compiler.compile_or_get_cached = compile_or_get_cached

    # ---- settings and statistics
    def annotate_settings(self):
        pre = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true").strip().lower()
        mark(ANNOTATION, "xla.preallocate", 0 if pre in ("false", "0", "no", "off") else 1)
        try:
            frac = float(os.environ.get("XLA_PYTHON_CLIENT_MEM_FRACTION", "0.75"))
        except ValueError:
            frac = 0.75
        mark(ANNOTATION, "xla.mem_fraction_ppm", int(round(frac * 1e6)))
        alloc = os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "").strip().lower()
        mark(ANNOTATION, "xla.allocator_platform", 1 if alloc == "platform" else 0)

    def sample(self, jax):
        if self.devices is None:
            self.devices = []
            try:
                for d in jax.local_devices():
                    if d.platform != "cpu" and d.memory_stats():
                        self.devices.append(d)
            except Exception:
                pass
        for d in self.devices:
            try:
                st = d.memory_stats() or {}
            except Exception:
                continue
            hw = getattr(d, "local_hardware_id", None)
            if hw is None:
                hw = d.id
            for k in STAT_KEYS:
                v = st.get(k)
                if v is None or self.last.get((hw, k)) == v:
                    continue
                self.last[(hw, k)] = v
                mark(ANNOTATION, "xla.%s:%d" % (k, hw), int(v))


class Sampler:
    """The stprof.jax_steps observer that samples memory_stats() after each
    dispatch (and registers the program's jitted functions' names)."""

    def __init__(self, xla, jax):
        self.xla = xla
        self.jax = jax

    def register(self, jitted, fun):
        self.xla.register(jitted, fun)

    def before(self, fn, args, kwargs):
        return None

    def after(self, fn, args, kwargs, out, token):
        self.xla.sample(self.jax)


def _shape_str(x):
    try:
        dt = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int32": "s32",
              "int64": "s64", "int8": "s8", "uint8": "u8", "uint32": "u32", "bool": "pred", "int16": "s16",
              "uint16": "u16", "uint64": "u64", "complex64": "c64", "complex128": "c128"}.get(str(x.dtype), str(x.dtype))
        return "%s[%s]" % (dt, ",".join(str(int(s)) for s in x.shape))
    except Exception:
        return "?"


XLA = Xla()
