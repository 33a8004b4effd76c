/*
 * fold.c - what a call path shows by default: the frames a user can act on.
 *
 * A tensor's path is dozens of frames of PyTorch's insides (the caching
 * allocator, at::detail::empty_*, the dispatcher's at::_ops::*::call and
 * wrap_kernel_functor_unboxed_<...>, autograd's VariableType, the Python
 * bindings, the interpreter) above the one line of the user's script that
 * made it; a CUDA program's path starts in libcuda or the sanitizer's
 * library.  Folded, a path is:
 *
 *   - the user's own line first (a Python frame outside the standard
 *     library, installed packages and the shim; else, in a native program,
 *     its first frame that is not framework);
 *   - the operator that allocated, named as PyTorch names it (`aten::addmm`:
 *     the innermost at::_ops::NAME::call/redispatch frame of the path that
 *     is not an allocation helper such as aten::empty_strided);
 *   - then the frames further out that are not framework (the user's
 *     callers).
 *
 * A tensor made in a backward pass has, in place of its thread's Python
 * frames, a "<backward>:0 in MODULE" frame and the frames of the forward
 * line that called the module whose backward made it: its op reads
 * "backward of blocks.3.mlp: aten::mm", beside that forward line; or, made
 * by autograd's own thread where no module's backward was known, a
 * "<backward>:0 in backward" frame and those of the line that started the
 * pass: "backward: aten::mm" (collector/core/pybackward.c).
 *
 * Frames are framework by module (libcuda, libcudart, libsanitizer, libnvrtc,
 * libtorch_python, libc10*, the interpreter, libgomp ...) or by name
 * (c10::, at::, torch::, pybind11::, caffe2:: and cudart's internal names,
 * cudaMalloc<T> inlined from cuda_runtime.h).  A frame of libtorch_cpu or
 * libtorch_cuda with no name is framework too.  C++ names are shortened
 * (argument and template lists elided: `at::native::add(...)`).
 *
 * stp_det_options.all_frames turns it all off (`stprof report --all-frames`):
 * every frame, full names.  The trace is never changed: folding is a view.
 * Pure functions of their inputs, except the string table names are kept in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det.h"
#include "frames.h"
#include "stprof/trace.h"

static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

static const char *base_of(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	return b ? b + 1 : (path ? path : "");
}

int det_frame_is_framework(const stp_det_frame *fr)
{
	if (STP_IS_PYFRAME(fr->ip))
		return !det_frame_is_user_python(fr);
	const char *b = base_of(fr->module);
	static const char *const mods[] = {"libcuda.so", "libcudart", "libsanitizer", "libnvrtc", "libcublas",
	                                   "libcudnn", "libnccl", "libtorch_python", "libc10", "libshm",
	                                   "libgomp", "libpython", "python3", "libffi", "_ctypes", "libstprof",
	                                   "libstalloc", "libpthread", "libc.so", "ld-linux", "libstdc++",
	                                   "libcupti", "libnvToolsExt", 0};
	for (int i = 0; mods[i]; i++)
		if (starts(b, mods[i]))
			return 1;
	const char *fn = fr->function;
	if (!fn)
		return starts(b, "libtorch") || starts(b, "libcaffe2");
	static const char *const names[] = {"c10::", "at::", "torch::", "pybind11::", "caffe2::", "std::",
	                                    "__cuda", "cudart::", "libcudart", "void c10::", "void at::",
	                                    "__cudart", "__nv", "nv::",
	                                    "THP", "_PyEval", "_PyObject", "PyObject_", "cfunction_", "_start",
	                                    "__libc_start", "start_thread", "clone3", 0};
	for (int i = 0; names[i]; i++)
		if (starts(fn, names[i]))
			return 1;
	/* the CUDA runtime's and driver's entry points (cudaMalloc, cuMemAlloc_v2:
	 * static cudart is part of the program) */
	if ((starts(fn, "cuda") && fn[4] >= 'A' && fn[4] <= 'Z') || (starts(fn, "cu") && fn[2] >= 'A' && fn[2] <= 'Z'))
		return 1;
	/* cudaMalloc<float> inlined from cuda_runtime.h: the caller's line is
	 * the one that matters (the symbolizer gives it as the next frame) */
	if (fr->file && !strcmp(base_of(fr->file), "cuda_runtime.h"))
		return 1;
	return 0;
}

int stp_det_frame_is_user(const stp_det_frame *fr)
{
	if (STP_IS_PYFRAME(fr->ip))
		return det_frame_is_user_python(fr);
	return !det_frame_is_framework(fr) && (fr->function || fr->file);
}

/* "at::_ops::addmm::call(...)" -> "addmm" in buf; 0 when fn is no op entry. */
int det_frame_aten_op(const char *fn, char *buf, size_t len)
{
	if (!fn || !starts(fn, "at::_ops::"))
		return 0;
	const char *s = fn + 10, *e = strstr(s, "::");
	if (!e || e == s || (!starts(e, "::call") && !starts(e, "::redispatch")))
		return 0;
	size_t n = (size_t)(e - s);
	if (n + 7 > len)
		return 0;
	memcpy(buf, "aten::", 6);
	memcpy(buf + 6, s, n);
	buf[6 + n] = 0;
	return 1;
}

/* The position after the bracket that closes the one at s ('(' or '<'),
 * counting both kinds; NULL when it never closes. */
static const char *closing(const char *s)
{
	int depth = 0;
	for (; *s; s++) {
		if (*s == '(' || *s == '<')
			depth++;
		else if (*s == ')' || *s == '>') {
			if (--depth == 0)
				return s + 1;
		}
	}
	return NULL;
}

