/*
 * sanitizer_backend.c - the Compute Sanitizer backend (see sanitizer.h):
 * subscribes to the resource, launch, memcpy, memset and synchronize
 * callbacks of libsanitizer-public.so (dlopen'ed, so libstprof.so loads
 * where it is missing), patches every module's global memory instructions
 * with stprof_sanitizer_patch.fatbin (sanitizer_patch.cu) and turns the hit
 * bits of each sampled launch into an API event whose ranges say exactly
 * which objects it read and which it wrote.
 *
 * Per sampled launch, on the launch's stream and before it: the device's
 * object map (sanitizer_map.c, from the live-object table) is uploaded into the
 * context's ring when the table's generation changed since the last upload
 * (a map is immutable: a newer one goes to a new place in the ring), then a
 * launch block (sanitizer_hits.h: header and zeroed hit bits) is uploaded,
 * and the launch is given the block as its patch's userdata.  Nothing waits
 * for the kernel: the launch joins the queue (sanitizer.h's ordering
 * contract).  The queue is written out - streams with queued launches
 * synchronized, every ring copied back once, blocks decoded, events
 * written in call order - when the program synchronizes (stream or
 * context), when a ring or the queue is full, when another part of the
 * collector changes the live-object table, when a context is destroyed,
 * and at exit.  A launch that is not sampled gets a NULL userdata (its
 * patched accesses return at once) and is recorded without ranges.
 *
 * Invariants:
 *   - Calls the backend makes (sanitizer* functions, the ring's memory) are
 *     never recorded: t_busy is set in every callback, and t_inside makes
 *     the callbacks of the backend's own calls return at once.
 *   - One mutex (mu) guards the state; it is taken before any tbuf/output
 *     lock (events are written while it is held) and never inside them.
 *   - A queued launch's map stays allocated until the queue is written.
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
void stc_sanitizer_sync_point(void) {}

#else

#include <sanitizer.h>

#define RANGES_MAX 8192        /* per event: an event must fit one 256 KiB buffer */
#define QUEUE_MAX 65536        /* entries before the queue is written */
#define RING_MIN (4u << 20)    /* bytes of device memory per context, at first */
#define CTX_MAX 64

static struct {
	__typeof__(&sanitizerSubscribe) subscribe;
	__typeof__(&sanitizerEnableDomain) enable_domain;
	__typeof__(&sanitizerAddPatchesFromFile) add_patches;
	__typeof__(&sanitizerPatchInstructions) patch_instructions;
	__typeof__(&sanitizerPatchModule) patch_module;
	__typeof__(&sanitizerSetLaunchCallbackData) set_launch_data;
	__typeof__(&sanitizerAlloc) alloc;
	__typeof__(&sanitizerFree) free;
	__typeof__(&sanitizerMemcpyHostToDeviceAsync) h2d;
	__typeof__(&sanitizerMemcpyDeviceToHost) d2h;
	__typeof__(&sanitizerStreamSynchronize) sync;
} api;

typedef struct szctx {
	CUcontext ctx;
	int32_t device;
	int patched;             /* the patch file was loaded into it */
	uint64_t ring, ring_size, ring_used; /* device memory */
	uint8_t *mirror;         /* host copy of the ring, ring_size bytes */
	stc_szmap *map;          /* the newest map uploaded to the ring */
	Sanitizer_StreamHandle map_stream; /* the stream it was uploaded on */
	int map_synced;          /* that upload is known complete */
	Sanitizer_StreamHandle last_stream; /* of its last sampled launch: reads the ring back */
} szctx;

enum { Q_LAUNCH, Q_API, Q_ALLOC, Q_FREE };
typedef struct szq {
	uint8_t what, kind, nr;
	int32_t device;
	uint32_t name, stack;
	uint64_t stream;
	uint64_t addr, size;     /* Q_ALLOC, Q_FREE */
	stp_range r[2];          /* Q_API */
	szctx *c;                /* Q_LAUNCH sampled: its block */
	stc_szmap *map;
	uint64_t block_off, launch;
	Sanitizer_StreamHandle hstream;
} szq;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static szctx ctxs[CTX_MAX];
static uint32_t nctx;
static szq *queue;
static uint32_t nq, nq_sampled;
static _Atomic uint32_t queued; /* nq, readable without mu */
static stc_szmap **retired;     /* maps of queued launches, freed after the write */
static uint32_t nretired;
static size_t retired_cap;
static stp_range *ranges;       /* RANGES_MAX */
static char patch_path[4096];
static uint32_t sample_every = 1;
static _Atomic uint64_t launches;
static uint64_t n_sampled, n_dropped_ranges, n_failed;
/* what instrumenting found, written as annotations at the end (a run where
 * no kernel could be patched says why: the first failing call's result) */
