/*
 * pypath.c - the Python part of a call path (stc_py_complete, face.h): a
 * native path is cut where it enters the interpreter and the thread's
 * Python frames (pyframes.c) follow; a thread with none, inside a backward
 * pass, gets the frames the pass was started from.
 *
 * Where a backward pass was started from, for the tensors made on threads
 * that run no Python code.  On a GPU, autograd runs the backward
 * on a thread of its own per device: its gradients and temporaries have no
 * Python frame, while the thread that called loss.backward() waits inside
 * it.  The shim wraps torch.autograd.backward/grad and tells us when one
 * begins and ends (stprof_py_backward_v1, called from Python with the GIL
 * held); at the begin we take that thread's Python frames, and a tensor
 * made meanwhile on a thread with no Python frames gets them after a frame
 * "<backward>:0 in backward" (the report shows it as "(backward: aten::mm)"
 * beside the user's line).  With several backward passes at once (Python
 * threads each calling backward), the latest begun is used.
 *
 * The origin is copied under a mutex; a tensor's path reads the depth
 * without it first, so threads outside a backward pay one atomic load.
 */
#include <pthread.h>

#include "internal.h"
#include "stprof/trace.h"

#define ORIGIN_MAX 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int depth;
static uint64_t origin[ORIGIN_MAX];
static uint32_t norigin;

STC_EXPORT void stprof_py_backward_v1(int begin);

void stprof_py_backward_v1(int begin)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON)
		return;
	int was = t_busy;
	t_busy = 1;
	if (begin) {
		static const char tag[] = "<backward>:0 in backward";
		uint64_t ips[ORIGIN_MAX];
		uint32_t id = stc_intern_string(tag, sizeof tag - 1);
		uint32_t n = id ? stc_py_frames(ips + 1, ORIGIN_MAX - 1, STC_GIL_NEVER) : 0;
		pthread_mutex_lock(&mu);
		if (n) {
			ips[0] = STP_PYFRAME_TAG | id;
			for (uint32_t i = 0; i <= n; i++)
				origin[i] = ips[i];
			norigin = n + 1;
		}
		atomic_fetch_add(&depth, 1);
		pthread_mutex_unlock(&mu);
	} else {
		pthread_mutex_lock(&mu);
		if (atomic_load(&depth) > 0 && atomic_fetch_sub(&depth, 1) == 1)
			norigin = 0;
		pthread_mutex_unlock(&mu);
	}
	t_busy = was;
}

uint32_t stc_py_backward_origin(uint64_t *ips, uint32_t max)
{
	if (!atomic_load_explicit(&depth, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&mu);
	uint32_t n = norigin < max ? norigin : max;
	for (uint32_t i = 0; i < n; i++)
		ips[i] = origin[i];
	pthread_mutex_unlock(&mu);
	return n;
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
	uint32_t np = stc_py_frames(ips + keep, lim, take_gil);
	if (!np) /* a thread with no Python: autograd's on a GPU, in a backward */
		np = stc_py_backward_origin(ips + keep, lim);
	return np ? keep + np : n;
}

void stc_py_atfork_child(void)
{
	pthread_mutex_init(&mu, NULL);
	atomic_store(&depth, 0);
	norigin = 0;
	stc_py_lines_atfork_child();
}
