/*
 * decode.c - decodes the records of one chunk payload (see codec.c for the
 * layout).  Every read is bounds-checked; malformed input returns -1, never
 * reads past the payload and never allocates more than the payload could
 * describe.
 */
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "format.h"
#include "varint.h"

void stp_dec_init(stp_dec *d, const uint8_t *p, size_t n, uint32_t tid)
{
	memset(d, 0, sizeof *d);
	d->start = d->p = p;
	d->end = p + n;
	stp_enc_reset(&d->st, tid);
}

void stp_dec_free(stp_dec *d)
{
	free(d->ranges);
	free(d->fold_spaces);
	free(d->fold_sites);
	d->ranges = NULL;
	d->fold_spaces = NULL;
	d->fold_sites = NULL;
	d->ranges_cap = d->fold_spaces_cap = d->fold_sites_cap = 0;
}

/* Room for n elements of size sz in *buf (capacity *cap); -1 when out of memory. */
static int reserve(void **buf, uint32_t *cap, uint64_t n, size_t sz)
{
	if (n <= *cap)
		return 0;
	void *nb = realloc(*buf, (size_t)n * sz);
	if (!nb)
		return -1;
	*buf = nb;
	*cap = (uint32_t)n;
	return 0;
}

#define GETV(var) do { \
		uint64_t v_; \
		if (!(p = get_var(p, e, &v_))) \
			return -1; \
		(var) = v_; \
	} while (0)
#define GETU8(var) do { \
		uint8_t v_; \
		if (!(p = get_u8(p, e, &v_))) \
			return -1; \
		(var) = v_; \
	} while (0)
#define GETZ(var) do { \
		uint64_t v_; \
		if (!(p = get_var(p, e, &v_))) \
			return -1; \
		(var) = zz_dec(v_); \
	} while (0)
#define GET32(var) do { \
		uint64_t v_; \
		if (!(p = get_var(p, e, &v_)) || v_ > UINT32_MAX) \
			return -1; \
		(var) = (uint32_t)v_; \
	} while (0)
#define GETI32(var) do { \
		uint64_t v_; \
		if (!(p = get_var(p, e, &v_))) \
			return -1; \
		int64_t s_ = zz_dec(v_); \
		if (s_ < INT32_MIN || s_ > INT32_MAX) \
			return -1; \
		(var) = (int32_t)s_; \
	} while (0)

static const uint8_t *get_dev(const uint8_t *p, const uint8_t *e, uint8_t *kind, int32_t *device,
                              uint64_t *stream, uint32_t *pool)
{
	uint64_t v;
	if (!(p = get_u8(p, e, kind)) || *kind > STP_MEM_PINNED)
		return NULL;
	if (!(p = get_var(p, e, &v)))
		return NULL;
	int64_t dv = zz_dec(v);
	if (dv < INT32_MIN || dv > INT32_MAX)
		return NULL;
	*device = (int32_t)dv;
	if (!(p = get_var(p, e, stream)))
		return NULL;
	if (!(p = get_var(p, e, &v)) || v > UINT32_MAX)
		return NULL;
	*pool = (uint32_t)v;
	return p;
}

static int dec_stack(const uint8_t **pp, const uint8_t *e, stp_enc_state *st, uint32_t *stack)
{
	uint64_t v;
	if (!(*pp = get_var(*pp, e, &v)))
		return -1;
	int64_t s = (int64_t)st->prev_stack + zz_dec(v);
	if (s < 0 || s > UINT32_MAX)
		return -1;
	*stack = st->prev_stack = (uint32_t)s;
	return 0;
}

