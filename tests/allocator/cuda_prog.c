/*
 * cuda_prog.c - a "CUDA C program" for libstalloc's CUDA path: it makes a
 * device plan from a generated training schedule (written to argv[1]),
 * then, when run again with that plan (argv[2] = "run"), replays the
 * schedule for a few iterations through cudaMalloc/cudaFree (the fake
 * runtime here, the real one on a GPU), and also through PyTorch's
 * pluggable-allocator entry points of libstalloc found with dlsym.  It
 * prints how many calls reached the runtime and checks that blocks live at
 * the same time never overlap (each block's first bytes are stamped and
 * read back: with memset/memcpy on the stand-in's host memory, with
 * cudaMemset/cudaMemcpy on a GPU, where the host cannot touch the blocks).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/types.h>

#include "replay.h"

int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
#ifdef REAL_CUDA
/* on a GPU (tests/gpu/run.sh): the real runtime counts nothing */
static long fake_cuda_calls(void) { return -1; }
int cudaMemset(void *p, int v, size_t n);
int cudaMemcpy(void *dst, const void *src, size_t n, int kind);
#define STAMP(p, v, n) cudaMemset(p, v, n)
#define READ_BACK(dst, p, n) cudaMemcpy(dst, p, n, 2 /* cudaMemcpyDeviceToHost */)
#else
long fake_cuda_calls(void);
#define STAMP(p, v, n) memset(p, v, n)
#define READ_BACK(dst, p, n) memcpy(dst, p, n)
#endif

static stp_reqs R;

static int make(const char *path)
{
	char err[256];
	stp_plan p;
	memset(&p, 0, sizeof p);
	stp_gen_opts g;
	stp_gen_opts_init(&g);
	g.hidden = 256;
	g.seq = 128;
	g.layers = 4;
	g.micro_batches = 4;
	if (stp_gen_megatron(&g, &R, err, sizeof err) < 0)
		return fprintf(stderr, "%s\n", err), 1;
	R.device = 1;
	stp_plan_opts po;
	stp_plan_opts_init(&po);
	po.align = 512;
	if (stp_plan_build(&R, &po, &p, err, sizeof err) < 0 || stp_plan_write(path, &R, &p, err, sizeof err) < 0)
		return fprintf(stderr, "%s\n", err), 1;
	stp_plan_free(&p);
	return 0;
}

typedef void *(*talloc_fn)(ssize_t, int, void *);
typedef void (*tfree_fn)(void *, ssize_t, int, void *);

int main(int argc, char **argv)
{
	stp_reqs_init(&R);
	if (argc < 3)
		return fprintf(stderr, "usage: cuda_prog PLAN make|run\n"), 2;
	if (!strcmp(argv[2], "make"))
		return make(argv[1]);
	stp_plan p;
	char err[256];
	memset(&p, 0, sizeof p);
	if (stp_plan_read(argv[1], &R, &p, err, sizeof err) < 0)
		return fprintf(stderr, "%s\n", err), 1;
	size_t nev, np;
	rp_ev *ev = rp_events(&R, &nev);
	uint32_t *pers = rp_persistent(&R, &np);
	void **ptr = calloc(R.n, sizeof *ptr);
	talloc_fn ta;
	tfree_fn tf;
	*(void **)&ta = dlsym(RTLD_DEFAULT, "stalloc_torch_alloc");
	*(void **)&tf = dlsym(RTLD_DEFAULT, "stalloc_torch_free");
	long bad = 0;
	for (size_t i = 0; i < np; i++)
		if (cudaMalloc(&ptr[pers[i]], R.req[pers[i]].size))
			bad++;
	for (int it = 0; it < 6; it++) {
		int torch = it >= 3 && ta && tf; /* the second half as PyTorch would call */
		for (size_t e = 0; e < nev; e++) {
			uint32_t q = ev[e].req;
			if (ev[e].is_free) {
				if (ptr[q]) {
					if (torch)
						tf(ptr[q], (ssize_t)R.req[q].size, 0, NULL);
					else
						cudaFree(ptr[q]);
				}
				ptr[q] = NULL;
				continue;
			}
			if (torch)
				ptr[q] = ta((ssize_t)R.req[q].size, 0, NULL);
			else if (cudaMalloc(&ptr[q], R.req[q].size))
				ptr[q] = NULL;
			if (!ptr[q]) {
				bad++;
				continue;
			}
			/* stamp the block; a live neighbour overlapping would break it */
			STAMP(ptr[q], (int)(q & 0xff), R.req[q].size < 64 ? R.req[q].size : 64);
		}
		/* the stamps of the blocks still live are intact */
		for (size_t q = 0; q < R.n; q++) {
			if (!ptr[q])
				continue;
			size_t n = R.req[q].size < 64 ? R.req[q].size : 64;
			unsigned char got[64];
			READ_BACK(got, ptr[q], n);
			for (size_t k = 0; k < n; k++)
				if (got[k] != (q & 0xff) && !(R.req[q].flags & STP_REQ_PERSISTENT)) {
					bad++;
					break;
				}
		}
	}
	printf("runtime calls %ld, failures %ld, torch entry points %s\n", fake_cuda_calls(), bad,
	       ta && tf ? "found" : "absent");
	return bad ? 1 : 0;
}
