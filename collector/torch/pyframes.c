/*
 * pyframes.c - the Python frames of the calling thread, as synthetic call-path
 * frames, for merging with the native path (as memray's native mode does).
 *
 * The CPython functions are found at run time with dlsym (the collector is
 * preloaded into every program and links no libpython); where they are
 * missing (not a Python process) nothing is added.  Frames are read with the
 * GIL held (PyEval_GetFrame materializes frame objects).  PyTorch's bindings
 * release the GIL around every op, so a Python thread (one with a thread
 * state) that does not hold it takes it for the walk and gives it back;
 * its own frames cannot have changed meanwhile (the thread is here).
 * For a CPU tensor it does so only when it is the interpreter's only
 * thread (STC_GIL_IF_ALONE): then no other thread can hold the GIL, so
 * taking it cannot wait.  With other Python threads it could deadlock: the
 * op that allocates may hold one of PyTorch's locks (the CPU generator's,
 * under torch.multinomial) that a thread holding the GIL waits for
 * (torch.get_rng_state does); tests/python/test_torch_gil.sh runs that
 * program.  Such a thread's tensors get their native frames only.  The
 * CUDA pluggable allocator waits for the GIL (STC_GIL_WAIT): CUDA ops hold
 * the generator's lock only while they take a seed, and PyTorch calls that
 * allocator holding no lock of its own.  (A thread created between the
 * check and the take could still take the GIL first: it would have to wait
 * for a lock this thread holds in that instant, before running any code.)
 * Threads Python did not create, and an interpreter that is finalizing, get
 * no Python frames.  Caveat: materializing a frame object may start the
 * cyclic GC, whose frees then happen while the collector is busy (not
 * recorded).
 *
 * A Python frame is an "address" STP_PYFRAME_TAG | id where id is the string
 * id of "FILE:LINE in FUNCTION" in the trace (readers map it back, see
 * docs/trace-format.md).  Strings are interned once per (code object, line):
 * the cache holds a reference to each code object it keys, so a key's pointer
 * is never reused by another code object.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "torch.h"
#include "stprof/trace.h"

typedef void PyObj;
static struct {
	int (*gil_check)(void);
	PyObj *(*get_frame)(void);          /* borrowed */
	PyObj *(*frame_back)(PyObj *);      /* new reference */
	PyObj *(*frame_code)(PyObj *);      /* new reference */
	int (*frame_line)(PyObj *);
	int (*frame_lasti)(PyObj *);        /* optional (3.11+) */
	PyObj *(*getattr)(PyObj *, const char *);
	const char *(*utf8)(PyObj *);
	void (*incref)(PyObj *);
	void (*decref)(PyObj *);
	void (*err_clear)(void);
	void *(*this_tstate)(void);
	int (*ensure)(void);
	void (*release)(int);
	int (*finalizing)(void);            /* optional */
	void *(*tstate_interp)(void *);     /* optional (3.9+), as the next two */
	void *(*thread_head)(void *);
	void *(*thread_next)(void *);
} py;
static _Atomic int py_state; /* 0 unresolved, 1 usable, 2 not a (usable) Python */
static uintptr_t interp_lo, interp_hi;

static int find_interp(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t probe = (uintptr_t)data, lo, hi;
	if (stc_phdr_span(info, &lo, &hi) && probe >= lo && probe < hi) {
		interp_lo = lo;
		interp_hi = hi;
		return 1;
	}
	return 0;
}

#define SYM(field, name) (*(void **)&py.field = dlsym(RTLD_DEFAULT, name))
static void resolve(void)
{
	int ok = SYM(gil_check, "PyGILState_Check") && SYM(get_frame, "PyEval_GetFrame") &&
	         SYM(frame_back, "PyFrame_GetBack") && SYM(frame_code, "PyFrame_GetCode") &&
	         SYM(frame_line, "PyFrame_GetLineNumber") && SYM(getattr, "PyObject_GetAttrString") &&
	         SYM(utf8, "PyUnicode_AsUTF8") && SYM(incref, "Py_IncRef") && SYM(decref, "Py_DecRef") &&
	         SYM(err_clear, "PyErr_Clear") &&
	         SYM(this_tstate, "PyGILState_GetThisThreadState") && SYM(ensure, "PyGILState_Ensure") &&
	         SYM(release, "PyGILState_Release");
	SYM(frame_lasti, "PyFrame_GetLasti");
	if (!SYM(finalizing, "Py_IsFinalizing"))
		SYM(finalizing, "_Py_IsFinalizing");
	if (!SYM(tstate_interp, "PyThreadState_GetInterpreter") || !SYM(thread_head, "PyInterpreterState_ThreadHead") ||
	    !SYM(thread_next, "PyThreadState_Next"))
		py.tstate_interp = NULL; /* then the GIL is never taken */
	if (ok) {
		void *probe;
		*(void **)&probe = (void *)py.get_frame;
		dl_iterate_phdr(find_interp, probe);
	}
	atomic_store(&py_state, ok ? 1 : 2);
}

