/*
 * codec.c - encodes records and frames chunks (see trace_codec.h and
 * docs/trace-format.md).  Pure functions over caller buffers: no allocation,
 * no locks, async-signal-safe.
 *
 * Record layout: a head byte (bits 0-3 tag, bits 4-6 tag-specific flags,
 * bit 7 "tid follows"), then for events: [tid], seq delta, time delta, and the
 * tag's fields.  Tag 15 escapes to a definition kind byte.
 */
#include <string.h>

#include "stprof/trace_codec.h"
#include "varint.h"
#include "format.h"

void stp_enc_reset(stp_enc_state *s, uint32_t tid)
{
	memset(s, 0, sizeof *s);
	s->tid = tid;
	s->prev_seq = UINT64_MAX;
}

size_t stp_enc_event_bound(const stp_event *ev)
{
	size_t n = 160;
	if (ev->type == STP_EV_API)
		n += (size_t)ev->u.api.nranges * 21;
	if (ev->type == STP_EV_FOLD)
		n += (size_t)ev->u.fold.nspaces * 96 + (size_t)ev->u.fold.nsites * 41;
	return n;
}

static uint8_t *put_dev(uint8_t *p, const uint8_t *e, unsigned kind, int32_t device, uint64_t stream,
                        uint32_t pool)
{
	p = put_u8(p, e, kind);
	p = put_v(p, e, zz_enc(device));
	p = put_v(p, e, stream);
	return put_v(p, e, pool);
}

static int alloc_has_dev(const stp_alloc_info *a)
{
	return a->kind != STP_MEM_HOST || a->device != -1 || a->stream || a->pool;
}