static uint64_t n_ctx_patched, n_modules_patched, n_lazy_loaded, n_lazy_patched;
static int first_patch_error; /* SanitizerResult, 0: none */
static const char *first_patch_error_at = "";
static int started;
static pid_t started_pid; /* a forked child holds its parent's queue: it drops it */
static STC_TLS int t_inside;
/* STPROF_SANITIZER_DEBUG=1: a line on stderr per sampled launch and per
 * write of the queue (what was uploaded, synchronized, read back) */
static int debug;

#define DBG(...)                                   \
	do {                                           \
		if (debug)                                 \
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
	return c;
}

static uint32_t call_path(void)
{
	uint64_t ips[STC_DEPTH_MAX];
	uint32_t d = g_cfg.depth ? stc_unwind(ips, g_cfg.depth) : 0;
	return d ? stc_intern_stack(ips, d) : 0;
}

/* ---------------------------------------------------------------- writing the queue */

static void emit_api(uint8_t kind, uint32_t name, int32_t device, uint64_t stream, uint32_t stack,
                     const stp_range *r, uint32_t nr)
{
	stp_event ev = {.type = STP_EV_API};
	ev.u.api.kind = kind;
	ev.u.api.name = name;
	ev.u.api.device = device;
	ev.u.api.stream = stream;
	ev.u.api.stack = stack;
	ev.u.api.nranges = nr;
	ev.u.api.ranges = nr ? r : NULL;
	stc_emit(&ev);
}

static void emit_entry(const szq *q)
{
	if (q->what == Q_ALLOC || q->what == Q_FREE) {
		stp_event ev = {.type = q->what == Q_ALLOC ? STP_EV_ALLOC : STP_EV_FREE};
		if (q->what == Q_ALLOC) {
			ev.u.alloc = (stp_alloc_info){.addr = q->addr, .size = q->size, .requested = q->size,
			                              .stack = q->stack, .kind = q->kind, .device = q->device,
			                              .stream = q->stream};
		} else {
			ev.u.free = (stp_free_info){.addr = q->addr, .size = q->size, .kind = q->kind,
			                            .device = q->device, .stream = q->stream};
		}
		stc_emit(&ev);
		return;
	}
	if (q->what == Q_API) {
		emit_api(q->kind, q->name, q->device, q->stream, q->stack, q->r, q->nr);
		return;
	}
	uint32_t nr = 0;
	if (q->map && q->c && q->c->mirror) {
		const stc_sz_block *b = (const stc_sz_block *)(q->c->mirror + q->block_off);
		if (b->launch == q->launch && b->n == q->map->n) {
			size_t hits = stc_sz_decode(q->map->starts, q->map->ends, q->map->ids, q->map->n,
			                            (const uint32_t *)(b + 1), ranges, NULL, RANGES_MAX);
			DBG("launch %llu: block at %llu, map of %llu objects, %zu hit\n", (unsigned long long)q->launch,
			    (unsigned long long)q->block_off, (unsigned long long)q->map->n, hits);
			nr = hits > RANGES_MAX ? RANGES_MAX : (uint32_t)hits;
			n_dropped_ranges += hits - nr;
		} else {
			n_failed++;
		}
	}
	emit_api(STP_API_KERNEL, q->name, q->device, q->stream, q->stack, ranges, nr);
}

/* Synchronizes the streams of queued launches, reads every ring back,
 * writes the queue in order and empties it.  mu held. */
