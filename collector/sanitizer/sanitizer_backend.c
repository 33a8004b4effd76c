/*
 * sanitizer_backend.c - the Compute Sanitizer backend (see sanitizer.h):
 * subscribes to the resource, launch, memcpy, memset and synchronize
 * callbacks of libsanitizer-public.so (dlopen'ed, so libstprof.so loads
 * where it is missing), patches every module with the functions of
 * stprof_sanitizer_patch.fatbin (sanitizer_patch.cu) and turns the hits of
 * each sampled launch into an API event whose ranges say exactly which
 * objects (and which parts of them) it read and which it wrote.
 *
 * Device memory per context: two rings (sanitizer_hits.h's layout).  The
 * map ring holds headers and maps, uploaded from a host image and never read
 * back; the hit ring holds chunk masks and launch areas, zeroed, read back
 * and zeroed again at each drain.  A sampled launch takes the next area of
 * its context's current header: no upload of its own.  A new header (one
 * 64-byte upload) is made when the live-object table changed (with the new
 * map: 16 bytes per object) or the header's areas are used up; how many
 * areas a header gets adapts (doubling while the objects stay, halving
 * when they change first).
 *
 * Launches are held, not written: a sampled launch takes its seq (and its
 * host time) at the launch callback, under mu, and waits in the queue; the
 * flush rounds' watermark stays below the oldest held seq (the mark hook),
 * so readers see it in its place among the events other threads and
 * backends write meanwhile (allocations, frees, copies, markers: written at
 * once).  A drain - at the program's stream and context synchronizations,
 * when a ring or the queue is full, when the oldest held launch is older
 * than HOLD_NS, when a context is destroyed and at exit - synchronizes the
 * streams of the held launches, reads each hit ring back once, decodes the
 * areas against their own headers' maps, and writes the events in chunks of
 * its own.  Nothing waits for a kernel in between: a table change (a
 * tensor allocated) costs a new map at the next launch, not a drain.
 *
 * Kernels' device times: the patch records each launch's first block
 * entry and last block exit (%globaltimer); the offset to CLOCK_MONOTONIC
 * is the largest (host launch time - device start) seen, which no kernel
 * can start before (kept below the drain's synchronization minus the last
 * kernel end).  A launch without them keeps its host launch time.
 *
 * Invariants:
 *   - Calls the backend makes (sanitizer* functions, the rings' memory) are
 *     never recorded: t_busy is set in every callback, and t_inside makes
 *     the callbacks of the backend's own calls return at once.
 *   - One mutex (mu) guards the state; it is taken before any tbuf/output
 *     lock (events are written while it is held) and never inside them.  A
 *     held launch's seq is taken under mu and the queue is emptied under mu
 *     only after its events are written, so the mark hook never lets the
 *     watermark pass an unwritten launch.
 *   - A header and its map stay in the map ring, and a map in memory, until
 *     the drain that writes the last launch given them.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/face.h"
#include "sanitizer.h"
#include "sanitizer_map.h"
#include "stprof/stprof.h"
#include "stprof/trace.h"

void stprof_mark_v1(int kind, const char *name, int64_t value);

static void annotate(const char *name, int64_t v) { stprof_mark_v1(STP_MARK_ANNOTATION, name, v); }

#ifndef STPROF_HAVE_SANITIZER

int stc_sanitizer_built(void) { return 0; }
void stc_sanitizer_start(void)
{
	if (g_cfg.accesses == STC_ACCESSES_EXACT)
		annotate("stprof.sanitizer", 0);
}
void stc_sanitizer_finish(void) {}
static uint64_t mark_hook(uint64_t mark, int try_only)
{
	(void)try_only;
	return mark;
}

#else

#include <sanitizer.h>

#define RANGES_MAX 8192        /* per event: an event must fit one 256 KiB buffer */
#define QUEUE_MAX 65536        /* held launches before a drain */
#define RING_MIN (4u << 20)    /* bytes of each ring per context, at first */
#define RING_GROW_MAX (256ull << 20) /* a ring that fills doubles up to this */
#define CTX_MAX 64
#define HOLD_NS 1000000000ull  /* the oldest held launch waits at most this long */
#define SLOTS_FIRST 8u         /* areas of a context's first header */
#define PARTS_OWN_MAX 1024u    /* a header over more objects: one part mask per object for all its launches */

static struct {
	__typeof__(&sanitizerSubscribe) subscribe;
	__typeof__(&sanitizerEnableDomain) enable_domain;
	__typeof__(&sanitizerAddPatchesFromFile) add_patches;
	__typeof__(&sanitizerPatchInstructions) patch_instructions;
	__typeof__(&sanitizerPatchModule) patch_module;
	__typeof__(&sanitizerSetLaunchCallbackData) set_launch_data;
	__typeof__(&sanitizerAlloc) alloc;
	__typeof__(&sanitizerFree) free;
	__typeof__(&sanitizerAllocHost) alloc_host; /* optional: pinned host images */
	__typeof__(&sanitizerFreeHost) free_host;
	__typeof__(&sanitizerMemcpyHostToDeviceAsync) h2d;
	__typeof__(&sanitizerMemcpyDeviceToHost) d2h;
	__typeof__(&sanitizerMemset) memset;
	__typeof__(&sanitizerStreamSynchronize) sync;
} api;

/* What the patch file offers, patched into every module when the driver
 * accepts it (the first is required; the others widen what is seen:
 * asynchronous and bulk copies, TMA, kernel times). */
