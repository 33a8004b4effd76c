/*
 * heaptrack2stp.c - `plan_heaptrack2stp RAW OUT.stp [MIN_SIZE]`: turns the raw
 * output of heaptrack's preload library (lines "+ size trace ptr",
 * "- ptr", "t ip parent", all hex) into a .stp trace, so that the planner's
 * tests can plan real PyTorch CPU allocation streams before the collector
 * records them itself.  Allocations below MIN_SIZE (default 512) and the
 * frees that match them are dropped.  Marker allocations made by the traced
 * program with malloc(0x3E570000 | kind << 12 | value) become markers:
 * kind 1/2 iteration begin/end, 3/4 phase begin/end with value 0 forward,
 * 1 backward, 2 optimizer.  A test helper, not a product.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stprof/trace.h"

#define MAGIC 0x3E570000u
#define HSIZE (1u << 22)

static uint64_t *hk; /* tracked pointers: open addressing, 0 = empty, 1 = deleted */

static size_t slot(uint64_t p)
{
	size_t h = (size_t)((p * 0x9E3779B97F4A7C15ull) >> 42) & (HSIZE - 1);
	while (hk[h] && hk[h] != p)
		h = (h + 1) & (HSIZE - 1);
	return h;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: plan_heaptrack2stp RAW OUT.stp [MIN_SIZE]\n");
		return 2;
	}
	uint64_t minsize = argc > 3 ? strtoull(argv[3], NULL, 10) : 512;
	FILE *in = fopen(argv[1], "r");
	char err[256];
	stp_writer *w = stp_writer_open(argv[2], err, sizeof err);
	hk = calloc(HSIZE, sizeof *hk);
	size_t ncap = 1 << 16, nn = 1;
	uint64_t *nip = malloc(ncap * sizeof *nip), *npar = malloc(ncap * sizeof *npar);
	if (!in || !w || !hk || !nip || !npar) {
		fprintf(stderr, "plan_heaptrack2stp: cannot open %s or %s\n", argv[1], argv[2]);
		return 1;
	}
	static const char *phase[] = {"forward", "backward", "optimizer"};
	char line[4096];
	uint64_t t = 0, live = 0;
	stp_event ev;
	while (fgets(line, sizeof line, in)) {
		uint64_t a = 0, b = 0, c = 0;
		memset(&ev, 0, sizeof ev);
		ev.seq = STP_SEQ_AUTO;
		ev.tid = 1;
		ev.time_ns = ++t;
		if (line[0] == 't' && sscanf(line + 1, "%lx %lx", &a, &b) == 2) {
			if (nn == ncap) {
				ncap *= 2;
				nip = realloc(nip, ncap * sizeof *nip);
				npar = realloc(npar, ncap * sizeof *npar);
				if (!nip || !npar)
					return 1;
			}
			nip[nn] = a;
			npar[nn++] = b;
		} else if (line[0] == '+' && sscanf(line + 1, "%lx %lx %lx", &a, &b, &c) == 3) {
			if ((a & 0xFFFF0000u) == MAGIC) {
				unsigned kind = (a >> 12) & 0xf, value = a & 0xfff;
				ev.type = STP_EV_MARKER;
				ev.u.marker.kind = (uint8_t)kind;
				ev.u.marker.value = kind >= 3 ? 0 : value;
				if (kind >= 3 && value < 3)
					ev.u.marker.name = stp_writer_string(w, phase[value]);
				stp_writer_event(w, &ev);
				continue;
			}
			if (a < minsize)
				continue;
			uint64_t ips[16];
			uint32_t d = 0;
			for (uint64_t k = b; k && k < nn && d < 16; k = npar[k])
				ips[d++] = nip[k];
			ev.type = STP_EV_ALLOC;
			ev.u.alloc.addr = c;
			ev.u.alloc.size = ev.u.alloc.requested = a;
			ev.u.alloc.stack = stp_writer_stack(w, ips, d);
			ev.u.alloc.device = -1;
			stp_writer_event(w, &ev);
			hk[slot(c)] = c;
			live++;
		} else if (line[0] == '-' && sscanf(line + 1, "%lx", &a) == 1) {
			size_t s = slot(a);
			if (hk[s] != a)
				continue;
			hk[s] = 1; /* tombstone keeps probe chains intact */
			ev.type = STP_EV_FREE;
			ev.u.free.addr = a;
			ev.u.free.device = -1;
			stp_writer_event(w, &ev);
		}
	}
	fclose(in);
	free(hk);
	free(nip);
	free(npar);
	return stp_writer_close(w, STP_END_EXIT, 0) ? 1 : 0;
}