static void drain_locked(void)
{
	if (!nq)
		return;
	if (nq_sampled) {
		Sanitizer_StreamHandle seen[16];
		uint32_t nseen = 0;
		for (uint32_t i = 0; i < nq; i++) {
			if (queue[i].what != Q_LAUNCH || !queue[i].map)
				continue;
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
		for (uint32_t i = 0; i < nctx; i++) {
			szctx *c = &ctxs[i];
			SanitizerResult drc = SANITIZER_SUCCESS;
			if (c->ring_used && c->mirror &&
			    (drc = api.d2h(c->mirror, (void *)(uintptr_t)c->ring, c->ring_used, c->last_stream)) !=
			            SANITIZER_SUCCESS)
				memset(c->mirror, 0, c->ring_used); /* then every block fails its check */
			DBG("drain: read back %llu bytes of ring %#llx -> %d\n", (unsigned long long)c->ring_used,
			    (unsigned long long)c->ring, (int)drc);
		}
	}
	for (uint32_t i = 0; i < nq; i++)
		emit_entry(&queue[i]);
	nq = nq_sampled = 0;
	atomic_store(&queued, 0);
	for (uint32_t i = 0; i < nretired; i++)
		stc_szmap_free(retired[i]);
	nretired = 0;
	for (uint32_t i = 0; i < nctx; i++) {
		ctxs[i].ring_used = 0;
		if (ctxs[i].map) /* its place in the ring is reused: upload it again */
			ctxs[i].map->dev_starts = ctxs[i].map->dev_ends = 0;
	}
}

static void drain(void)
{
	int was = t_busy, in = t_inside;
	t_busy = t_inside = 1;
	pthread_mutex_lock(&mu);
	if (g_pid != started_pid) { /* never call CUDA in a forked child */
		nq = nq_sampled = 0;
		atomic_store(&queued, 0);
		nctx = 0;
	}
	drain_locked();
	pthread_mutex_unlock(&mu);
	t_busy = was;
	t_inside = in;
}

/* A free queue slot; writes the queue first when it is full.  mu held. */
static szq *push_locked(void)
{
	if (!queue) {
		queue = stc_mem_alloc(QUEUE_MAX * sizeof *queue);
		if (!queue)
			return NULL;
	}
	if (nq == QUEUE_MAX)
		drain_locked();
	szq *q = &queue[nq++];
	memset(q, 0, sizeof *q);
	atomic_store(&queued, nq);
	return q;
}

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

/* ---------------------------------------------------------------- launches */

/* Room for `need` more bytes in c's ring (8-aligned offset), or -1.  May
 * write the queue out, or replace the ring by a bigger one.  mu held. */
static int64_t ring_take(szctx *c, uint64_t need)
{
	need = (need + 7) & ~(uint64_t)7;
	if (c->ring && c->ring_used + need <= c->ring_size) {
		uint64_t off = c->ring_used;
		c->ring_used += need;
		return (int64_t)off;
	}
	drain_locked();
	if (!c->ring || need > c->ring_size) {
		uint64_t size = c->ring_size ? c->ring_size : RING_MIN;
		while (size < 2 * need)
			size *= 2;
		if (c->ring) {
			api.free(c->ctx, (void *)(uintptr_t)c->ring);
			stc_mem_free(c->mirror, c->ring_size);
			c->ring = c->ring_size = 0;
			c->mirror = NULL;
		}
		void *p = NULL;
		if (api.alloc(c->ctx, &p, size) != SANITIZER_SUCCESS || !p)
			return -1;
		c->mirror = stc_mem_alloc(size);
		if (!c->mirror) {
			api.free(c->ctx, p);
			return -1;
		}
		c->ring = (uint64_t)(uintptr_t)p;
		c->ring_size = size;
		if (c->map)
			c->map->dev_starts = c->map->dev_ends = 0;
	}
	c->ring_used = need;
	return 0;
}

/* The launch block for a sampled launch on c: its device address, 0 when
 * it could not be made (the launch is then recorded without ranges). */
static uint64_t prepare_block(szctx *c, Sanitizer_StreamHandle hs, uint64_t launch, stc_szmap **map_out,
                              uint64_t *off_out)
{
	/* the map: a new one when the table changed */
	if (!c->map || c->map->gen != stc_devobj_generation() || c->map->device != c->device) {
		stc_szmap *m = stc_szmap_build(c->device);
		if (!m)
			return 0;
		if (c->map && retire_locked(c->map) < 0) {
			stc_szmap_free(m);
			return 0;
		}
		c->map = m;
	}
	stc_szmap *m = c->map;
	uint64_t bbytes = stc_sz_block_bytes(m->n);
	if (!m->dev_starts) {
		uint64_t mbytes = m->n ? m->n * 16 : 16;
		int64_t moff = ring_take(c, mbytes + bbytes);
		if (moff < 0)
			return 0;
		c->ring_used -= bbytes; /* the block is taken below */
		m->dev_starts = c->ring + (uint64_t)moff;
		m->dev_ends = m->dev_starts + m->n * 8;
		if (m->n && (api.h2d((void *)(uintptr_t)m->dev_starts, m->starts, m->n * 8, hs) != SANITIZER_SUCCESS ||
		             api.h2d((void *)(uintptr_t)m->dev_ends, m->ends, m->n * 8, hs) != SANITIZER_SUCCESS)) {
			m->dev_starts = m->dev_ends = 0;
			return 0;
		}
		c->map_stream = hs;
		c->map_synced = 0;
	} else if (c->map_stream != hs && !c->map_synced) {
		/* the map's upload was queued on another stream */
		api.sync(c->map_stream);
		c->map_synced = 1;
	}
	int64_t off = ring_take(c, bbytes);
	if (off < 0)
		return 0;
	if (!m->dev_starts) { /* ring_take wrote the queue out or moved the ring */
		c->ring_used = 0;
		return prepare_block(c, hs, launch, map_out, off_out);
	}
	/* the block's host image is made in the ring's mirror, at its own
	 * place: an asynchronous upload may read it until the queue is written,
	 * and no later launch's block is made there before then (a single
	 * scratch buffer was overwritten by the next launch while the copy
	 * could still be pending) */
	uint8_t *img = c->mirror + off;
	memset(img, 0, bbytes);
	stc_szmap_block_header(m, launch, (stc_sz_block *)img);
	uint64_t dev = c->ring + (uint64_t)off;
	if (api.h2d((void *)(uintptr_t)dev, img, bbytes, hs) != SANITIZER_SUCCESS)
		return 0;
	*map_out = m;
	*off_out = (uint64_t)off;
	return dev;
}

static void on_launch_begin(const Sanitizer_LaunchData *ld)
{
	uint64_t k = atomic_fetch_add(&launches, 1);
	int sampled = stc_sz_sampled(k, sample_every);
	uint32_t stack = call_path();
	const char *fn = ld->functionName ? ld->functionName : "";
	uint32_t name = stc_intern_string(fn, strnlen(fn, 4096));
	pthread_mutex_lock(&mu);
	szctx *c = ctx_of(ld->context, (int32_t)ld->device);
	if (c && c->device < 0)
		c->device = (int32_t)ld->device;
	uint64_t dev = 0, off = 0;
	stc_szmap *m = NULL;
	if (sampled && c && c->patched) {
		dev = prepare_block(c, ld->hStream, k + 1, &m, &off);
		if (!dev)
			n_failed++;
	}
	if (c && c->patched) {
		SanitizerResult rc =
			api.set_launch_data(ld->hLaunch, ld->function, ld->hStream, dev ? (void *)(uintptr_t)dev : NULL);
		DBG("launch %llu %s: stream %p, block %#llx, map %llu objects at %#llx (device %d, table %zu, ctx device %d), "
		    "set data -> %d\n",
		    (unsigned long long)(k + 1), fn, (void *)ld->hStream, (unsigned long long)dev,
		    (unsigned long long)(m ? m->n : 0), (unsigned long long)(m ? m->dev_starts : 0), (int)ld->device,
		    stc_devobj_count(), (int)c->device, (int)rc);
	}
	szq *q = push_locked();
	if (q) {
		*q = (szq){.what = Q_LAUNCH, .kind = STP_API_KERNEL, .device = (int32_t)ld->device, .name = name,
		           .stack = stack, .stream = (uint64_t)(uintptr_t)ld->stream, .hstream = ld->hStream,
		           .launch = k + 1};
		if (dev) {
			c->last_stream = ld->hStream;
			q->c = c;
			q->map = m;
			q->block_off = off;
			nq_sampled++;
			n_sampled++;
		}
	}
	pthread_mutex_unlock(&mu);
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
	uint32_t stack = alloc && emits_allocations() ? call_path() : 0;
	pthread_mutex_lock(&mu);
	/* the table first (this thread's own change: no sync point), the
	 * event in its place in the queue */
	if (alloc)
		stc_devobj_add(md->address, md->size, device, kind, 0, stack);
	else
		stc_devobj_remove(md->address, NULL);
	if (emits_allocations()) {
		szq *q = push_locked();
		if (q)
			*q = (szq){.what = alloc ? Q_ALLOC : Q_FREE, .kind = kind, .device = device, .stack = stack,
			           .addr = md->address, .size = md->size, .stream = (uint64_t)(uintptr_t)md->stream};
	}
	pthread_mutex_unlock(&mu);
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
			if (c->ring)
				api.free(c->ctx, (void *)(uintptr_t)c->ring);
			if (c->mirror)
				stc_mem_free(c->mirror, c->ring_size);
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
		SanitizerResult rc =
			api.patch_instructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, md->module, "stprof_sz_access");
		if (rc != SANITIZER_SUCCESS)
			patch_error(rc, "sanitizerPatchInstructions");
		else if ((rc = api.patch_module(md->module)) != SANITIZER_SUCCESS)
			patch_error(rc, "sanitizerPatchModule");
		else
			n_modules_patched++;
		DBG("module %p patched -> %d\n", (void *)md->module, (int)rc);
	}
	pthread_mutex_unlock(&mu);
}

