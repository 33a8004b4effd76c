/*
 * pylayout.c - the calling thread's Python frames read in place, without the
 * GIL, as py-spy reads another process's: the thread state's current
 * interpreter frame, then each frame's code object, instruction pointer and
 * caller.  A thread's own frame chain does not change while it is inside C
 * code it called (which is where tensors are allocated), the code objects
 * its frames run are kept alive by those frames, and what is read of a code
 * object (file name, qualified name, line table) never changes; so nothing
 * here takes the GIL or a lock another thread may hold with it, and the
 * deadlock of waiting for the GIL under one of PyTorch's locks cannot
 * happen (pyframes.c, tests/python/test_torch_gil.sh).
 *
 * The layout (where the thread state keeps its current frame, where a frame
 * keeps its code, instruction pointer and caller, where a code object's
 * instructions start) is not part of Python's API and moves between
 * versions, so it is not assumed: stc_py_layout_probe(), run once with the
 * GIL held and a few Python frames on the stack, finds each field by its
 * value (the frame objects, code objects and instruction offsets the C API
 * gives for the same frames) and then walks the chain in place and checks
 * it against the C API's walk, frame by frame (code and instruction).  Only
 * a layout that passes is used; otherwise (Python older than 3.11, a
 * free-threaded build, a layout it cannot find) the caller keeps the GIL
 * path of pyframes.c.  Offsets found: the thread state's current frame,
 * directly (3.13+) or through the C frame record it points to (3.11,
 * 3.12); a frame's code (tagged pointers masked: 3.14), caller and
 * instruction pointer; the start of a code object's instructions.  Frames
 * whose executable is not a code object (3.13's entry frames) and code
 * objects the C API never shows (3.12's interpreter trampoline) are skipped.
 *
 * File and function names are read with PyUnicode_GetLength/ReadChar and the
 * line with PyCode_Addr2Line: functions of immutable objects that allocate
 * nothing and touch no thread state.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef void PyObj;

/* what pyframes.c resolved (the C API) and what the probe found */
static struct {
	_Atomic int state; /* 0 not yet, 1 usable, 2 failed for good */
	int tries;
	size_t ts_off;     /* thread state: current frame, or the C frame record */
	long cf_off;       /* -1: ts_off holds the frame; else its offset in the C frame record */
	size_t code_off, prev_off, instr_off, code_start;
	size_t fname_off, qname_off;
	void *skip[4];     /* code objects the C API never shows */
	unsigned nskip;
} L = {.cf_off = -1};

static struct {
	void *(*this_tstate)(void);
	void *(*tstate_get)(void);
	PyObj *(*get_frame)(void);
	PyObj *(*frame_back)(PyObj *);
	PyObj *(*frame_code)(PyObj *);
	int (*frame_lasti)(PyObj *);
	void (*incref)(PyObj *);
	void (*decref)(PyObj *);
	void *(*type_slot)(void *, int);
	int (*addr2line)(PyObj *, int);
	long (*ulen)(PyObj *);
	uint32_t (*uchar)(PyObj *, long);
	int (*finalizing)(void);
	const unsigned long *version;
	void *code_type;
} C;

#define SYM(field, name) (*(void **)&C.field = dlsym(RTLD_DEFAULT, name))