static const struct {
	Sanitizer_InstructionId id;
	const char *fn;
} kinds[] = {
	{SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "stprof_sz_access"},
	{SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "stprof_sz_cp_async"},
	{SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "stprof_sz_bulk_g2s"},
	{SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_GLOBAL, "stprof_sz_bulk_s2g"},
	{SANITIZER_INSTRUCTION_BULK_REDUCTION_SHARED_TO_GLOBAL, "stprof_sz_bulk_red"},
	{SANITIZER_INSTRUCTION_TMA_LOAD, "stprof_sz_tma_load"},
	{SANITIZER_INSTRUCTION_TMA_STORE, "stprof_sz_tma_store"},
	{SANITIZER_INSTRUCTION_BLOCK_ENTER, "stprof_sz_block_enter"},
	{SANITIZER_INSTRUCTION_BLOCK_EXIT, "stprof_sz_block_exit"},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define KIND_BIT(k) (1u << (k))
#define KIND_TIMES (KIND_BIT(7) | KIND_BIT(8))

typedef struct szring {
	uint64_t dev, size, used; /* device memory */
	uint8_t *host;            /* its host image (pinned when the API gives it) */
	int pinned;
} szring;

typedef struct szctx {
	CUcontext ctx;
	int32_t device;
	int patched;             /* the patch file was loaded into it */
	szring maps;             /* headers and maps: uploaded, never read back */
	szring hits;             /* chunk masks and launch areas: read back, zeroed */
	stc_szmap *map;          /* the newest map */
	uint64_t map_dev;        /* where its starts and ends are in `maps` (0: not there) */
	int32_t hdr;             /* the current header (index into hdrs), -1 none */
	uint32_t slots, slots_used, want_slots;
	Sanitizer_StreamHandle up_stream; /* of the last upload or zeroing */
	int up_synced;           /* that one is known complete */
	Sanitizer_StreamHandle last_stream; /* of its last sampled launch: reads the ring back */
} szctx;

typedef struct szhdr {           /* a header made since the last drain */
	szctx *c;
	stc_szmap *map;
	uint64_t dev;                                /* its device address */
	uint64_t chunks_off, areas_off, area_bytes; /* in c->hits */
	uint64_t chunks_step;                        /* per launch area (0: one mask for all) */
} szhdr;

typedef struct szq {             /* a held launch */
	uint64_t seq, time_ns;
	uint32_t tid, name, stack;
	uint32_t hdr, slot;
	int32_t device;
	uint64_t stream;
	Sanitizer_StreamHandle hstream;
} szq;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static szctx ctxs[CTX_MAX];
static uint32_t nctx;
static szq *queue;
static uint32_t nq;
static szhdr *hdrs;
static size_t nhdrs, hdrs_cap;
static stc_szmap **retired;     /* maps replaced since the last drain */
static size_t nretired, retired_cap;
static stp_range *ranges;       /* RANGES_MAX */
static uint8_t *wbuf;           /* a chunk being written (under mu) */
static char patch_path[4096];
static uint32_t sample_every = 1;
static _Atomic uint64_t launches;
static uint64_t n_shared_parts; /* launches read back with their header's parts, not their own */
static uint64_t n_sampled, n_dropped_ranges, n_failed, n_unplaced, n_timed, n_drains, n_headers, n_maps;
static int64_t clock_off;       /* CLOCK_MONOTONIC - %globaltimer, best lower bound */
static int have_clock_off;
/* what instrumenting found, written as annotations at the end (a run where
 * no kernel could be patched says why: the first failing call's result) */
static uint64_t n_ctx_patched, n_modules_patched, n_lazy_loaded, n_lazy_patched;
static uint32_t kinds_patched;  /* KIND_BIT(k): kinds[k] accepted by some module */
/* KIND_BIT(k): kinds[k] to patch (STPROF_SANITIZER_KINDS, a cost diagnostic:
 * 0 patches nothing, measuring the Compute Sanitizer's own callbacks; 0x180
 * the block times alone; all by default) */
static uint32_t kinds_want = ~0u;
static int first_patch_error; /* SanitizerResult, 0: none */
static const char *first_patch_error_at = "";
static int started;
static pid_t started_pid; /* a forked child holds its parent's queue: it drops it */
static STC_TLS int t_inside;
static STC_TLS uint32_t t_tid;
/* STPROF_SANITIZER_DEBUG=1: a line on stderr per patched context and
 * module, per header and per drain */
static int debug;

#define DBG(...)                                        \
	do {                                                \
		if (debug)                                      \
			fprintf(stderr, "stprof-sz: " __VA_ARGS__); \
	} while (0)

int stc_sanitizer_built(void) { return 1; }

static int own_device_memory(void)
{
	return atomic_load(&g_torch_cuda_mode) == STC_TORCH_CUDA_NONE;
}

static int emits_allocations(void)
{
	/* while the CUPTI backend records device allocations, this one only
	 * keeps the live-object table, which adds idempotently */
	return own_device_memory() && !atomic_load(&g_cupti_records_memory);
}

static szctx *ctx_of(CUcontext ctx, int32_t device)
{
	for (uint32_t i = 0; i < nctx; i++)
		if (ctxs[i].ctx == ctx)
			return &ctxs[i];
	if (nctx == CTX_MAX)
		return NULL;
	szctx *c = &ctxs[nctx++];
	memset(c, 0, sizeof *c);
	c->ctx = ctx;
	c->device = device;
	c->hdr = -1;
	c->want_slots = SLOTS_FIRST;
	return c;
}

/* The call path of a callback: the frames inside the sanitizer's
 * libraries (libsanitizer-public.so and the libsanitizer-*.so it may hand
 * callbacks through), the driver, its debugger back end and the runtime
 * left out, so that it starts at the caller of the CUDA API (the program's
 * line), as the CUPTI backend's paths do.  Everything up to the outermost
 * of their frames goes, not only a leading run of them: a callback may
 * come through code of no module the set names (a thunk the driver or the
 * sanitizer made at run time), and the frames past it would otherwise keep
 * the driver's and the sanitizer's; the program never runs between two of
 * a CUDA call's driver frames (no CUDA call may be made from a callback of
 * the driver's).  With python (allocations only: a Python walk per launch
 * would cost too much), a Python program's line completes it. */
static const char *const cuda_libs[] = {"libsanitizer", "libcuda.so", "libcudadebugger.so", "libcudart.so"};
#define N_CUDA_LIBS (sizeof cuda_libs / sizeof cuda_libs[0])
static stc_modset libs = {.prefix = cuda_libs, .n = N_CUDA_LIBS};

static __attribute__((noinline)) uint32_t call_path(int python)
{
	uint64_t ips[STC_DEPTH_MAX];
	uint32_t want = g_cfg.depth, walk = want + 24 < STC_DEPTH_MAX ? want + 24 : STC_DEPTH_MAX;
	if (!want)
		return 0;
	stc_modset_scan(&libs);
	uint32_t d = stc_unwind(ips, walk);
	uint32_t first = 0;
	for (uint32_t i = 0; i < d; i++)
		for (unsigned m = 0; m < N_CUDA_LIBS; m++)
			if (stc_modset_has(&libs, m, ips[i])) {
				first = i + 1;
				break;
			}
	d -= first;
	if (d > want)
		d = want;
	if (python && d)
		d = stc_py_complete(ips + first, d, STC_DEPTH_MAX - first, STC_GIL_NEVER);
	return d ? stc_intern_stack(ips + first, d) : 0;
}

static uint32_t tid(void)
{
	if (!t_tid)
		t_tid = stc_gettid();
	return t_tid;
}

/* ---------------------------------------------------------------- rings */

static void ring_release(szctx *c, szring *r)
{
	if (r->dev)
		api.free(c->ctx, (void *)(uintptr_t)r->dev);
	if (r->host) {
		if (r->pinned)
			api.free_host(c->ctx, r->host);
		else
			stc_mem_free(r->host, r->size);
	}
	memset(r, 0, sizeof *r);
}

/* A ring of at least `size` bytes (its old one released); 0 on success. */
static int ring_make(szctx *c, szring *r, uint64_t size)
{
	ring_release(c, r);
	void *d = NULL, *h = NULL;
	if (api.alloc(c->ctx, &d, size) != SANITIZER_SUCCESS || !d)
		return -1;
	if (api.alloc_host && api.alloc_host(c->ctx, &h, size) == SANITIZER_SUCCESS && h) {
		r->pinned = 1;
	} else {
		h = stc_mem_alloc(size);
		if (!h) {
			api.free(c->ctx, d);
			return -1;
		}
	}
	r->dev = (uint64_t)(uintptr_t)d;
	r->host = h;
	r->size = size;
	r->used = 0;
	return 0;
}

static uint64_t align8(uint64_t x) { return (x + 7) & ~(uint64_t)7; }

/* ---------------------------------------------------------------- writing */

static void write_chunk(size_t *len, stp_enc_state *st)
{
	if (*len)
		stc_out_chunk(STP_CHUNK_EVENTS, st->tid, wbuf, *len);
	*len = 0;
	stp_enc_reset(st, st->tid);
}

static void put_event(const stp_event *ev, size_t *len, stp_enc_state *st)
{
	size_t cap = STC_BUF_SIZE - STP_CHUNK_HEADER_SIZE;
	size_t n = stp_enc_event(wbuf + STP_CHUNK_HEADER_SIZE + *len, cap - *len, st, ev);
	if (!n) {
		write_chunk(len, st);
		n = stp_enc_event(wbuf + STP_CHUNK_HEADER_SIZE, cap, st, ev);
	}
	*len += n;
}

/* The event of held launch q; its area (NULL: not read back or not
 * sampled) gives its ranges and device times. */
static void launch_event(const szq *q, const szhdr *h, const stc_sz_area *a, stp_event *ev)
{
	memset(ev, 0, sizeof *ev);
	ev->type = STP_EV_API;
	ev->seq = q->seq;
	ev->tid = q->tid;
	ev->time_ns = q->time_ns;
	stp_api_info *api_ = &ev->u.api;
	api_->kind = STP_API_KERNEL;
	api_->name = q->name;
	api_->device = q->device;
	api_->stream = q->stream;
	api_->stack = q->stack;
	api_->end_ns = q->time_ns;
	if (!a || !h)
		return;
	const stc_szmap *m = h->map;
	const uint8_t *base = h->c->hits.host;
	size_t hit = stc_sz_decode(m->starts, m->ends, m->ids, m->n, (const uint32_t *)(a + 1),
	                           (const uint32_t *)(base + h->chunks_off + q->slot * h->chunks_step), ranges, NULL,
	                           RANGES_MAX - 1);
	if (!h->chunks_step)
		n_shared_parts++;
	uint32_t nr = hit > RANGES_MAX - 1 ? RANGES_MAX - 1 : (uint32_t)hit;
	n_dropped_ranges += hit - nr;
	if (a->flags & STC_SZ_AREA_UNPLACED) { /* readers: any object may have been touched */
		ranges[nr++] = (stp_range){.addr = 0, .size = 0, .mode = STP_ACCESS_UNPLACED};
		n_unplaced++;
	}
	api_->nranges = nr;
	api_->ranges = nr ? ranges : NULL;
	if (a->t_begin && a->t_end && have_clock_off) {
		uint64_t b = UINT64_MAX - a->t_begin, e = a->t_end;
		if (e >= b) {
			ev->time_ns = (uint64_t)((int64_t)b + clock_off);
			api_->end_ns = (uint64_t)((int64_t)e + clock_off);
			n_timed++;
		}
	}
}

/* The clock offset from the areas read back (synced: host time when the
 * streams were known done). */
static void learn_clock(uint64_t synced)
{
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	for (uint32_t i = 0; i < nq; i++) {
		const szq *q = &queue[i];
		if (q->hdr == UINT32_MAX)
			continue;
		const szhdr *h = &hdrs[q->hdr];
		const stc_sz_area *a =
			(const stc_sz_area *)(h->c->hits.host + h->areas_off + (uint64_t)q->slot * h->area_bytes);
		if (!a->t_begin || !a->t_end)
			continue;
		int64_t b = (int64_t)(UINT64_MAX - a->t_begin), e = (int64_t)a->t_end;
		if ((int64_t)q->time_ns - b > lo)
			lo = (int64_t)q->time_ns - b;
		if ((int64_t)synced - e < hi)
			hi = (int64_t)synced - e;
	}
	if (lo == INT64_MIN)
		return;
	if (!have_clock_off || lo > clock_off)
		clock_off = lo;
	if (clock_off > hi) /* a kernel cannot end after the synchronization */
		clock_off = hi;
	have_clock_off = 1;
}

/* Synchronizes the streams of held launches, reads every hit ring back,
 * writes the held launches in seq order and empties the queue; the rings
 * start over, zeroed.  mu held. */
static void drain_locked(void)
{
	if (!nq)
		return;
	n_drains++;
	Sanitizer_StreamHandle seen[16];
	uint32_t nseen = 0;
	for (uint32_t i = 0; i < nq; i++) {
		int dup = 0;
		for (uint32_t j = 0; j < nseen; j++)
			dup |= seen[j] == queue[i].hstream;
		if (dup)
			continue;
		SanitizerResult src = api.sync(queue[i].hstream);
		DBG("drain: sync stream %p -> %d\n", (void *)queue[i].hstream, (int)src);
		if (nseen < 16)
			seen[nseen++] = queue[i].hstream;
	}
	uint64_t synced = stc_now();
	uint8_t readok[CTX_MAX];
	for (uint32_t i = 0; i < nctx; i++) {
		szctx *c = &ctxs[i];
		readok[i] = 0;
		if (!c->hits.used)
			continue;
		SanitizerResult drc =
			api.d2h(c->hits.host, (void *)(uintptr_t)c->hits.dev, c->hits.used, c->last_stream);
		readok[i] = drc == SANITIZER_SUCCESS;
		DBG("drain: read back %llu bytes of ring %#llx -> %d\n", (unsigned long long)c->hits.used,
		    (unsigned long long)c->hits.dev, (int)drc);
	}
	learn_clock(synced);
	if (!wbuf)
		wbuf = stc_mem_alloc(STC_BUF_SIZE);
	size_t len = 0;
	stp_enc_state st;
	stp_enc_reset(&st, queue[0].tid);
	for (uint32_t i = 0; i < nq && wbuf; i++) {
		const szq *q = &queue[i];
		const szhdr *h = q->hdr == UINT32_MAX ? NULL : &hdrs[q->hdr];
		const stc_sz_area *a = NULL;
		if (h && readok[h->c - ctxs])
			a = (const stc_sz_area *)(h->c->hits.host + h->areas_off + (uint64_t)q->slot * h->area_bytes);
		else if (h)
			n_failed++;
		stp_event ev;
		launch_event(q, h, a, &ev);
		put_event(&ev, &len, &st);
	}
	if (wbuf)
		write_chunk(&len, &st);
	nq = 0;
	/* the rings start over: hits zeroed on the last launch's stream (a
	 * launch on another stream waits for it: up_stream) */
	for (uint32_t i = 0; i < nctx; i++) {
		szctx *c = &ctxs[i];
		if (c->hits.used) {
			if (api.memset((void *)(uintptr_t)c->hits.dev, 0, c->hits.used, c->last_stream) != SANITIZER_SUCCESS)
				ring_release(c, &c->hits); /* made again, zeroed, when needed */
			c->up_stream = c->last_stream;
			c->up_synced = 0;
		}
		c->hits.used = c->maps.used = 0;
		c->map_dev = 0;
		c->hdr = -1;
	}
	nhdrs = 0;
	for (size_t i = 0; i < nretired; i++)
		stc_szmap_free(retired[i]);
	nretired = 0;
}

static void drain(void)
{
	int was = t_busy, in = t_inside;
	t_busy = t_inside = 1;
	pthread_mutex_lock(&mu);
	if (g_pid != started_pid) { /* never call CUDA in a forked child */
		nq = 0;
		nhdrs = 0;
		nctx = 0;
	}
	drain_locked();
	pthread_mutex_unlock(&mu);
	t_busy = was;
	t_inside = in;
}

/* The flush rounds' mark: below the oldest held launch. */
static uint64_t mark_hook(uint64_t mark, int try_only)
{
	if (!started)
		return mark;
	if (try_only) {
		if (pthread_mutex_trylock(&mu) != 0)
			return 0;
	} else {
		pthread_mutex_lock(&mu);
	}
	if (nq && queue[0].seq < mark && g_pid == started_pid)
		mark = queue[0].seq;
	pthread_mutex_unlock(&mu);
	return mark;
}

/* ---------------------------------------------------------------- launches */

static int retire_locked(stc_szmap *m)
{
	if (nretired == retired_cap) {
		stc_szmap **r = stc_mem_grow(retired, &retired_cap, nretired, sizeof *retired, 256);
		if (!r)
			return -1;
		retired = r;
	}
	retired[nretired++] = m;
	return 0;
}

/* Bytes a new header for map m needs in each ring. */
/* Bytes between two launches' part masks: each launch its own up to
 * PARTS_OWN_MAX objects (4 KiB a launch), else one set for the header. */
static uint64_t chunks_step(const stc_szmap *m) { return m->n <= PARTS_OWN_MAX ? align8(m->n * 4) : 0; }

static void header_need(const szctx *c, const stc_szmap *m, uint32_t slots, uint64_t *maps, uint64_t *hits)
{
	uint64_t step = chunks_step(m);
	*maps = sizeof(stc_sz_hdr) + (c->map_dev ? 0 : m->n * 16);
	*hits = (step ? slots * step : align8(m->n * 4)) + (uint64_t)slots * stc_sz_area_bytes(m->n);
}

/* Uploads bytes [off, off + n) of c's map ring on stream hs. */
static int upload(szctx *c, uint64_t off, uint64_t n, Sanitizer_StreamHandle hs)
{
	return api.h2d((void *)(uintptr_t)(c->maps.dev + off), c->maps.host + off, n, hs) == SANITIZER_SUCCESS ? 0 : -1;
}

/* A new header for c's map on stream hs: its index, or -1. */
static int32_t header_new(szctx *c, Sanitizer_StreamHandle hs)
{
	stc_szmap *m = c->map;
	uint32_t slots = c->want_slots ? c->want_slots : 1;
	uint64_t need_m, need_h;
	header_need(c, m, slots, &need_m, &need_h);
	int full_m = c->maps.used + need_m > c->maps.size, full_h = c->hits.used + need_h > c->hits.size;
	if (full_m || full_h || nhdrs >= UINT32_MAX - 1) {
		/* the rings start over (and the map is uploaded again); a ring that
		 * filled up between the program's own synchronizations doubles, so
		 * that drains come from the program's rhythm, not the ring's */
		int grow_m = full_m && c->maps.dev && c->maps.size < RING_GROW_MAX;
		int grow_h = full_h && c->hits.dev && c->hits.size < RING_GROW_MAX;
		drain_locked();
		header_need(c, m, slots, &need_m, &need_h);
		if (need_m > c->maps.size || !c->maps.dev || grow_m) {
			uint64_t s = c->maps.size > RING_MIN ? (grow_m ? 2 * c->maps.size : c->maps.size) : RING_MIN;
			while (s < 2 * need_m)
				s *= 2;
			if (ring_make(c, &c->maps, s) < 0)
				return -1;
		}
		if (need_h > c->hits.size || !c->hits.dev || grow_h) {
			uint64_t s = c->hits.size > RING_MIN ? (grow_h ? 2 * c->hits.size : c->hits.size) : RING_MIN;
			while (s < 2 * need_h)
				s *= 2;
			if (ring_make(c, &c->hits, s) < 0 ||
			    api.memset((void *)(uintptr_t)c->hits.dev, 0, c->hits.size, hs) != SANITIZER_SUCCESS) {
				ring_release(c, &c->hits);
				return -1;
			}
			c->up_stream = hs;
			c->up_synced = 0;
		}
	}
	if (nhdrs == hdrs_cap) {
		szhdr *n = stc_mem_grow(hdrs, &hdrs_cap, nhdrs, sizeof *hdrs, 1024);
		if (!n)
			return -1;
		hdrs = n;
	}
	/* the hit ring: chunk masks (per area, or one set), then the areas */
	uint64_t step = chunks_step(m);
	uint64_t chunks_off = c->hits.used, areas_off = chunks_off + (step ? slots * step : align8(m->n * 4));
	uint64_t abytes = stc_sz_area_bytes(m->n);
	/* the map ring: [header | starts | ends], or the header alone */
	uint64_t hoff = c->maps.used;
	stc_sz_hdr *hi = (stc_sz_hdr *)(c->maps.host + hoff);
	uint64_t upl = sizeof *hi;
	if (!c->map_dev) {
		uint64_t moff = hoff + sizeof *hi;
		memcpy(c->maps.host + moff, m->starts, m->n * 8);
		memcpy(c->maps.host + moff + m->n * 8, m->ends, m->n * 8);
		c->map_dev = c->maps.dev + moff;
		upl += m->n * 16;
		n_maps++;
	}
	*hi = (stc_sz_hdr){.starts = c->map_dev, .ends = c->map_dev + m->n * 8, .n = m->n,
	                   .chunks = c->hits.dev + chunks_off, .areas = c->hits.dev + areas_off,
	                   .area_bytes = abytes, .id = n_headers, .chunks_step = step};
	if (upload(c, hoff, upl, hs) < 0)
		return -1;
	c->maps.used = align8(hoff + upl);
	c->hits.used = areas_off + (uint64_t)slots * abytes;
	if (c->up_stream != hs && !c->up_synced) {
		/* the last upload or zeroing was queued on another stream */
		api.sync(c->up_stream);
	}
	c->up_stream = hs;
	c->up_synced = 0;
	hdrs[nhdrs] = (szhdr){.c = c, .map = m, .dev = c->maps.dev + hoff, .chunks_off = chunks_off,
	                      .areas_off = areas_off, .area_bytes = abytes, .chunks_step = step};
	c->slots = slots;
	c->slots_used = 0;
	c->hdr = (int32_t)nhdrs;
	n_headers++;
	DBG("header %llu: %llu objects, %u areas, map %#llx, ring used %llu/%llu\n", (unsigned long long)(n_headers - 1),
	    (unsigned long long)m->n, slots, (unsigned long long)c->map_dev, (unsigned long long)c->hits.used,
	    (unsigned long long)c->hits.size);
	return (int32_t)nhdrs++;
}

/* The header and area for a sampled launch on c: 0, or -1 when it could
 * not be had (the launch is then recorded without ranges). */
static int take_area(szctx *c, Sanitizer_StreamHandle hs, uint32_t *hdr, uint32_t *slot)
{
	if (!c->map || c->map->gen != stc_devobj_generation() || c->map->device != c->device) {
		stc_szmap *m = stc_szmap_build(c->device);
		if (!m)
			return -1;
		if (c->map) {
			if (retire_locked(c->map) < 0) {
				stc_szmap_free(m);
				return -1;
			}
			/* areas left unused: the objects change faster than that */
			if (c->hdr >= 0 && c->slots_used < c->slots / 2 && c->want_slots > 1)
				c->want_slots /= 2;
		}
		c->map = m;
		c->map_dev = 0;
		c->hdr = -1;
	} else if (c->hdr >= 0 && c->slots_used == c->slots && c->want_slots < STC_SZ_SLOTS) {
		c->want_slots *= 2; /* the same objects for all of them: more next time */
	}
	if (c->hdr < 0 || c->slots_used == c->slots) {
		if (header_new(c, hs) < 0)
			return -1;
	} else if (c->up_stream != hs && !c->up_synced) {
		api.sync(c->up_stream);
		c->up_synced = 1;
	}
	*hdr = (uint32_t)c->hdr;
	*slot = c->slots_used++;
	return 0;
}

static void on_launch_begin(const Sanitizer_LaunchData *ld)
{
	uint64_t k = atomic_fetch_add(&launches, 1);
	int sampled = stc_sz_sampled(k, sample_every);
	uint32_t stack = call_path(0);
	const char *fn = ld->functionName ? ld->functionName : "";
	uint32_t name = stc_intern_string(fn, strnlen(fn, 4096));
	stp_event now_ev = {.type = STP_EV_API};
	pthread_mutex_lock(&mu);
	uint64_t now = stc_now();
	szctx *c = ctx_of(ld->context, (int32_t)ld->device);
	if (c && c->device < 0)
		c->device = (int32_t)ld->device;
	int held = sampled && c && c->patched;
	if (held && (nq == QUEUE_MAX || (nq && now - queue[0].time_ns > HOLD_NS)))
		drain_locked();
	if (held && !queue && !(queue = stc_mem_alloc(QUEUE_MAX * sizeof *queue)))
		held = 0;
	uint32_t hdr = UINT32_MAX, slot = 0;
	if (held && take_area(c, ld->hStream, &hdr, &slot) < 0) {
		n_failed++;
		hdr = UINT32_MAX;
	}
	if (c && c->patched) {
		uint64_t ud = hdr != UINT32_MAX ? stc_sz_ud(hdrs[hdr].dev, slot) : 0;
		SanitizerResult rc = api.set_launch_data(ld->hLaunch, ld->function, ld->hStream, (void *)(uintptr_t)ud);
		DBG("launch %llu %s: stream %p, header %d area %u (ud %#llx), set data -> %d\n", (unsigned long long)(k + 1), fn,
		    (void *)ld->hStream, hdr == UINT32_MAX ? -1 : (int)hdr, slot, (unsigned long long)ud, (int)rc);
	}
	if (held) {
		/* held with its seq, taken under mu (the mark hook's lock) */
		szq *q = &queue[nq];
		*q = (szq){.seq = atomic_fetch_add_explicit(&g_seq, 1, memory_order_relaxed), .time_ns = now, .tid = tid(),
		           .name = name, .stack = stack, .hdr = hdr, .slot = slot, .device = (int32_t)ld->device,
		           .stream = (uint64_t)(uintptr_t)ld->stream, .hstream = ld->hStream};
		nq++;
		if (hdr != UINT32_MAX) {
			c->last_stream = ld->hStream;
			n_sampled++;
		}
	}
	pthread_mutex_unlock(&mu);
	if (!held) { /* not sampled (or no patch): written now, without ranges */
		now_ev.u.api = (stp_api_info){.kind = STP_API_KERNEL, .name = name, .device = (int32_t)ld->device,
		                              .stream = (uint64_t)(uintptr_t)ld->stream, .stack = stack};
		stc_emit(&now_ev);
	} else if (!atomic_load_explicit(&g_flusher_on, memory_order_relaxed)) {
		stc_flusher_lazy(now);
	}
}

/* ---------------------------------------------------------------- resources */

static void on_memory(Sanitizer_CallbackId cbid, const Sanitizer_ResourceMemoryData *md)
{
	/* not the program's allocations: a module's globals; an allocation of
	 * another device mapped into this one when peer access is enabled
	 * (reported again at the same address, device = the peer: recording it
	 * would duplicate the ALLOC, move the object to the peer's map, and its
	 * unmapping would free the object while it lives); the driver's own
	 * buffers for cooperative groups and dynamic parallelism */
	if (md->flags & (SANITIZER_MEMORY_FLAG_MODULE | SANITIZER_MEMORY_FLAG_PEER | SANITIZER_MEMORY_FLAG_CG_RUNTIME |
	                 SANITIZER_MEMORY_FLAG_CNP))
		return;
	if (!own_device_memory())
		return; /* the PyTorch shim keeps the table (face.h: g_torch_cuda_mode) */
	int alloc = cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC ||
	            cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC || cbid == SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC;
	uint8_t kind = STP_MEM_DEVICE;
	int32_t device = (int32_t)md->device;
	if (cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC || cbid == SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE ||
	    (md->flags & SANITIZER_MEMORY_FLAG_HOST_PINNED)) {
		kind = STP_MEM_PINNED;
		device = -1;
	} else if (md->flags & SANITIZER_MEMORY_FLAG_MANAGED) {
		kind = STP_MEM_MANAGED;
	}
	int emit = emits_allocations();
	uint32_t stack = alloc && emit ? call_path(1) : 0;
	/* the table first, then the event (written now: a held launch that
	 * came before keeps its earlier seq, and its own map) */
	if (alloc)
		stc_devobj_add(md->address, md->size, device, kind, 0, stack);
	else
		stc_devobj_remove(md->address, NULL);
	if (!emit)
		return;
	stp_event ev = {.type = alloc ? STP_EV_ALLOC : STP_EV_FREE};
	if (alloc)
		ev.u.alloc = (stp_alloc_info){.addr = md->address, .size = md->size, .requested = md->size, .stack = stack,
		                              .kind = kind, .device = device, .stream = (uint64_t)(uintptr_t)md->stream};
	else
		ev.u.free = (stp_free_info){.addr = md->address, .size = md->size, .kind = kind, .device = device,
		                            .stream = (uint64_t)(uintptr_t)md->stream};
	stc_emit(&ev);
}

static void patch_error(SanitizerResult rc, const char *at)
{
	if (!first_patch_error) {
		first_patch_error = (int)rc;
		first_patch_error_at = at;
	}
}

static void on_context(Sanitizer_CallbackId cbid, const Sanitizer_ResourceContextData *cd)
{
	pthread_mutex_lock(&mu);
	if (cbid == SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED) {
		/* the device is learnt from the context's first launch: the
		 * callback's `device` moved between releases (CUDA 13.5's
		 * headers put greenContext before it; the 13.0 library an H100
		 * had wrote it 8 bytes earlier), and read at the wrong place it
		 * was garbage in about half the runs: the map of the context's
		 * objects came out empty and no kernel access was found */
		szctx *c = ctx_of(cd->context, -1);
		if (c && patch_path[0]) {
			SanitizerResult rc = api.add_patches(patch_path, cd->context);
			DBG("context %p: patches %s -> %d\n", (void *)cd->context, patch_path, (int)rc);
			if (rc == SANITIZER_SUCCESS) {
				c->patched = 1;
				n_ctx_patched++;
			} else
				patch_error(rc, "sanitizerAddPatchesFromFile");
		}
	} else if (cbid == SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
		drain_locked();
		for (uint32_t i = 0; i < nctx; i++) {
			szctx *c = &ctxs[i];
			if (c->ctx != cd->context)
				continue;
			ring_release(c, &c->maps);
			ring_release(c, &c->hits);
			stc_szmap_free(c->map);
			ctxs[i] = ctxs[--nctx];
			break;
		}
	}
	pthread_mutex_unlock(&mu);
}

static void on_module(const Sanitizer_ResourceModuleData *md)
{
	pthread_mutex_lock(&mu);
	szctx *c = ctx_of(md->context, -1);
	if (c && c->patched) {
		/* the global memory accesses are required; the others are taken
		 * where this driver and architecture have them */
		SanitizerResult rc = SANITIZER_SUCCESS;
		for (size_t k = 0; k < NKINDS; k++) {
			if (!(kinds_want & KIND_BIT(k)))
				continue;
			SanitizerResult r = api.patch_instructions(kinds[k].id, md->module, kinds[k].fn);
			if (r == SANITIZER_SUCCESS)
				kinds_patched |= KIND_BIT(k);
			else if (k == 0)
				rc = r;
		}
		if (rc != SANITIZER_SUCCESS)
			patch_error(rc, "sanitizerPatchInstructions");
		else if ((rc = api.patch_module(md->module)) != SANITIZER_SUCCESS)
			patch_error(rc, "sanitizerPatchModule");
		else
			n_modules_patched++;
		DBG("module %p patched -> %d (kinds %#x)\n", (void *)md->module, (int)rc, kinds_patched);
	}
	pthread_mutex_unlock(&mu);
}

/* ---------------------------------------------------------------- copies and sets */

static void emit_api(uint8_t kind, const char *nm, uint64_t stream, const stp_range *r, uint32_t nr)
{
	stp_event ev = {.type = STP_EV_API};
	ev.u.api = (stp_api_info){.kind = kind, .name = stc_intern_string(nm, strlen(nm)), .device = -1,
	                          .stream = stream, .stack = call_path(0), .nranges = nr, .ranges = nr ? r : NULL};
	stc_emit(&ev);
}

static void on_memcpy(const Sanitizer_MemcpyData *cd)
{
	stp_range r[2];
	uint32_t nr = stc_sz_copy_ranges(cd->srcAddress, cd->dstAddress, cd->size, cd->width, cd->height, cd->depth,
	                                 cd->srcPitch, cd->dstPitch, r);
	static const char *const dir[] = {"memcpy", "memcpy", "memcpy HtoD", "memcpy DtoH", "memcpy DtoD"};
	const char *nm = (unsigned)cd->direction < 5 ? dir[cd->direction] : "memcpy";
	emit_api(STP_API_MEMCPY, nm, (uint64_t)(uintptr_t)(cd->apiStream ? cd->apiStream : cd->dstStream), r, nr);
}

static void on_memset(const Sanitizer_MemsetData *sd)
{
	stp_range r[1];
	uint32_t nr = stc_sz_set_ranges(sd->address, sd->width, sd->height, sd->pitch, sd->elementSize, r);
	emit_api(STP_API_MEMSET, "memset", (uint64_t)(uintptr_t)sd->stream, r, nr);
}

/* ---------------------------------------------------------------- the callback */

static void SANITIZERAPI callback(void *userdata, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                                  const void *data)
{
	(void)userdata;
	if (t_inside || atomic_load_explicit(&g_state, memory_order_relaxed) != STC_ON || g_pid != started_pid)
		return;
	int was = t_busy;
	t_busy = t_inside = 1;
	switch (domain) {
	case SANITIZER_CB_DOMAIN_LAUNCH:
		if (cbid == SANITIZER_CBID_LAUNCH_BEGIN)
			on_launch_begin(data);
		break;
	case SANITIZER_CB_DOMAIN_RESOURCE:
		switch (cbid) {
		case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC:
		case SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE:
		case SANITIZER_CBID_RESOURCE_HOST_MEMORY_ALLOC:
		case SANITIZER_CBID_RESOURCE_HOST_MEMORY_FREE:
		case SANITIZER_CBID_RESOURCE_MEMORY_ALLOC_ASYNC:
		case SANITIZER_CBID_RESOURCE_MEMORY_FREE_ASYNC:
			if (!was) /* not an allocation the collector made itself */
				on_memory(cbid, data);
			break;
		case SANITIZER_CBID_RESOURCE_CONTEXT_CREATION_FINISHED:
		case SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
			on_context(cbid, data);
			break;
		case SANITIZER_CBID_RESOURCE_MODULE_LOADED:
			on_module(data);
			break;
		case SANITIZER_CBID_RESOURCE_FUNCTIONS_LAZY_LOADED:
			/* lazy loading (CUDA's default): the patched module's
			 * functions arrive now, patched by the API (LAZY_PATCHED) */
			n_lazy_loaded++;
			break;
		case SANITIZER_CBID_RESOURCE_FUNCTIONS_LAZY_PATCHED:
			n_lazy_patched++;
			break;
		default:
			break;
		}
		break;
	case SANITIZER_CB_DOMAIN_MEMCPY:
		if (cbid == SANITIZER_CBID_MEMCPY_STARTING && !was)
			on_memcpy(data);
		break;
	case SANITIZER_CB_DOMAIN_MEMSET:
		if (cbid == SANITIZER_CBID_MEMSET_STARTING && !was)
			on_memset(data);
		break;
	case SANITIZER_CB_DOMAIN_SYNCHRONIZE:
		/* the program waited for its GPU work: reading the hits back now
		 * costs a copy, not a wait */
		DBG("synchronize callback %u\n", (unsigned)cbid);
		pthread_mutex_lock(&mu);
		drain_locked();
		pthread_mutex_unlock(&mu);
		break;
	default:
		break;
	}
	t_busy = was;
	t_inside = 0;
}

/* ---------------------------------------------------------------- start and end */

static void *open_lib(void)
{
	const char *env = getenv("STPROF_SANITIZER_LIB");
	void *h = NULL;
	if (env && *env)
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	h = dlopen(STPROF_SANITIZER_LIB_DEFAULT, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("/usr/local/cuda/compute-sanitizer/libsanitizer-public.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libsanitizer-public.so", RTLD_NOW | RTLD_LOCAL);
	return h;
}

/* stprof_sanitizer_patch.fatbin beside libstprof.so, or STPROF_SANITIZER_PATCH */
static void find_patch(void)
{
	const char *env = getenv("STPROF_SANITIZER_PATCH");
	Dl_info di;
	if (env && *env) {
		snprintf(patch_path, sizeof patch_path, "%s", env);
	} else if (dladdr((void *)find_patch, &di) && di.dli_fname) {
		snprintf(patch_path, sizeof patch_path, "%s", di.dli_fname);
		char *slash = strrchr(patch_path, '/');
		size_t at = slash ? (size_t)(slash + 1 - patch_path) : 0;
		snprintf(patch_path + at, sizeof patch_path - at, "stprof_sanitizer_patch.fatbin");
	}
	if (patch_path[0] && access(patch_path, R_OK) != 0)
		patch_path[0] = 0;
}

#define SYM(field, name, required)                                                \
	do {                                                                          \
		void *s_ = dlsym(h, name);                                                \
		if (!s_ && (required))                                                    \
			ok = 0;                                                               \
		memcpy(&api.field, &s_, sizeof s_);                                       \
	} while (0)

void stc_sanitizer_start(void)
{
	if (g_cfg.accesses != STC_ACCESSES_EXACT)
		return;
	if (g_cfg.sample_launches)
		sample_every = g_cfg.sample_launches;
	const char *kw = getenv("STPROF_SANITIZER_KINDS");
	if (kw && *kw)
		kinds_want = (uint32_t)strtoul(kw, NULL, 0);
	const char *dbg = getenv("STPROF_SANITIZER_DEBUG");
	debug = dbg && *dbg && strcmp(dbg, "0");
	void *h = open_lib();
	if (!h) {
		annotate("stprof.sanitizer", -1);
		return;
	}
	int ok = 1;
	__typeof__(&sanitizerEnableDomain) enable;
	SYM(subscribe, "sanitizerSubscribe", 1);
	SYM(enable_domain, "sanitizerEnableDomain", 1);
	SYM(add_patches, "sanitizerAddPatchesFromFile", 1);
	SYM(patch_instructions, "sanitizerPatchInstructions", 1);
	SYM(patch_module, "sanitizerPatchModule", 1);
	SYM(set_launch_data, "sanitizerSetLaunchCallbackData", 1);
	SYM(alloc, "sanitizerAlloc", 1);
	SYM(free, "sanitizerFree", 1);
	SYM(alloc_host, "sanitizerAllocHost", 0);
	SYM(free_host, "sanitizerFreeHost", 0);
	SYM(h2d, "sanitizerMemcpyHostToDeviceAsync", 1);
	SYM(d2h, "sanitizerMemcpyDeviceToHost", 1);
	SYM(memset, "sanitizerMemset", 1);
	SYM(sync, "sanitizerStreamSynchronize", 1);
	if (!api.free_host)
		api.alloc_host = NULL;
	ranges = stc_mem_alloc(RANGES_MAX * sizeof *ranges);
	if (!ok || !ranges) {
		annotate("stprof.sanitizer", -2);
		return;
	}
	enable = api.enable_domain;
	Sanitizer_SubscriberHandle sub;
	if (api.subscribe(&sub, callback, NULL) != SANITIZER_SUCCESS) {
		annotate("stprof.sanitizer", -3);
		return;
	}
	static const Sanitizer_CallbackDomain domains[] = {SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CB_DOMAIN_LAUNCH,
	                                                  SANITIZER_CB_DOMAIN_MEMCPY, SANITIZER_CB_DOMAIN_MEMSET,
	                                                  SANITIZER_CB_DOMAIN_SYNCHRONIZE};
	for (size_t i = 0; i < sizeof domains / sizeof domains[0]; i++)
		enable(1, sub, domains[i]);
	find_patch();
	started_pid = g_pid;
	started = 1;
	atomic_store(&g_sanitizer_api_pid, g_pid); /* the CUPTI backend records no launch, copy or set now */
	annotate("stprof.sanitizer", patch_path[0] ? 1 : -4);
}

void stc_sanitizer_finish(void)
{
	if (!started)
		return;
	drain();
	annotate("stprof.sanitizer_launches", (int64_t)atomic_load(&launches));
	annotate("stprof.sanitizer_sampled", (int64_t)n_sampled);
	if (n_dropped_ranges)
		annotate("stprof.sanitizer_ranges_dropped", (int64_t)n_dropped_ranges);
	if (n_shared_parts)
		annotate("stprof.sanitizer_shared_parts", (int64_t)n_shared_parts);
	if (n_failed)
		annotate("stprof.sanitizer_unread_launches", (int64_t)n_failed);
	if (n_unplaced)
		annotate("stprof.sanitizer_unplaced_launches", (int64_t)n_unplaced);
	annotate("stprof.sanitizer_timed_launches", (int64_t)n_timed);
	annotate("stprof.sanitizer_patched_kinds", (int64_t)kinds_patched);
	annotate("stprof.sanitizer_drains", (int64_t)n_drains);
	annotate("stprof.sanitizer_headers", (int64_t)n_headers);
	annotate("stprof.sanitizer_maps", (int64_t)n_maps);
	annotate("stprof.sanitizer_contexts_patched", (int64_t)n_ctx_patched);
	annotate("stprof.sanitizer_modules_patched", (int64_t)n_modules_patched);
	annotate("stprof.sanitizer_lazy_loaded", (int64_t)n_lazy_loaded);
	annotate("stprof.sanitizer_lazy_patched", (int64_t)n_lazy_patched);
	if (first_patch_error) {
		annotate("stprof.sanitizer_patch_error", first_patch_error);
		if (!n_sampled && atomic_load(&launches) && !stc_quiet())
			fprintf(stderr,
			        "stprof: --accesses=exact: no kernel could be instrumented (%s: error %d); "
			        "kernels are recorded without the objects they touched\n",
			        first_patch_error_at, first_patch_error);
	}
}

#endif

STC_BACKEND(sanitizer) = {
	.name = "sanitizer",
	.start = stc_sanitizer_start,
	.finish = stc_sanitizer_finish,
	.mark = mark_hook,
};