int stp_dec_next(stp_dec *d, stp_event *ev, stp_def *def)
{
	const uint8_t *p = d->p, *e = d->end;
	stp_enc_state st = d->st;
	if (p >= e)
		return STP_DEC_END;
	uint8_t head = *p++;
	unsigned tag = head & STP_TAG_MASK, flags = head & 0x70u;

	if (tag == STP_TAG_DEF) {
		uint8_t kind;
		if (head != STP_TAG_DEF)
			return -1;
		GETU8(kind);
		memset(def, 0, sizeof *def);
		GET32(def->id);
		if (def->id == 0)
			return -1;
		if (kind == STP_DEF_STRING) {
			uint64_t len;
			GETV(len);
			if (len > (uint64_t)(e - p))
				return -1;
			def->str = (const char *)p;
			def->len = (size_t)len;
			p += len;
			d->p = p;
			return STP_DEC_STRING;
		}
		if (kind == STP_DEF_STACK) {
			GET32(def->parent);
			if (def->parent == 0)
				return -1;
			d->p = p;
			return STP_DEC_STACK;
		}
		if (kind == STP_DEF_NODE) {
			uint64_t dp, dip;
			GETV(dp);
			if (dp == 0 || dp > def->id)
				return -1;
			def->parent = (uint32_t)(def->id - dp);
			GETV(dip);
			def->ip = st.prev_ip + (uint64_t)zz_dec(dip);
			st.prev_ip = def->ip;
			d->st = st;
			d->p = p;
			return STP_DEC_NODE;
		}
		return -1;
	}
	if (tag < 1 || tag > STP_EV_TYPE_MAX)
		return -1;

	/* each case below clears and sets its own member (padding included),
	 * not the whole event, whose union is large */
	ev->type = (uint8_t)tag;
	ev->tid = st.tid;
	if (head & STP_F_TID)
		GET32(ev->tid);
	uint64_t dseq, dtime;
	GETV(dseq);
	GETV(dtime);
	ev->seq = st.prev_seq + 1 + dseq;
	ev->time_ns = st.prev_time + (uint64_t)zz_dec(dtime);
	st.prev_seq = ev->seq;
	st.prev_time = ev->time_ns;

	switch (tag) {
	case STP_EV_PROCESS: {
		stp_process_info *pi = &ev->u.process;
		memset(pi, 0, sizeof *pi);
		if (flags)
			return -1;
		GET32(pi->pid);
		GET32(pi->ppid);
		GETI32(pi->rank);
		GETI32(pi->local_rank);
		GETI32(pi->world_size);
		GET32(pi->cmdline);
		GET32(pi->exe);
		GET32(pi->hostname);
		GETV(pi->start_realtime_ns);
		GETV(pi->start_monotonic_ns);
		break;
	}
	case STP_EV_THREAD:
		memset(&ev->u.thread, 0, sizeof ev->u.thread);
		if (flags)
			return -1;
		GET32(ev->u.thread.tid);
		GET32(ev->u.thread.name);
		break;
	case STP_EV_MODULE: {
		stp_module_info *m = &ev->u.module;
		memset(m, 0, sizeof *m);
		if (flags)
			return -1;
		GET32(m->path);
		GETV(m->base);
		GETV(m->size);
		GETV(m->bias);
		GETU8(m->build_id_len);
		if (m->build_id_len > STP_BUILD_ID_MAX || m->build_id_len > (size_t)(e - p))
			return -1;
		memcpy(m->build_id, p, m->build_id_len);
		p += m->build_id_len;
		break;
	}
	case STP_EV_ALLOC:
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE:
	case STP_EV_REFUSED: {
		stp_alloc_info *a = &ev->u.alloc;
		uint64_t da;
		memset(a, 0, sizeof *a);
		GETV(da);
		a->addr = st.prev_addr + (uint64_t)zz_dec(da);
		st.prev_addr = a->addr;
		GETV(a->size);
		a->requested = a->size;
		a->device = -1;
		if (flags & STP_F_REQ) {
			uint64_t dr;
			GETV(dr);
			a->requested = a->size - (uint64_t)zz_dec(dr);
		}
		if ((flags & STP_F_DEV) && !(p = get_dev(p, e, &a->kind, &a->device, &a->stream, &a->pool)))
			return -1;
		if ((flags & STP_F_STACK) && dec_stack(&p, e, &st, &a->stack))
			return -1;
		break;
	}
	case STP_EV_FREE: {
		stp_free_info *f = &ev->u.free;
		uint64_t da;
		memset(f, 0, sizeof *f);
		if (flags & STP_F_STACK)
			return -1;
		GETV(da);
		f->addr = st.prev_addr + (uint64_t)zz_dec(da);
		st.prev_addr = f->addr;
		f->device = -1;
		if (flags & STP_F_SIZE)
			GETV(f->size);
		if ((flags & STP_F_DEV) && !(p = get_dev(p, e, &f->kind, &f->device, &f->stream, &f->pool)))
			return -1;
		break;
	}
	case STP_EV_API: {
		stp_api_info *a = &ev->u.api;
		uint64_t dur;
		memset(a, 0, sizeof *a);
		GETU8(a->kind);
		if (a->kind > STP_API_OP)
			return -1;
		GET32(a->name);
		GETV(dur);
		a->end_ns = ev->time_ns + dur;
		if (a->end_ns < ev->time_ns)
			return -1;
		a->device = -1;
		if (flags & STP_F_API_DEV) {
			GETI32(a->device);
			GETV(a->stream);
		}
		if ((flags & STP_F_API_STACK) && dec_stack(&p, e, &st, &a->stack))
			return -1;
		if (flags & STP_F_API_RANGES) {
			uint64_t n;
			GETV(n);
			/* each range takes at least 3 bytes */
			if (n == 0 || n > STP_RANGES_MAX || n > (uint64_t)(e - p) / 3)
				return -1;
			if (reserve((void **)&d->ranges, &d->ranges_cap, n, sizeof *d->ranges))
				return -1;
			for (uint64_t i = 0; i < n; i++) {
				stp_range *r = &d->ranges[i];
				uint64_t dr;
				GETV(dr);
				r->addr = st.prev_addr + (uint64_t)zz_dec(dr);
				st.prev_addr = r->addr;
				GETV(r->size);
				GETU8(r->mode);
			}
			a->nranges = (uint32_t)n;
			a->ranges = d->ranges;
		}
		break;
	}
	case STP_EV_MARKER: {
		stp_marker_info *m = &ev->u.marker;
		memset(m, 0, sizeof *m);
		GETU8(m->kind);
		if (m->kind < 1 || m->kind > STP_MARK_KIND_MAX)
			return -1;
		if (flags & STP_F_MARK_NAME)
			GET32(m->name);
		if (flags & STP_F_MARK_VALUE)
			GETZ(m->value);
		break;
	}
	case STP_EV_FOLD: {
		stp_fold_info *f = &ev->u.fold;
		uint64_t dlike, dlast, n;
		memset(f, 0, sizeof *f);
		if (flags & ~(STP_F_FOLD_SPACES | STP_F_FOLD_SITES | STP_F_FOLD_COUNTS) ||
		    ((flags & STP_F_FOLD_COUNTS) && !(flags & STP_F_FOLD_SPACES)))
			return -1;
		GETZ(f->iteration);
		GETV(dlike);
		f->like = f->iteration - zz_dec(dlike);
		GETV(dlast);
		f->last_seq = ev->seq + dlast;
		if (f->last_seq < ev->seq)
			return -1;
		GETV(f->elided);
		GETV(f->apis);
		GETV(f->markers);
		GETV(f->digest);
		/* the event stands for itself and for at most the seqs up to last_seq */
		if (f->elided == 0 || f->elided - 1 > dlast || f->apis + f->markers > f->elided)
			return -1;
		if (flags & STP_F_FOLD_SPACES) {
			GETV(n);
			/* each space takes at least 10 bytes */
			if (n == 0 || n > STP_FOLD_SPACES_MAX || n > (uint64_t)(e - p) / 10 ||
			    reserve((void **)&d->fold_spaces, &d->fold_spaces_cap, n, sizeof *d->fold_spaces))
				return -1;
			for (uint64_t i = 0; i < n; i++) {
				stp_fold_space *x = &d->fold_spaces[i];
				memset(x, 0, sizeof *x);
				GETU8(x->kind);
				if (x->kind > STP_MEM_PINNED)
					return -1;
				GETI32(x->device);
				GET32(x->pool);
				GETV(x->allocs);
				GETV(x->bytes);
				GETV(x->peak);
				GETV(x->carried_in);
				GETV(x->carried_out);
				GETV(x->sampled);
				GETV(x->sampled_est);
				if (x->sampled > x->allocs)
					return -1;
				if (flags & STP_F_FOLD_COUNTS) {
					GETV(x->peak_objects);
				}
			}
			f->nspaces = (uint32_t)n;
			f->counted = (flags & STP_F_FOLD_COUNTS) != 0;
			f->spaces = d->fold_spaces;
		}
		if (flags & STP_F_FOLD_SITES) {
			GETV(n);
			/* each site takes at least 6 bytes */
			if (n == 0 || n > STP_FOLD_SITES_MAX || n > (uint64_t)(e - p) / 6 ||
			    reserve((void **)&d->fold_sites, &d->fold_sites_cap, n, sizeof *d->fold_sites))
				return -1;
			for (uint64_t i = 0; i < n; i++) {
				stp_fold_site *x = &d->fold_sites[i];
				memset(x, 0, sizeof *x);
				if (dec_stack(&p, e, &st, &x->stack))
					return -1;
				GETU8(x->kind);
				if (x->kind > STP_MEM_PINNED)
					return -1;
				GETI32(x->device);
				GET32(x->pool);
				GETV(x->allocs);
				GETV(x->bytes);
			}
			f->nsites = (uint32_t)n;
			f->sites = d->fold_sites;
		}
		break;
	}
	}
	d->st = st;
	d->p = p;
	return STP_DEC_EVENT;
}