size_t stp_enc_event(uint8_t *out, size_t cap, stp_enc_state *s, const stp_event *ev)
{
	const uint8_t *e = out + cap;
	stp_enc_state st = *s;
	unsigned head = ev->type & 0x0f, flags = 0;
	if (ev->type < 1 || ev->type > STP_EV_TYPE_MAX)
		return 0;

	/* flags first: they live in the head byte */
	switch (ev->type) {
	case STP_EV_ALLOC:
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE:
	case STP_EV_REFUSED: {
		const stp_alloc_info *a = &ev->u.alloc;
		if (a->requested != a->size)
			flags |= STP_F_REQ;
		if (alloc_has_dev(a))
			flags |= STP_F_DEV;
		if (a->stack)
			flags |= STP_F_STACK;
		break;
	}
	case STP_EV_FREE: {
		const stp_free_info *f = &ev->u.free;
		if (f->size)
			flags |= STP_F_SIZE;
		if (f->kind != STP_MEM_HOST || f->device != -1 || f->stream || f->pool)
			flags |= STP_F_DEV;
		break;
	}
	case STP_EV_API:
		if (ev->u.api.stack)
			flags |= STP_F_API_STACK;
		if (ev->u.api.device != -1 || ev->u.api.stream)
			flags |= STP_F_API_DEV;
		if (ev->u.api.nranges)
			flags |= STP_F_API_RANGES;
		break;
	case STP_EV_MARKER:
		if (ev->u.marker.name)
			flags |= STP_F_MARK_NAME;
		if (ev->u.marker.value)
			flags |= STP_F_MARK_VALUE;
		break;
	case STP_EV_FOLD:
		if (ev->u.fold.nspaces)
			flags |= STP_F_FOLD_SPACES;
		if (ev->u.fold.nsites)
			flags |= STP_F_FOLD_SITES;
		if (ev->u.fold.nspaces && ev->u.fold.counted)
			flags |= STP_F_FOLD_COUNTS;
		if (ev->u.fold.last_seq < ev->seq)
			return 0;
		break;
	default:
		break;
	}
	if (ev->tid != st.tid)
		flags |= STP_F_TID;

	uint8_t *p = put_u8(out, e, head | flags);
	if (flags & STP_F_TID)
		p = put_v(p, e, ev->tid);
	p = put_v(p, e, ev->seq - st.prev_seq - 1);
	p = put_v(p, e, zz_enc((int64_t)(ev->time_ns - st.prev_time)));
	st.prev_seq = ev->seq;
	st.prev_time = ev->time_ns;

	switch (ev->type) {
	case STP_EV_PROCESS: {
		const stp_process_info *pi = &ev->u.process;
		p = put_v(p, e, pi->pid);
		p = put_v(p, e, pi->ppid);
		p = put_v(p, e, zz_enc(pi->rank));
		p = put_v(p, e, zz_enc(pi->local_rank));
		p = put_v(p, e, zz_enc(pi->world_size));
		p = put_v(p, e, pi->cmdline);
		p = put_v(p, e, pi->exe);
		p = put_v(p, e, pi->hostname);
		p = put_v(p, e, pi->start_realtime_ns);
		p = put_v(p, e, pi->start_monotonic_ns);
		break;
	}
	case STP_EV_THREAD:
		p = put_v(p, e, ev->u.thread.tid);
		p = put_v(p, e, ev->u.thread.name);
		break;
	case STP_EV_MODULE: {
		const stp_module_info *m = &ev->u.module;
		unsigned bl = m->build_id_len > STP_BUILD_ID_MAX ? STP_BUILD_ID_MAX : m->build_id_len;
		p = put_v(p, e, m->path);
		p = put_v(p, e, m->base);
		p = put_v(p, e, m->size);
		p = put_v(p, e, m->bias);
		p = put_u8(p, e, bl);
		p = put_bytes(p, e, m->build_id, bl);
		break;
	}
	case STP_EV_ALLOC:
	case STP_EV_SEGMENT_RESERVE:
	case STP_EV_SEGMENT_RELEASE:
	case STP_EV_REFUSED: {
		const stp_alloc_info *a = &ev->u.alloc;
		p = put_v(p, e, zz_enc((int64_t)(a->addr - st.prev_addr)));
		p = put_v(p, e, a->size);
		if (flags & STP_F_REQ)
			p = put_v(p, e, zz_enc((int64_t)(a->size - a->requested)));
		if (flags & STP_F_DEV)
			p = put_dev(p, e, a->kind, a->device, a->stream, a->pool);
		if (flags & STP_F_STACK) {
			p = put_v(p, e, zz_enc((int64_t)a->stack - (int64_t)st.prev_stack));
			st.prev_stack = a->stack;
		}
		st.prev_addr = a->addr;
		break;
	}
	case STP_EV_FREE: {
		const stp_free_info *f = &ev->u.free;
		p = put_v(p, e, zz_enc((int64_t)(f->addr - st.prev_addr)));
		if (flags & STP_F_SIZE)
			p = put_v(p, e, f->size);
		if (flags & STP_F_DEV)
			p = put_dev(p, e, f->kind, f->device, f->stream, f->pool);
		st.prev_addr = f->addr;
		break;
	}
	case STP_EV_API: {
		const stp_api_info *a = &ev->u.api;
		p = put_u8(p, e, a->kind);
		p = put_v(p, e, a->name);
		p = put_v(p, e, a->end_ns >= ev->time_ns ? a->end_ns - ev->time_ns : 0);
		if (flags & STP_F_API_DEV) {
			p = put_v(p, e, zz_enc(a->device));
			p = put_v(p, e, a->stream);
		}
		if (flags & STP_F_API_STACK) {
			p = put_v(p, e, zz_enc((int64_t)a->stack - (int64_t)st.prev_stack));
			st.prev_stack = a->stack;
		}
		if (flags & STP_F_API_RANGES) {
			p = put_v(p, e, a->nranges);
			for (uint32_t i = 0; i < a->nranges && p; i++) {
				const stp_range *r = &a->ranges[i];
				p = put_v(p, e, zz_enc((int64_t)(r->addr - st.prev_addr)));
				p = put_v(p, e, r->size);
				p = put_u8(p, e, r->mode);
				st.prev_addr = r->addr;
			}
		}
		break;
	}
	case STP_EV_MARKER: {
		const stp_marker_info *m = &ev->u.marker;
		p = put_u8(p, e, m->kind);
		if (flags & STP_F_MARK_NAME)
			p = put_v(p, e, m->name);
		if (flags & STP_F_MARK_VALUE)
			p = put_v(p, e, zz_enc(m->value));
		break;
	}
	case STP_EV_FOLD: {
		const stp_fold_info *f = &ev->u.fold;
		p = put_v(p, e, zz_enc(f->iteration));
		p = put_v(p, e, zz_enc(f->iteration - f->like));
		p = put_v(p, e, f->last_seq - ev->seq);
		p = put_v(p, e, f->elided);
		p = put_v(p, e, f->apis);
		p = put_v(p, e, f->markers);
		p = put_v(p, e, f->digest);
		if (flags & STP_F_FOLD_SPACES) {
			p = put_v(p, e, f->nspaces);
			for (uint32_t i = 0; i < f->nspaces && p; i++) {
				const stp_fold_space *x = &f->spaces[i];
				p = put_u8(p, e, x->kind);
				p = put_v(p, e, zz_enc(x->device));
				p = put_v(p, e, x->pool);
				p = put_v(p, e, x->allocs);
				p = put_v(p, e, x->bytes);
				p = put_v(p, e, x->peak);
				p = put_v(p, e, x->carried_in);
				p = put_v(p, e, x->carried_out);
				p = put_v(p, e, x->sampled);
				p = put_v(p, e, x->sampled_est);
				if (flags & STP_F_FOLD_COUNTS) {
					p = put_v(p, e, x->peak_objects);
				}
			}
		}
		if (flags & STP_F_FOLD_SITES) {
			p = put_v(p, e, f->nsites);
			for (uint32_t i = 0; i < f->nsites && p; i++) {
				const stp_fold_site *x = &f->sites[i];
				p = put_v(p, e, zz_enc((int64_t)x->stack - (int64_t)st.prev_stack));
				st.prev_stack = x->stack;
				p = put_u8(p, e, x->kind);
				p = put_v(p, e, zz_enc(x->device));
				p = put_v(p, e, x->pool);
				p = put_v(p, e, x->allocs);
				p = put_v(p, e, x->bytes);
			}
		}
		break;
	}
	}
	if (!p)
		return 0;
	*s = st;
	return (size_t)(p - out);
}

