/*
 * pymark.c - the marker entry point as a Python builtin function, for the
 * Python shim's hot path (a module's enter and exit, twice per module call
 * of every forward).
 *
 * Called through ctypes, stprof_mark_v1 cost the shim about 1.4 us a call
 * (argument conversion, the bytes of the name made from a str each time):
 * 0.09 ms of a 6.1 ms step of bench/python/small_gpt.py on PyTorch 2.11.
 * stprof_py_mark_fn_v1 (ctypes.PyDLL: the GIL is held) returns a new
 * reference (ctypes' py_object result takes one) to a builtin function
 * mark(kind, name, value) of the vectorcall kind
 * (METH_FASTCALL), made once and kept for the life of the process: name a
 * str (its UTF-8 form is the one CPython caches in the object), bytes or
 * None.  It records what stprof_mark_v1 records and returns 0; arguments
 * of another kind or number record nothing and raise nothing (markers never
 * change what the program computes).  NULL where this Python lacks a
 * function it needs: the shim then keeps ctypes (it asks first with a
 * pointer result: ctypes crashes on a NULL py_object; the reference that
 * call leaks keeps the function, which lives as long as the process).
 *
 * The interpreter's functions are found with dlsym, as pyframes.c does;
 * only the stable ABI's (Python 3.7 and later have all of them).  Calls
 * marker.c.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <sys/types.h>

#include "internal.h"

STC_EXPORT void *stprof_py_mark_fn_v1(void);
STC_EXPORT void stprof_mark_v1(int kind, const char *name, int64_t value);

typedef void PyObj;
typedef PyObj *(*fastcall_fn)(PyObj *, PyObj *const *, ssize_t);

/* PyMethodDef, as the stable ABI lays it out */
typedef struct {
	const char *ml_name;
	fastcall_fn ml_meth;
	int ml_flags;
	const char *ml_doc;
} method_def;

#define METH_FASTCALL 0x0080

static struct {
	PyObj *(*new_fn)(method_def *, PyObj *, PyObj *);
	long long (*as_ll)(PyObj *);
	const char *(*utf8)(PyObj *, ssize_t *);
	char *(*bytes)(PyObj *);
	PyObj *(*err_occurred)(void);
	void (*err_clear)(void);
	PyObj *(*from_long)(long);
	void (*incref)(PyObj *);
	PyObj *none;
} P;

static PyObj *made;
static int tried;

/* An integer argument, 0 when it is none. */
static long long int_arg(PyObj *o)
{
	long long v = P.as_ll(o);
	if (v == -1 && P.err_occurred()) {
		P.err_clear();
		return 0;
	}
	return v;
}

static PyObj *fast_mark(PyObj *self, PyObj *const *args, ssize_t nargs)
{
	(void)self;
	if (nargs == 3) {
		const char *name = NULL;
		if (args[1] != P.none) {
			name = P.utf8(args[1], NULL);
			if (!name) {
				P.err_clear();
				name = P.bytes(args[1]);
				if (!name)
					P.err_clear();
			}
		}
		long long kind = int_arg(args[0]);
		if (kind > 0 && kind < 256)
			stprof_mark_v1((int)kind, name, (int64_t)int_arg(args[2]));
	}
	return P.from_long(0);
}

static method_def def = {"mark", fast_mark, METH_FASTCALL, "stprof_mark_v1(kind, name, value)"};

#define SYM(field, name) (*(void **)&P.field = dlsym(RTLD_DEFAULT, name))

void *stprof_py_mark_fn_v1(void)
{
	if (tried) { /* the GIL is held: one caller at a time */
		if (made)
			P.incref(made);
		return made;
	}
	tried = 1;
	int was = t_busy;
	t_busy = 1;
	if (SYM(new_fn, "PyCFunction_NewEx") && SYM(as_ll, "PyLong_AsLongLong") &&
	    SYM(utf8, "PyUnicode_AsUTF8AndSize") && SYM(bytes, "PyBytes_AsString") &&
	    SYM(err_occurred, "PyErr_Occurred") && SYM(err_clear, "PyErr_Clear") &&
	    SYM(from_long, "PyLong_FromLong") && SYM(incref, "Py_IncRef") && (P.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct")) != NULL) {
		made = P.new_fn(&def, NULL, NULL); /* our reference, never dropped */
		if (made)
			P.incref(made); /* the caller's */
		else
			P.err_clear();
	}
	t_busy = was;
	return made;
}
