/*
 * pybackward.c - whose Python lines a tensor made in a backward pass gets.
 *
 * A backward's gradients and temporaries are made by autograd's nodes, not
 * by a line of the program: on a CPU the thread that called loss.backward()
 * runs them (its Python frames are that call), on a GPU a thread of
 * autograd's own per device with no Python frames at all.  The shim tells
 * us two things (collector/torch/python/stprof/torch_markers.py):
 *
 *   - when torch.autograd.backward / grad begins and ends
 *     (stprof_py_backward_v1): at the begin we copy that thread's Python
 *     frames, the pass's "origin", which a tensor made meanwhile on a
 *     thread with no Python frames gets after a frame
 *     "<backward>:0 in backward" (shown "(backward: aten::mm)" beside the
 *     line that started the pass);
 *   - for each module's forward, its output's autograd node and the module
 *     (stprof_py_module_site_v1, in the forward hook: the Python frames of
 *     the line that called the module, after a frame
 *     "<backward>:0 in MODULE", kept as a "site" and numbered), and when the
 *     backward reaches that node (stprof_py_backward_site_v1, from a hook
 *     run just before the node, on the thread that runs it).  From then
 *     until the next such hook on that thread, within the same backward
 *     pass, every tensor the thread makes gets the site's frames in place
 *     of its own Python frames: the forward line and the module whose
 *     backward made it ("(backward of blocks.3.mlp: aten::mm)" beside the
 *     forward line).  Autograd runs a module's nodes after its output's,
 *     so the tensors of a module's backward go to it; those of operations
 *     between two modules (a residual add, a functional activation) go to
 *     the module whose backward ran last before them.  A module run inside
 *     the backward (activation checkpointing's recomputation) clears the
 *     thread's site (stprof_py_backward_site_v1(0)): its tensors keep their
 *     own lines.
 *
 * Sites are interned by content (the same module called from the same line
 * is one site every iteration) in a fixed table of SITES entries; a full
 * table gives 0 (no site: the tensors keep the pass's frames).  An entry is
 * written once, under the mutex, before its number is handed out, and never
 * changed after: readers (a number travels through Python, under the GIL)
 * read it without the lock.  The origin is copied under the mutex; a
 * tensor's path reads the depth without it first, so threads outside a
 * backward pay one atomic load.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "stprof/trace.h"

#define ORIGIN_MAX 64
#define SITES 4096 /* a power of two */

STC_EXPORT void stprof_py_backward_v1(int begin);
STC_EXPORT uint32_t stprof_py_module_site_v1(const char *module);
STC_EXPORT void stprof_py_backward_site_v1(uint32_t site);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int depth;
static _Atomic uint32_t pass; /* counts the passes begun: a thread's site is of one */
static uint64_t origin[ORIGIN_MAX];
static uint32_t norigin;

typedef struct {
	uint64_t hash;
	uint32_t n;
	uint64_t ips[ORIGIN_MAX];
} site_entry;
static site_entry sites[SITES]; /* [0] unused: 0 is "no site" */
static uint32_t nsites;

static STC_TLS uint32_t t_site, t_site_pass;

/* The "<backward>:0 in WHAT" frame. */
static uint64_t tag_frame(const char *what)
{
	char b[256];
	size_t k = strlen(what);
	if (k > sizeof b - 20)
		k = sizeof b - 20;
	memcpy(b, "<backward>:0 in ", 16);
	memcpy(b + 16, what, k);
	uint32_t id = stc_intern_string(b, 16 + k);
	return id ? STP_PYFRAME_TAG | id : 0;
}

void stprof_py_backward_v1(int begin)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON)
		return;
	int was = t_busy;
	t_busy = 1;
	if (begin) {
		uint64_t ips[ORIGIN_MAX];
		ips[0] = tag_frame("backward");
		uint32_t n = ips[0] ? stc_py_frames(ips + 1, ORIGIN_MAX - 1, STC_GIL_NEVER) : 0;
		pthread_mutex_lock(&mu);
		if (n) {
			for (uint32_t i = 0; i <= n; i++)
				origin[i] = ips[i];
			norigin = n + 1;
		}
		if (atomic_fetch_add(&depth, 1) == 0)
			atomic_fetch_add(&pass, 1);
		pthread_mutex_unlock(&mu);
	} else {
		pthread_mutex_lock(&mu);
		if (atomic_load(&depth) > 0 && atomic_fetch_sub(&depth, 1) == 1)
			norigin = 0;
		pthread_mutex_unlock(&mu);
	}
	t_busy = was;
}

uint32_t stprof_py_module_site_v1(const char *module)
{
	if (atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || !module)
		return 0;
	int was = t_busy;
	t_busy = 1;
	uint64_t ips[ORIGIN_MAX];
	uint32_t site = 0, n = 0;
	ips[0] = tag_frame(module);
	if (ips[0])
		n = 1 + stc_py_frames(ips + 1, ORIGIN_MAX - 1, STC_GIL_NEVER);
	if (n > 1) {
		uint64_t h = 1469598103934665603ull;
		for (uint32_t i = 0; i < n; i++)
			h = (h ^ ips[i]) * 1099511628211ull;
		pthread_mutex_lock(&mu);
		for (uint32_t j = (uint32_t)(h >> 20) & (SITES - 1), k = 0; k < SITES; k++, j = (j + 1) & (SITES - 1)) {
			if (!j)
				continue;
			site_entry *e = &sites[j];
			if (!e->n) {
				if (nsites + 1 >= SITES / 2) /* keep probes short: full */
					break;
				e->hash = h;
				memcpy(e->ips, ips, n * sizeof *ips);
				e->n = n;
				nsites++;
				site = j;
				break;
			}
			if (e->hash == h && e->n == n && !memcmp(e->ips, ips, n * sizeof *ips)) {
				site = j;
				break;
			}
		}
		pthread_mutex_unlock(&mu);
	}
	t_busy = was;
	return site;
}

void stprof_py_backward_site_v1(uint32_t site)
{
	t_site = site < SITES ? site : 0;
	t_site_pass = atomic_load_explicit(&pass, memory_order_relaxed);
}

uint32_t stc_py_backward_site(uint64_t *ips, uint32_t max)
{
	uint32_t s = t_site;
	if (!s || !atomic_load_explicit(&depth, memory_order_relaxed) ||
	    t_site_pass != atomic_load_explicit(&pass, memory_order_relaxed))
		return 0;
	const site_entry *e = &sites[s];
	uint32_t n = e->n < max ? e->n : max;
	memcpy(ips, e->ips, n * sizeof *ips);
	return n;
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

void stc_py_backward_atfork_child(void)
{
	pthread_mutex_init(&mu, NULL);
	atomic_store(&depth, 0);
	norigin = 0;
	t_site = 0;
}
