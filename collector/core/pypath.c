/*
 * pypath.c - the Python part of a call path (stc_py_complete, face.h): a
 * native path is cut where it enters the interpreter and the thread's
 * Python frames (pyframes.c) follow.  Inside a backward pass
 * (pybackward.c) the frames of the forward line and module whose backward
 * runs take their place; on a thread with no Python, else, those of the
 * line that started the pass.
 */
#include "internal.h"
#include "stprof/trace.h"

uint32_t stc_py_complete(uint64_t *ips, uint32_t n, uint32_t max, int take_gil)
{
	if (!n || !stc_py_active())
		return n;
	uint32_t keep = 0;
	while (keep < n && !stc_py_in_interpreter(ips[keep]))
		keep++;
	if (keep >= max)
		return n;
	uint32_t room = max - keep, lim = room < g_cfg.depth ? room : g_cfg.depth;
	/* in a module's backward: its forward line */
	uint32_t np = stc_py_backward_site(ips + keep, lim);
	if (!np)
		np = stc_py_frames(ips + keep, lim, take_gil);
	if (!np) /* a thread with no Python: autograd's on a GPU, in a backward */
		np = stc_py_backward_origin(ips + keep, lim);
	return np ? keep + np : n;
}

void stc_py_atfork_child(void)
{
	stc_py_backward_atfork_child();
	stc_py_lines_atfork_child();
}
