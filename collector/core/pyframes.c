/*
 * pyframes.c - the Python frames of the calling thread, as synthetic call-path
 * frames, for merging with the native path (as memray's native mode does).
 *
 * Two ways to read them:
 *   - in place, without the GIL (pylayout.c): the thread's own frame chain,
 *     read where the interpreter keeps it, once a probe has found and checked
 *     the layout (Python 3.11+).  Any thread, in any mode (CPU tensors, the
 *     caching allocator's reports under its lock, the pluggable allocator),
 *     whatever other threads hold: nothing is waited for.  The probe runs the
 *     first time frames are read with the GIL held (the shim asks for it at
 *     start-up through stprof_py_probe_v1, called from Python with the GIL).
 *   - through the C API with the GIL (PyEval_GetFrame materializes frame
 *     objects), when the layout is unknown (Python 3.10, free-threaded
 *     builds, a probe that failed).  PyTorch's bindings release the GIL
 *     around every op, so a Python thread that does not hold it takes it for
 *     the walk as take_gil allows: STC_GIL_IF_ALONE (CPU tensors) only when
 *     it is the interpreter's only thread, since with other Python threads it
 *     could deadlock (the op may hold one of PyTorch's locks, the CPU
 *     generator's under torch.multinomial, that a thread holding the GIL
 *     waits for: torch.get_rng_state; tests/python/test_torch_gil.sh);
 *     STC_GIL_WAIT (the CUDA pluggable allocator, called under no lock of
 *     PyTorch's); STC_GIL_NEVER (the caching allocator's reports, under its
 *     lock).  (A thread created between the check and the take could still
 *     take the GIL first: it would have to wait for a lock this thread holds
 *     in that instant, before running any code.)  Caveat: materializing a
 *     frame object may start the cyclic GC, whose frees then happen while the
 *     collector is busy (not recorded).
 * Threads Python did not create, and an interpreter that is finalizing, get
 * no Python frames either way.  stc_py_frames_how() tells which way is used
 * (the trace says so, for the report).
 *
 * A Python frame is an "address" STP_PYFRAME_TAG | id where id is the string
 * id of "FILE:LINE in FUNCTION" in the trace (readers map it back, see
 * docs/trace-format.md), named once per (code object, position) by the
 * cache of pylines.c.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
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

/* "FILE:LINE in NAME" of a code object (the GIL held). */
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

/* A frame of the GIL path (the caller holds the GIL): the cache of
 * pylines.c, which this path pins each code object of (a reference). */
static uint32_t line_id(PyObj *code, int line, PyObj *frame)
{
	uint32_t id = stc_py_lines_get(code, line, 0, 0);
	if (id)
		return id;
	id = name_of(code, py.frame_lasti ? py.frame_line(frame) : line);
	if (id && stc_py_lines_put(code, line, 0, 0, id) == id)
		py.incref(code); /* keeps the key's address unique */
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

int stc_py_frames_how(void)
{
	if (!stc_py_active())
		return STC_PYF_NONE;
	switch (stc_py_layout_state()) {
	case 1:
		return STC_PYF_IN_PLACE;
	case 2:
		return STC_PYF_GIL;
	default:
		return STC_PYF_UNKNOWN;
	}
}

/* Called with the GIL held: the layout probe, once. */
static void probe_if_due(void)
{
	if (!stc_py_layout_state())
		stc_py_layout_probe();
}

uint32_t stc_py_frames(uint64_t *ips, uint32_t max, int take_gil)
{
	if (!max || !stc_py_active())
		return 0;
	if (STC_LIKELY(stc_py_layout_state() == 1))
		return stc_py_layout_walk(ips, max);
	int held = py.gil_check(), st = 0;
	if (!held) {
		void *ts = take_gil != STC_GIL_NEVER ? py.this_tstate() : NULL;
		if (!ts || (py.finalizing && py.finalizing()) || (take_gil != STC_GIL_WAIT && !only_thread(ts)))
			return 0;
		st = py.ensure();
	}
	probe_if_due();
	if (stc_py_layout_state() == 1) {
		uint32_t n = stc_py_layout_walk(ips, max);
		if (!held)
			py.release(st);
		return n;
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
		uint32_t id = code && !stc_py_skip_code((uintptr_t)code) ? line_id(code, pos, f) : 0;
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

/* The shim's probe (ctypes.PyDLL: the GIL is held): how frames are read
 * from now on (STC_PYF_IN_PLACE, or STC_PYF_GIL when this Python's layout
 * could not be found); the shim records it as the annotation
 * stprof.python_frames for the report. */
STC_EXPORT int stprof_py_probe_v1(void);
int stprof_py_probe_v1(void)
{
	if (!stc_py_active() || !py.gil_check())
		return stc_py_frames_how();
	int was = t_busy;
	t_busy = 1;
	probe_if_due();
	t_busy = was;
	return stc_py_frames_how();
}
