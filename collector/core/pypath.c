/*
 * pypath.c - the Python part of a call path (stc_py_complete, face.h): a
 * native path is cut where it enters the interpreter and the thread's
 * Python frames (pyframes.c) follow.  Inside a backward pass
 * (pybackward.c) the frames of the forward line and module whose backward
 * runs take their place; on a thread with no Python, else, those of the
 * line that started the pass.  stc_py_lean_key hashes the Python frames
 * as a lean iteration reads them (collector/torch/torch_lean.c): where they
 * are read in place, each frame's code object and offset without naming it
 * (a key only ever compared with keys made the same way in one process).
 * stc_py_walk is the whole path of a tensor walked now.
 */
#include "internal.h"
#include "stprof/trace.h"

/* The Python part: in a module's backward its forward line, else the
 * thread's frames, else (a thread with no Python: autograd's on a GPU, in
 * a backward) where the pass began. */
static uint32_t py_part(uint64_t *ips, uint32_t lim, int take_gil)
{
	uint32_t np = stc_py_backward_site(ips, lim);
	if (!np)
		np = stc_py_frames(ips, lim, take_gil);
	if (!np)
		np = stc_py_backward_origin(ips, lim);
	return np;
}

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
	uint32_t np = py_part(ips + keep, lim, take_gil);
	return np ? keep + np : n;
}

uint64_t stc_py_lean_key(int take_gil)
{
	uint64_t ips[STC_DEPTH_MAX], h = STC_HASH_SEED;
	uint32_t lim = g_cfg.depth < STC_DEPTH_MAX ? g_cfg.depth : STC_DEPTH_MAX, n = 0;
	if (stc_py_active()) {
		if (stc_py_layout_state() != 1)
			n = stc_py_frames(ips, lim, take_gil);
		else if ((n = stc_py_layout_key(lim, &h))) /* read in place: frames unnamed */
			return h ^ n;
	}
	if (!n)
		n = stc_py_backward_origin(ips, lim);
	for (uint32_t i = 0; i < n; i++)
		h = stc_hash_step(h, ips[i]);
	return h ^ n;
}

__attribute__((noinline)) uint32_t stc_py_walk(int take_gil)
{
	if (!g_cfg.depth)
		return 0;
	uint64_t ips[STC_DEPTH_MAX];
	uint32_t d = stc_unwind(ips, g_cfg.depth);
	d = stc_py_complete(ips, d, STC_DEPTH_MAX, take_gil);
	return d ? stc_intern_stack(ips, d) : 0;
}

void stc_py_atfork_child(void)
{
	stc_py_backward_atfork_child();
	stc_py_lines_atfork_child();
}
