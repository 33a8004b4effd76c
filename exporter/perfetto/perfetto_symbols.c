/*
 * perfetto_symbols.c - names for instruction addresses, and the call stacks
 * of a trace as Perfetto interned frames and callstacks.
 *
 * An address is named once (cached by ip): by the symbolize callback when it
 * knows it ("function", file, line), else as "module+0xOFF" (OFF = ip minus
 * the module's load bias, what addr2line wants) from the trace's MODULE
 * events, else as "0xIP".  A trace stack id becomes one interned Callstack
 * (outermost frame first) on the process's sequence; each distinct ip one
 * interned Frame (mapping 0: a frame known by name, file and line).  With
 * the detector's folding (opts.hide_frame, opts.path_text: the default of
 * `stprof export`), callstacks leave framework frames out and an
 * allocation's call path reads as the report's (the user's line first).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_export.h"

#define MAX_DEPTH 256
#define PATH_FRAMES 12

int pf_module_add(pf_proc *p, const stp_module_info *m)
{
	if (pf_grow((void **)&p->mods, &p->mods_cap, p->nmods + 1, sizeof *p->mods) < 0)
		return -1;
	const char *path = stp_reader_string(p->r, m->path);
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	const char *name = pf_strtab_keep(&p->text, b, strlen(b));
	if (!name)
		return -1;
	size_t i = p->nmods;
	while (i && p->mods[i - 1].base > m->base) {
		p->mods[i] = p->mods[i - 1];
		i--;
	}
	p->mods[i] = (pf_module){m->base, m->size, m->bias, name};
	p->nmods++;
	return 0;
}

static const pf_module *module_of(const pf_proc *p, uint64_t ip)
{
	size_t lo = 0, hi = p->nmods;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->mods[mid].base <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: first module beyond ip; walk back over overlapping maps. */
	for (size_t i = lo; i-- > 0;) {
		const pf_module *m = &p->mods[i];
		if (ip - m->base < m->size)
			return m;
		if (lo - i > 4)
			break;
	}
	return NULL;
}

const pf_sym *pf_symbol(pf_proc *p, uint64_t ip)
{
	uint64_t *ix = pf_map_get(&p->sym_ix, ip);
	if (ix)
		return &p->syms[*ix];
	if (pf_grow((void **)&p->syms, &p->syms_cap, p->nsyms + 1, sizeof *p->syms) < 0)
		return NULL;
	pf_sym s = {0};
	stp_export_frame f = {0};
	const stp_export_opts *o = &p->x->opts;
	char buf[512];
	if (o->symbolize && o->symbolize(o->ctx, p->index, ip, &f) && f.function && *f.function) {
		s.func = pf_strtab_keep(&p->text, f.function, strlen(f.function));
		if (f.file && *f.file)
			s.file = pf_strtab_keep(&p->text, f.file, strlen(f.file));
		s.line = f.line;
	} else {
		const pf_module *m = module_of(p, ip);
		if (m)
			snprintf(buf, sizeof buf, "%s+0x%" PRIx64, m->name, ip - m->bias);
		else
			snprintf(buf, sizeof buf, "0x%" PRIx64, ip);
		s.func = pf_strtab_keep(&p->text, buf, strlen(buf));
	}
	if (!s.func || pf_map_put(&p->sym_ix, ip, p->nsyms) < 0)
		return NULL;
	p->syms[p->nsyms] = s;
	return &p->syms[p->nsyms++];
}

uint64_t pf_callstack_iid(pf_proc *p, pf_pkt *k, uint32_t stack)
{
	uint64_t iid;
	if (!stack)
		return 0;
	if (pf_stack_known(&p->seq, stack, &iid))
		return iid;
	uint64_t ips[MAX_DEPTH], frames[MAX_DEPTH];
	uint32_t n = stp_reader_stack(p->r, stack, ips, MAX_DEPTH);
	const stp_export_opts *o = &p->x->opts;
	if (o->hide_frame) { /* folded: framework frames left out, unless all are */
		uint32_t m = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!o->hide_frame(o->ctx, p->index, ips[i]))
				ips[m++] = ips[i];
		if (m)
			n = m;
		else
			n = stp_reader_stack(p->r, stack, ips, MAX_DEPTH);
	}
	if (!n)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ip = ips[n - 1 - i]; /* outermost first */
		if (pf_frame_known(&p->seq, ip, &frames[i]))
			continue;
		const pf_sym *s = pf_symbol(p, ip);
		if (!s)
			return 0;
		frames[i] = pf_intern_frame(k, ip, s->func, s->file, s->line);
		p->x->st.frames++;
	}
	p->x->st.callstacks++;
	return pf_intern_stack(k, stack, frames, n);
}

uint64_t pf_call_path_iid(pf_proc *p, pf_pkt *k, uint32_t stack)
{
	if (!stack)
		return 0;
	uint64_t *v = pf_map_get(&p->paths, stack);
	if (v)
		return *v;
	char text[4096];
	const stp_export_opts *o = &p->x->opts;
	if (o->path_text && o->path_text(o->ctx, p->index, stack, text, sizeof text)) {
		uint64_t iid = pf_intern_str(k, text);
		if (pf_map_put(&p->paths, stack, iid) < 0)
			return 0;
		return iid;
	}
	uint64_t ips[PATH_FRAMES + 1];
	uint32_t n = stp_reader_stack(p->r, stack, ips, PATH_FRAMES + 1);
	size_t len = 0;
	for (uint32_t i = 0; i < n && i < PATH_FRAMES; i++) {
		const pf_sym *s = pf_symbol(p, ips[i]);
		if (!s)
			return 0;
		int w;
		if (s->file)
			w = snprintf(text + len, sizeof text - len, "%s%s (%s:%u)", i ? " <- " : "", s->func,
			             s->file, s->line);
		else
			w = snprintf(text + len, sizeof text - len, "%s%s", i ? " <- " : "", s->func);
		if (w < 0 || (size_t)w >= sizeof text - len) {
			len = sizeof text - 1;
			break;
		}
		len += (size_t)w;
	}
	if (n > PATH_FRAMES && len + 8 < sizeof text)
		len += (size_t)snprintf(text + len, sizeof text - len, " <- ...");
	text[len] = 0;
	uint64_t iid = pf_intern_str(k, text);
	if (pf_map_put(&p->paths, stack, iid) < 0)
		return 0;
	return iid;
}

void pf_symbols_free(pf_proc *p)
{
	free(p->mods);
	free(p->syms);
	pf_map_free(&p->sym_ix);
	pf_map_free(&p->paths);
	pf_strtab_free(&p->text);
}