size_t det_short_name(const char *in, char *out, size_t len)
{
	size_t n = 0;
	if (!len)
		return 0;
	for (const char *s = in; *s && n + 1 < len;) {
		const char *keep = NULL;
		int word_start = s == in || !(s[-1] == '_' || (s[-1] >= 'a' && s[-1] <= 'z') ||
		                              (s[-1] >= 'A' && s[-1] <= 'Z') || (s[-1] >= '0' && s[-1] <= '9'));
		if (starts(s, "(anonymous namespace)"))
			keep = s + 21;
		else if (starts(s, " (inlined into "))
			keep = s + 15;
		else if (starts(s, " [clone"))
			keep = s + strlen(s); /* the rest as it is */
		else if (word_start && starts(s, "operator")) {
			const char *t = s + 8;
			if (t[0] == '(' && t[1] == ')')
				t += 2;
			else if (t[0] == '<' || t[0] == '>') {
				t++;
				if (*t == '<' || *t == '>' || *t == '=')
					t++;
			}
			keep = t;
		}
		if (keep) {
			size_t k = (size_t)(keep - s);
			if (n + k >= len)
				k = len - 1 - n;
			memcpy(out + n, s, k);
			n += k;
			s = keep;
			continue;
		}
		if ((*s == '(' || *s == '<') && s > in) {
			const char *e = closing(s);
			if (e) {
				const char *el = e - s > 2 ? (*s == '(' ? "(...)" : "<...>") : (*s == '(' ? "()" : "<>");
				size_t k = strlen(el);
				if (n + k >= len)
					break;
				memcpy(out + n, el, k);
				n += k;
				s = e;
				continue;
			}
		}
		out[n++] = *s++;
	}
	out[n] = 0;
	return n;
}

/* A native frame with its name shortened (all_frames: as it is). */
static stp_det_frame shown(det_frames *fs, const stp_det_frame *in)
{
	stp_det_frame o = *in;
	if (!STP_IS_PYFRAME(in->ip) && in->function) {
		char b[512];
		det_short_name(in->function, b, sizeof b);
		const char *k = det_frames_intern(fs, b);
		if (k)
			o.function = k;
	}
	return o;
}

uint32_t det_fold_frames(det_frames *fs, const stp_det_frame *in, uint32_t n, stp_det_frame *out, uint32_t max)
{
	if (!n || !max)
		return 0;
	uint32_t user = n, py = n;
	for (uint32_t i = 0; i < n && user == n; i++) {
		if (py == n && STP_IS_PYFRAME(in[i].ip))
			py = i;
		if (det_frame_is_user_python(&in[i]))
			user = i;
	}
	if (user == n && py == n) /* a native program: its first named frame of its own */
		for (uint32_t i = 0; i < n && user == n; i++)
			if (stp_det_frame_is_user(&in[i]))
				user = i;
	/* the operator: the innermost op entry that is not one of the
	 * allocation helpers every op calls (aten::addmm under aten::linear,
	 * aten::zeros_like over aten::empty_like), else the helper */
	const char *op = NULL;
	uint32_t inner = user < n ? user : (py < n ? py : n);
	for (uint32_t i = 0; i < inner; i++) {
		char b[256];
		if (!det_frame_aten_op(in[i].function, b, sizeof b))
			continue;
		int helper = starts(b, "aten::empty") || starts(b, "aten::new_empty") || starts(b, "aten::resize") ||
		             starts(b, "aten::_empty");
		if (!op || !helper) {
			op = det_frames_intern(fs, b);
			if (!helper)
				break;
		}
	}
	/* made by a DataLoader (its fetch and collate, or the batch a worker
	 * sent, rebuilt from shared memory: a mapping, no operator): said
	 * beside the op, so the row at the loop's `for` line says what it is */
	for (uint32_t i = 0; i < inner; i++)
		if (det_frame_is_loader(&in[i])) {
			char b[300];
			snprintf(b, sizeof b, "DataLoader batch%s%s", op ? ": " : "", op ? op : "");
			op = det_frames_intern(fs, b);
			break;
		}
	/* made in a backward pass: of a module called at the user's line, or
	 * on autograd's own thread, of the pass started at the user's line
	 * (collector/core/pybackward.c): said beside the op */
	for (uint32_t i = 0; i < inner; i++)
		if (STP_IS_PYFRAME(in[i].ip) && in[i].file && !strcmp(in[i].file, "<backward>")) {
			char b[300];
			const char *mod = in[i].function && strcmp(in[i].function, "backward") ? in[i].function : NULL;
			snprintf(b, sizeof b, "backward%s%s%s%s", mod ? " of " : "", mod ? mod : "", op ? ": " : "",
			         op ? op : "");
			op = det_frames_intern(fs, b);
			break;
		}
	uint32_t m = 0;
	if (user < n) {
		out[m] = shown(fs, &in[user]);
		out[m++].op = op;
		for (uint32_t i = user + 1; i < n && m < max; i++)
			if (!det_frame_is_framework(&in[i]))
				out[m++] = shown(fs, &in[i]);
		return m;
	}
	if (py < n) { /* Python, none of it the user's: the library's lines */
		for (uint32_t i = py; i < n && m < max; i++)
			if (STP_IS_PYFRAME(in[i].ip))
				out[m++] = in[i];
		out[0].op = op;
		return m;
	}
	/* nothing of the user's: the path as it is, names shortened */
	for (uint32_t i = 0; i < n && m < max; i++)
		out[m++] = shown(fs, &in[i]);
	out[0].op = op;
	return m;
}