size_t stp_enc_string(uint8_t *out, size_t cap, uint32_t id, const char *str, size_t len)
{
	const uint8_t *e = out + cap;
	uint8_t *p = put_u8(out, e, STP_TAG_DEF);
	p = put_u8(p, e, STP_DEF_STRING);
	p = put_v(p, e, id);
	p = put_v(p, e, len);
	p = put_bytes(p, e, str, len);
	return p ? (size_t)(p - out) : 0;
}

size_t stp_enc_node(uint8_t *out, size_t cap, stp_enc_state *s, uint32_t id, uint32_t parent, uint64_t ip)
{
	const uint8_t *e = out + cap;
	uint8_t *p = put_u8(out, e, STP_TAG_DEF);
	p = put_u8(p, e, STP_DEF_NODE);
	p = put_v(p, e, id);
	p = put_v(p, e, id - parent); /* parent < id, so this is >= 1 */
	p = put_v(p, e, zz_enc((int64_t)(ip - s->prev_ip)));
	if (!p)
		return 0;
	s->prev_ip = ip;
	return (size_t)(p - out);
}

size_t stp_enc_stack(uint8_t *out, size_t cap, uint32_t stack, uint32_t node)
{
	const uint8_t *e = out + cap;
	uint8_t *p = put_u8(out, e, STP_TAG_DEF);
	p = put_u8(p, e, STP_DEF_STACK);
	p = put_v(p, e, stack);
	p = put_v(p, e, node);
	return p ? (size_t)(p - out) : 0;
}

void stp_file_header(uint8_t out[STP_FILE_HEADER_SIZE])
{
	memset(out, 0, STP_FILE_HEADER_SIZE);
	memcpy(out, STP_FILE_MAGIC, 8);
	st_le16(out + 8, STP_FORMAT_MAJOR);
	st_le16(out + 10, STP_FORMAT_MINOR);
	st_le32(out + 12, STP_FILE_HEADER_SIZE);
	st_le64(out + 16, 0); /* flags: none defined in 1.0 */
}

void stp_chunk_header(uint8_t out[STP_CHUNK_HEADER_SIZE], unsigned type, uint32_t tid,
                      const uint8_t *payload, uint32_t len)
{
	st_le32(out, STP_CHUNK_MAGIC);
	out[4] = (uint8_t)type;
	out[5] = 0;
	st_le16(out + 6, 0);
	st_le32(out + 8, tid);
	st_le32(out + 12, len);
	uint32_t crc = stp_crc32c(0, out, 16);
	crc = stp_crc32c(crc, payload, len);
	st_le32(out + 16, crc);
}

size_t stp_chunk_watermark(uint8_t *out, uint64_t next_seq)
{
	uint8_t *pay = out + STP_CHUNK_HEADER_SIZE;
	uint8_t *p = put_var(pay, out + 64, next_seq);
	uint32_t len = (uint32_t)(p - pay);
	stp_chunk_header(out, STP_CHUNK_WATERMARK, 0, pay, len);
	return STP_CHUNK_HEADER_SIZE + len;
}

size_t stp_chunk_end(uint8_t *out, uint32_t reason, int32_t value, uint64_t next_seq)
{
	uint8_t *pay = out + STP_CHUNK_HEADER_SIZE;
	uint8_t *p = put_var(pay, out + 64, reason);
	p = put_v(p, out + 64, zz_enc(value));
	p = put_v(p, out + 64, next_seq);
	uint32_t len = (uint32_t)(p - pay);
	stp_chunk_header(out, STP_CHUNK_END, 0, pay, len);
	return STP_CHUNK_HEADER_SIZE + len;
}