static int resolve(void)
{
	int ok = SYM(this_tstate, "PyGILState_GetThisThreadState") && SYM(tstate_get, "PyThreadState_Get") &&
	         SYM(get_frame, "PyEval_GetFrame") && SYM(frame_back, "PyFrame_GetBack") &&
	         SYM(frame_code, "PyFrame_GetCode") && SYM(frame_lasti, "PyFrame_GetLasti") &&
	         SYM(incref, "Py_IncRef") && SYM(decref, "Py_DecRef") && SYM(type_slot, "PyType_GetSlot") &&
	         SYM(addr2line, "PyCode_Addr2Line") && SYM(ulen, "PyUnicode_GetLength") &&
	         SYM(uchar, "PyUnicode_ReadChar") && SYM(version, "Py_Version") &&
	         (C.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type"));
	if (!SYM(finalizing, "Py_IsFinalizing"))
		SYM(finalizing, "_Py_IsFinalizing");
	return ok && *C.version >= 0x030B0000; /* 3.11: frames as this file reads them */
}

static inline uintptr_t word(const void *base, size_t off) { return *(const uintptr_t *)((const char *)base + off); }

/* the executable of a frame, tag bits masked (3.14's stack references) */
static inline uintptr_t frame_code(const char *f) { return word(f, L.code_off) & ~(uintptr_t)3; }

static inline int is_code(uintptr_t c) { return c && !(c & 7) && (void *)word((void *)c, 8) == C.code_type; }

static inline int skipped(uintptr_t c)
{
	for (unsigned i = 0; i < L.nskip; i++)
		if ((uintptr_t)L.skip[i] == c)
			return 1;
	return 0;
}

static const char *current_frame(void *ts)
{
	uintptr_t w = word(ts, L.ts_off);
	if (L.cf_off >= 0 && w)
		w = word((void *)w, (size_t)L.cf_off);
	return (const char *)w;
}

/* The offset of a code unit of frame f in its code object: the byte offset
 * PyFrame_GetLasti gives (-1 when the frame has not started). */
static inline long lasti_of(const char *f, uintptr_t code)
{
	long nbytes = (long)word((void *)code, 16) * 2; /* ob_size: code units */
	long l = (long)(word(f, L.instr_off) - code - L.code_start);
	return l >= 0 && l < nbytes ? l : -1;
}

/* ---------------------------------------------------------------- the probe */

#define PROBE_FRAMES 8

typedef struct {
	PyObj *fo;       /* frame object (new reference) */
	uintptr_t code;  /* borrowed after the decref below: the frame holds it */
	long lasti;
	const char *iframe;
} api_frame;

static size_t find_word(const void *base, size_t span, uintptr_t value, uintptr_t mask)
{
	for (size_t off = 0; off < span; off += 8)
		if ((word(base, off) & mask) == value)
			return off;
	return (size_t)-1;
}

static int member_offset(const char *name, size_t *off)
{
	/* PyMemberDef {name, type, offset, flags, doc}, ended by a NULL name */
	typedef struct { const char *name; int type; long offset; int flags; const char *doc; } member;
	const member *m = C.type_slot(C.code_type, 72 /* Py_tp_members */);
	for (; m && m->name; m++)
		if (!strcmp(m->name, name)) {
			*off = (size_t)m->offset;
			return 1;
		}
	return 0;
}

/* The raw chain from the thread state against the C API's frames: every
 * API frame in order, with its code and instruction; frames the API skips
 * are code objects to skip (at most 4 distinct) or not code at all. */
static int check_chain(void *ts, const api_frame *a, int na)
{
	const char *f = current_frame(ts);
	int i = 0;
	for (int guard = 0; f && i < na && guard < 64; guard++, f = (const char *)word(f, L.prev_off)) {
		uintptr_t c = frame_code(f);
		if (!is_code(c))
			continue;
		if (c != a[i].code) {
			if (skipped(c))
				continue;
			if (L.nskip == 4 || i == 0)
				return 0;
			L.skip[L.nskip++] = (void *)c;
			continue;
		}
		if (lasti_of(f, c) != a[i].lasti)
			return 0;
		i++;
	}
	return i == na;
}

static int probe_frames(api_frame *a, int na)
{
	void *ts = C.tstate_get();
	if (!ts || na < 2)
		return 0;
	/* PyFrameObject: PyObject_HEAD, f_back, f_frame (3.11-3.14) */
	for (int i = 0; i < na; i++)
		a[i].iframe = (const char *)word(a[i].fo, 24);
	for (int i = 0; i < na; i++)
		if (!a[i].iframe || ((uintptr_t)a[i].iframe & 7))
			return 0;
	/* a frame's fields: its code, its frame object, its caller */
	L.code_off = find_word(a[0].iframe, 128, a[0].code, ~(uintptr_t)3);
	if (L.code_off == (size_t)-1 || find_word(a[0].iframe, 128, (uintptr_t)a[0].fo, ~(uintptr_t)0) == (size_t)-1)
		return 0;
	L.prev_off = (size_t)-1;
	for (size_t off = 0; off < 128 && L.prev_off == (size_t)-1; off += 8) {
		/* the caller may be a frame the API skips: follow until the next API frame */
		const char *p = (const char *)word(a[0].iframe, off);
		if (p == a[1].iframe)
			L.prev_off = off;
	}
	if (L.prev_off == (size_t)-1)
		return 0;
	/* the instruction pointer: code + start of instructions + lasti, the
	 * same start in every frame */
	L.instr_off = (size_t)-1;
	for (size_t off = 0; off < 128 && L.instr_off == (size_t)-1; off += 8) {
		long k = (long)(word(a[0].iframe, off) - a[0].code - (uintptr_t)a[0].lasti);
		if (k < 48 || k > 1024 || (k & 1) || a[0].lasti < 0)
			continue;
		int same = 1;
		for (int i = 1; i < na && same; i++)
			same = a[i].lasti >= 0 &&
			       (long)(word(a[i].iframe, off) - a[i].code - (uintptr_t)a[i].lasti) == k;
		if (same) {
			L.instr_off = off;
			L.code_start = (size_t)k;
		}
	}
	if (L.instr_off == (size_t)-1)
		return 0;
	/* the thread state's current frame: directly, or through the C frame
	 * record on this thread's stack (3.11, 3.12) */
	pthread_attr_t at;
	void *stack_lo = NULL;
	size_t stack_size = 0;
	if (pthread_getattr_np(pthread_self(), &at) == 0) {
		pthread_attr_getstack(&at, &stack_lo, &stack_size);
		pthread_attr_destroy(&at);
	}
	for (size_t off = 0; off < 256; off += 8) {
		uintptr_t w = word(ts, off);
		L.ts_off = off;
		L.cf_off = -1;
		if (w == (uintptr_t)a[0].iframe && check_chain(ts, a, na))
			return 1;
		if (!stack_lo || w < (uintptr_t)stack_lo || w + 24 > (uintptr_t)stack_lo + stack_size || (w & 7))
			continue;
		for (long j = 0; j <= 16; j += 8) {
			L.cf_off = j;
			L.nskip = 0;
			if (word((void *)w, (size_t)j) == (uintptr_t)a[0].iframe && check_chain(ts, a, na))
				return 1;
		}
	}
	return 0;
}

int stc_py_layout_probe(void)
{
	int s = atomic_load_explicit(&L.state, memory_order_acquire);
	if (s)
		return s == 1;
	if (!resolve() || !member_offset("co_filename", &L.fname_off) ||
	    (!member_offset("co_qualname", &L.qname_off) && !member_offset("co_name", &L.qname_off))) {
		atomic_store_explicit(&L.state, 2, memory_order_release);
		return 0;
	}
	api_frame a[PROBE_FRAMES];
	int na = 0;
	PyObj *f = C.get_frame(); /* borrowed */
	if (f)
		C.incref(f);
	while (f && na < PROBE_FRAMES) {
		PyObj *code = C.frame_code(f);
		a[na].fo = f;
		a[na].code = (uintptr_t)code;
		a[na].lasti = C.frame_lasti(f);
		if (code)
			C.decref(code); /* the frame keeps it */
		na++;
		f = C.frame_back(f);
	}
	if (f)
		C.decref(f);
	int ok = probe_frames(a, na);
	for (int i = 0; i < na; i++)
		C.decref(a[i].fo);
	if (!ok && (na >= 3 || ++L.tries >= 8)) {
		atomic_store_explicit(&L.state, 2, memory_order_release);
		return 0;
	}
	if (ok)
		atomic_store_explicit(&L.state, 1, memory_order_release);
	return ok;
}

int stc_py_layout_state(void) { return atomic_load_explicit(&L.state, memory_order_acquire); }

static size_t put_str(char *out, size_t room, PyObj *s)
{
	size_t n = 0;
	long len = s ? C.ulen(s) : -1;
	if (len < 0) {
		if (room > 1)
			out[n++] = '?';
		return n;
	}
	for (long i = 0; i < len; i++) {
		uint32_t ch = C.uchar(s, i);
		char b[4];
		size_t k;
		if (ch < 0x80)
			b[0] = (char)ch, k = 1;
		else if (ch < 0x800)
			b[0] = (char)(0xc0 | ch >> 6), b[1] = (char)(0x80 | (ch & 0x3f)), k = 2;
		else if (ch < 0x10000)
			b[0] = (char)(0xe0 | ch >> 12), b[1] = (char)(0x80 | ((ch >> 6) & 0x3f)),
			b[2] = (char)(0x80 | (ch & 0x3f)), k = 3;
		else
			b[0] = (char)(0xf0 | ch >> 18), b[1] = (char)(0x80 | ((ch >> 12) & 0x3f)),
			b[2] = (char)(0x80 | ((ch >> 6) & 0x3f)), b[3] = (char)(0x80 | (ch & 0x3f)), k = 4;
		if (n + k >= room)
			break;
		memcpy(out + n, b, k);
		n += k;
	}
	return n;
}

static uint32_t name_of(void *code, long lasti)
{
	char buf[1024];
	size_t n = put_str(buf, 700, (PyObj *)word(code, L.fname_off));
	int line = C.addr2line(code, (int)lasti);
	int k = snprintf(buf + n, sizeof buf - n, ":%d in ", line);
	if (k < 0)
		return 0;
	n += (size_t)k;
	n += put_str(buf + n, sizeof buf - n, (PyObj *)word(code, L.qname_off));
	return stc_intern_string(buf, n);
}

/* The name of (code, lasti), through the cache of pylines.c (keyed also by
 * the code object's file and name objects). */
static uint32_t line_id(void *code, long lasti)
{
	uintptr_t k1 = word(code, L.fname_off), k2 = word(code, L.qname_off);
	uint32_t id = stc_py_lines_get(code, lasti, k1, k2);
	if (!id && (id = name_of(code, lasti)))
		id = stc_py_lines_put(code, lasti, k1, k2, id);
	return id;
}

/* ---------------------------------------------------------------- the walk */

/* A walk over the calling thread's frames that go into call paths (those
 * whose code object is not skipped), innermost first, at most 4096 frames
 * read. */
typedef struct {
	const char *f;
	unsigned guard;
} fwalk;

static inline int fwalk_start(fwalk *w)
{
	void *ts = C.this_tstate();
	if (!ts || (C.finalizing && C.finalizing()))
		return 0;
	w->f = current_frame(ts);
	w->guard = 0;
	return 1;
}

/* The next such frame's code object (*frame the frame), 0 at the end. */
static inline uintptr_t fwalk_next(fwalk *w, const char **frame)
{
	while (w->f && w->guard < 4096) {
		const char *f = w->f;
		uintptr_t c = frame_code(f);
		w->f = (const char *)word(f, L.prev_off);
		w->guard++;
		if (is_code(c) && !skipped(c) && !stc_py_skip_code(c)) {
			*frame = f;
			return c;
		}
	}
	return 0;
}

uint32_t stc_py_layout_walk(uint64_t *ips, uint32_t max)
{
	fwalk w;
	const char *f;
	uintptr_t c;
	uint32_t n = 0;
	if (!fwalk_start(&w))
		return 0;
	while (n < max && (c = fwalk_next(&w, &f))) {
		uint32_t id = line_id((void *)c, lasti_of(f, c));
		if (id)
			ips[n++] = STP_PYFRAME_TAG | id;
	}
	return n;
}

/* The walk's frames unnamed: no lookup in the lines cache per frame (a
 * tensor's key in a lean iteration costs the frame chain alone). */
uint32_t stc_py_layout_key(uint32_t max, uint64_t *key)
{
	fwalk w;
	const char *f;
	uintptr_t c;
	uint32_t n = 0;
	uint64_t h = STC_HASH_SEED;
	if (!fwalk_start(&w))
		return 0;
	while (n < max && (c = fwalk_next(&w, &f))) {
		uint64_t v = (uint64_t)c ^ ((uint64_t)lasti_of(f, c) << 48) ^ word((void *)c, L.fname_off) * 31 ^
		             word((void *)c, L.qname_off) * STC_HASH_SEED;
		h = stc_hash_step(h, v);
		n++;
	}
	*key = h;
	return n;
}