/* ---------------------------------------------------------------- copies and sets */

static void on_memcpy(const Sanitizer_MemcpyData *cd)
{
	szq e = {.what = Q_API, .kind = STP_API_MEMCPY, .device = -1};
	e.nr = (uint8_t)stc_sz_copy_ranges(cd->srcAddress, cd->dstAddress, cd->size, cd->width, cd->height, cd->depth,
	                                   cd->srcPitch, cd->dstPitch, e.r);
	static const char *const dir[] = {"memcpy", "memcpy", "memcpy HtoD", "memcpy DtoH", "memcpy DtoD"};
	const char *nm = (unsigned)cd->direction < 5 ? dir[cd->direction] : "memcpy";
	e.name = stc_intern_string(nm, strlen(nm));
	e.stream = (uint64_t)(uintptr_t)(cd->apiStream ? cd->apiStream : cd->dstStream);
	e.stack = call_path();
	pthread_mutex_lock(&mu);
	szq *q = push_locked();
	if (q)
		*q = e;
	pthread_mutex_unlock(&mu);
}

static void on_memset(const Sanitizer_MemsetData *sd)
{
	szq e = {.what = Q_API, .kind = STP_API_MEMSET, .device = -1};
	e.nr = (uint8_t)stc_sz_set_ranges(sd->address, sd->width, sd->height, sd->pitch, sd->elementSize, e.r);
	e.name = stc_intern_string("memset", 6);
	e.stream = (uint64_t)(uintptr_t)sd->stream;
	e.stack = call_path();
	pthread_mutex_lock(&mu);
	szq *q = push_locked();
	if (q)
		*q = e;
	pthread_mutex_unlock(&mu);
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

#define SYM(field, name)                                                          \
	do {                                                                          \
		void *s_ = dlsym(h, name);                                                \
		if (!s_)                                                                  \
			ok = 0;                                                               \
		memcpy(&api.field, &s_, sizeof s_);                                       \
	} while (0)

void stc_sanitizer_start(void)
{
	if (g_cfg.accesses != STC_ACCESSES_EXACT)
		return;
	if (g_cfg.sample_launches)
		sample_every = g_cfg.sample_launches;
	const char *dbg = getenv("STPROF_SANITIZER_DEBUG");
	debug = dbg && *dbg && strcmp(dbg, "0");
	void *h = open_lib();
	if (!h) {
		annotate("stprof.sanitizer", -1);
		return;
	}
	int ok = 1;
	__typeof__(&sanitizerEnableDomain) enable;
	SYM(subscribe, "sanitizerSubscribe");
	SYM(enable_domain, "sanitizerEnableDomain");
	SYM(add_patches, "sanitizerAddPatchesFromFile");
	SYM(patch_instructions, "sanitizerPatchInstructions");
	SYM(patch_module, "sanitizerPatchModule");
	SYM(set_launch_data, "sanitizerSetLaunchCallbackData");
	SYM(alloc, "sanitizerAlloc");
	SYM(free, "sanitizerFree");
	SYM(h2d, "sanitizerMemcpyHostToDeviceAsync");
	SYM(d2h, "sanitizerMemcpyDeviceToHost");
	SYM(sync, "sanitizerStreamSynchronize");
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
	if (n_failed)
		annotate("stprof.sanitizer_unread_launches", (int64_t)n_failed);
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

void stc_sanitizer_sync_point(void)
{
	if (t_inside || !atomic_load_explicit(&queued, memory_order_relaxed))
		return;
	drain();
}

#endif

STC_BACKEND(sanitizer) = {
	.name = "sanitizer",
	.start = stc_sanitizer_start,
	.finish = stc_sanitizer_finish,
	.devobj_change = stc_sanitizer_sync_point,
};