int stc_py_active(void)
{
	int s = atomic_load_explicit(&py_state, memory_order_relaxed);
	if (STC_UNLIKELY(!s)) {
		resolve();
		s = atomic_load(&py_state);
	}
	return s == 1;
}

int stc_py_in_interpreter(uint64_t ip) { return ip >= interp_lo && ip < interp_hi; }

/* ---- (code object, position) -> string id; guarded by the GIL the caller
 * holds.  The position is the frame's last instruction where the
 * interpreter tells it (3.11+), so a known one costs no line-table search
 * (PyCode_Addr2Line scans the table: microseconds per tensor on deep
 * stacks); else the line. */
typedef struct { PyObj *code; int line; uint32_t id; } line_slot; /* line: the position */
static line_slot *lines;
static size_t lines_cap, nlines;

static uint32_t name_of(PyObj *code, int line)
{
	PyObj *fn = py.getattr(code, "co_filename");
	PyObj *name = py.getattr(code, "co_qualname");
	if (!name) {
		py.err_clear();
		name = py.getattr(code, "co_name");
	}
	const char *f = fn ? py.utf8(fn) : NULL, *n = name ? py.utf8(name) : NULL;
	char buf[1024];
	int len = snprintf(buf, sizeof buf, "%s:%d in %s", f ? f : "?", line, n ? n : "?");
	if (fn)
		py.decref(fn);
	if (name)
		py.decref(name);
	py.err_clear();
	if (len < 0)
		return 0;
	return stc_intern_string(buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
}

static uint32_t line_id(PyObj *code, int line, PyObj *frame)
{
	if ((nlines + 1) * 2 > lines_cap) {
		size_t nc = lines_cap ? lines_cap * 2 : 4096;
		line_slot *nt = stc_mem_alloc(nc * sizeof *nt);
		if (!nt)
			return 0;
		for (size_t i = 0; i < lines_cap; i++)
			if (lines[i].code) {
				size_t j = (((uintptr_t)lines[i].code >> 4) * 31 + (size_t)lines[i].line) & (nc - 1);
				while (nt[j].code)
					j = (j + 1) & (nc - 1);
				nt[j] = lines[i];
			}
		if (lines)
			stc_mem_free(lines, lines_cap * sizeof *lines);
		lines = nt;
		lines_cap = nc;
	}
	size_t j = (((uintptr_t)code >> 4) * 31 + (size_t)line) & (lines_cap - 1);
	for (; lines[j].code; j = (j + 1) & (lines_cap - 1))
		if (lines[j].code == code && lines[j].line == line)
			return lines[j].id;
	uint32_t id = name_of(code, py.frame_lasti ? py.frame_line(frame) : line);
	if (!id)
		return 0;
	py.incref(code); /* keeps the key's address unique */
	lines[j] = (line_slot){code, line, id};
	nlines++;
	return id;
}

/* ts (this thread's state) is its interpreter's only thread state.  Read
 * without the GIL: the head is compared, not followed, unless it is ts
 * itself, which cannot go away while its thread is here; new states are
 * put at the head. */
static int only_thread(void *ts)
{
	if (!py.tstate_interp)
		return 0;
	void *interp = py.tstate_interp(ts);
	return interp && py.thread_head(interp) == ts && !py.thread_next(ts);
}

uint32_t stc_py_frames(uint64_t *ips, uint32_t max, int take_gil)
{
	if (!max || !stc_py_active())
		return 0;
	int held = py.gil_check(), st = 0;
	if (!held) {
		void *ts = take_gil != STC_GIL_NEVER ? py.this_tstate() : NULL;
		if (!ts || (py.finalizing && py.finalizing()) || (take_gil != STC_GIL_WAIT && !only_thread(ts)))
			return 0;
		st = py.ensure();
	}
	PyObj *f = py.get_frame();
	if (!f) {
		if (!held)
			py.release(st);
		return 0;
	}
	py.incref(f);
	uint32_t n = 0;
	while (f && n < max) {
		PyObj *code = py.frame_code(f);
		int pos = py.frame_lasti ? py.frame_lasti(f) : py.frame_line(f);
		uint32_t id = code ? line_id(code, pos, f) : 0;
		if (code)
			py.decref(code);
		if (id)
			ips[n++] = STP_PYFRAME_TAG | id;
		PyObj *back = py.frame_back(f);
		py.decref(f);
		f = back;
	}
	if (f)
		py.decref(f);
	if (!held)
		py.release(st);
	return n;
}
