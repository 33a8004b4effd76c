/*
 * pyframe.c - Python frames in call paths (STP_PYFRAME_TAG | string id, the
 * string being "FILE:LINE in FUNCTION", written by the collector's
 * pyframes.c): parsing them into frames, and telling the user's own code
 * from the interpreter's library, installed packages, code torch.compile
 * generated and the profiler's shim; and which installed package is the
 * program's own, from the outermost frames of its paths.  Pure functions
 * of their inputs; no state.
 */
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "stprof/trace.h"

int det_pyframe_parse(const char *text, char **file, uint32_t *line, char **func)
{
	*file = *func = NULL;
	*line = 0;
	if (!text)
		return -1;
	const char *in = strstr(text, " in ");
	const char *colon = NULL;
	for (const char *p = text; in && p < in; p++)
		if (*p == ':')
			colon = p;
	if (!in || !colon)
		return -1;
	*line = (uint32_t)strtoul(colon + 1, NULL, 10);
	*file = strndup(text, (size_t)(colon - text));
	*func = strdup(in + 4);
	if (!*file || !*func) {
		free(*file);
		free(*func);
		*file = *func = NULL;
		return -1;
	}
	return 0;
}

int det_frame_is_python(const stp_det_frame *fr) { return STP_IS_PYFRAME(fr->ip); }

/* A module Inductor (torch.compile) generated, wherever its cache is
 * (TORCHINDUCTOR_CACHE_DIR moves it from /tmp/torchinductor_USER): its
 * code cache names a file "c" + a base-32 hash + ".py" in a directory named
 * after the hash's first two characters (.../zf/czfolaa7...3we.py). */
static int inductor_generated(const char *f, size_t n)
{
	const char *base = strrchr(f, '/');
	if (!base || base - f < 2 || (base - f > 2 && base[-3] != '/'))
		return 0;
	base++;
	size_t hash = (size_t)(f + n - 3 - base) - 1; /* between "c" and ".py" */
	if (base[0] != 'c' || hash < 32 || hash > 64 || base[-3] != base[1] || base[-2] != base[2])
		return 0;
	for (size_t i = 1; i <= hash; i++)
		if (!((base[i] >= 'a' && base[i] <= 'z') || (base[i] >= '0' && base[i] <= '9')))
			return 0;
	return 1;
}

int det_frame_is_loader(const stp_det_frame *fr)
{
	return STP_IS_PYFRAME(fr->ip) && fr->file &&
	       (strstr(fr->file, "/torch/utils/data/") || strstr(fr->file, "/torch/multiprocessing/reductions.py"));
}

/* Where an installed package's file starts its path below the packages'
 * root ("/site-packages/" or "/dist-packages/"); NULL when not installed. */
static const char *installed(const char *file)
{
	static const char *const roots[] = {"/site-packages/", "/dist-packages/", 0};
	for (int i = 0; roots[i]; i++) {
		const char *p = strstr(file, roots[i]);
		if (p)
			return p + strlen(roots[i]);
	}
	return NULL;
}

/* PyTorch's own (torch/, functorch/) and the profiler's shim. */
static int framework_package(const char *file, const char *below)
{
	return !strncmp(below, "torch/", 6) || !strncmp(below, "functorch/", 10) || strstr(file, "/stprof-python/");
}

int det_pyentry_package(const char *const *files, uint32_t n, uint32_t *at, size_t *len)
{
	if (!n)
		return 0;
	/* the stub: runpy (python -m), <string> (python -c), a console script
	 * (in a bin/ directory) */
	stp_det_frame outer = {.ip = STP_PYFRAME_TAG | 1, .file = files[0]};
	if (det_frame_is_user_python(&outer))
		return -1;
	const char *base = strrchr(files[0], '/');
	if (files[0][0] != '<' && !(base && base - files[0] >= 4 && !strncmp(base - 4, "/bin", 4)))
		return 0; /* a thread's (threading.py), a script without .py (./train) */
	uint32_t i = 1;
	while (i < n && files[i][0] == '<') /* <frozen runpy>, <frozen importlib._bootstrap> */
		i++;
	if (i >= n)
		return 0;
	stp_det_frame first = {.ip = STP_PYFRAME_TAG | 1, .file = files[i]};
	if (det_frame_is_user_python(&first))
		return -1; /* python -m of the user's own module, python -c calling it */
	const char *below = installed(files[i]);
	if (!below || framework_package(files[i], below))
		return 0;
	const char *slash = strchr(below, '/');
	*at = i;
	*len = slash ? (size_t)(slash + 1 - files[i]) : strlen(files[i]); /* a one-file module: itself */
	return 1;
}

int det_frame_is_package_python(const stp_det_frame *fr)
{
	if (!STP_IS_PYFRAME(fr->ip) || !fr->file || fr->program)
		return 0;
	const char *below = installed(fr->file);
	return below && !framework_package(fr->file, below);
}

int det_frame_is_user_python(const stp_det_frame *fr)
{
	if (!STP_IS_PYFRAME(fr->ip) || !fr->file)
		return 0;
	if (fr->program)
		return 1;
	const char *f = fr->file;
	/* a snapshot's C++ frames are source frames too ("??", "Module.cpp"):
	 * there the user's lines are Python files; a frame the interpreter ran
	 * is Python whatever its file's name (./train, a console script) */
	size_t n = strlen(f);
	int py = n >= 3 && !strcmp(f + n - 3, ".py");
	if (!py && !fr->interpreted)
		return 0;
	/* torch.compile's generated modules (Inductor's cache, by default
	 * /tmp/torchinductor_USER/xx/cHASH.py, elsewhere inductor_generated):
	 * the user's line that ran the compiled code is further out */
	static const char *const lib[] = {"/site-packages/", "/dist-packages/", "/lib/python", "/lib64/python",
	                                  "/collector/torch/python/", "/stprof-python/", "/torchinductor_", 0};
	if (f[0] == '<') /* <frozen importlib._bootstrap>, <string> */
		return 0;
	for (int i = 0; lib[i]; i++)
		if (strstr(f, lib[i]))
			return 0;
	return !py || !inductor_generated(f, n);
}
