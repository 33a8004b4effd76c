/*
 * lt_stress.c - a program that uses the whole malloc family the way a
 * multi-threaded server does, checking every block's contents, alignment
 * and usable size: run natively and under libstalloc's lifetime heap
 * (test_lifetimes_alloc.sh), it must print the same and exit 0.
 *
 *   lt_stress THREADS OPS [fork]
 *
 * Each thread keeps 2,000 slots; each operation frees a slot (after
 * checking its pattern) and refills it through malloc, calloc, realloc
 * (growing and shrinking), posix_memalign, aligned_alloc, memalign or
 * valloc, with sizes from 1 byte to 3 MiB (mostly small).  Some blocks are
 * handed to the next thread to free (servers free on other threads).
 * With `fork`, the main thread forks midway; the child allocates, checks
 * and exits 0, and the parent checks its status.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLOTS 2000
#define SHARED 256

typedef struct blk { unsigned char *p; size_t n; unsigned char tag; } blk;

static long ops;
static int nthreads;
static blk handoff[64][SHARED];
static pthread_mutex_t hlock[64];
static int failed;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(blk *b) { memset(b->p, b->tag, b->n); }

static void check(const blk *b, const char *what)
{
	for (size_t i = 0; i < b->n; i += 1 + i / 64)
		if (b->p[i] != b->tag) {
			fprintf(stderr, "lt_stress: %s block %p of %zu bytes damaged at %zu\n", what, (void *)b->p, b->n, i);
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
			return;
		}
	if (malloc_usable_size(b->p) < b->n) {
		fprintf(stderr, "lt_stress: usable size %zu < %zu\n", malloc_usable_size(b->p), b->n);
		__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	}
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = rnd(s) % 1000;
	if (r < 700)
		return 1 + rnd(s) % 256;
	if (r < 950)
		return 1 + rnd(s) % 16384;
	if (r < 995)
		return 1 + rnd(s) % (512 << 10);
	return 1 + rnd(s) % (3 << 20);
}

static void make(blk *b, uint64_t *s)
{
	size_t n = pick_size(s), al;
	void *p = NULL;
	switch (rnd(s) % 8) {
	case 0:
		p = calloc(1, n);
		for (size_t i = 0; p && i < n; i += 97)
			if (((unsigned char *)p)[i]) {
				fprintf(stderr, "lt_stress: calloc block not zero\n");
				failed = 1;
			}
		break;
	case 1:
		al = (size_t)8 << (rnd(s) % 10); /* 8 .. 4096 */
		if (posix_memalign(&p, al, n))
			p = NULL;
		if (p && (uintptr_t)p % al) {
			fprintf(stderr, "lt_stress: posix_memalign(%zu) gave %p\n", al, p);
			failed = 1;
		}
		break;
	case 2:
		al = (size_t)16 << (rnd(s) % 8);
		p = aligned_alloc(al, (n + al - 1) / al * al);
		if (p && (uintptr_t)p % al) {
			fprintf(stderr, "lt_stress: aligned_alloc(%zu) gave %p\n", al, p);
			failed = 1;
		}
		break;
	case 3:
		al = (size_t)32 << (rnd(s) % 12); /* up to 64 KiB */
		p = memalign(al, n);
		if (p && (uintptr_t)p % al) {
			fprintf(stderr, "lt_stress: memalign(%zu) gave %p\n", al, p);
			failed = 1;
		}
		break;
	case 4:
		p = valloc(n);
		if (p && (uintptr_t)p % 4096) {
			fprintf(stderr, "lt_stress: valloc gave %p\n", p);
			failed = 1;
		}
		break;
	default: p = malloc(n); break;
	}
	if (!p) {
		fprintf(stderr, "lt_stress: allocation of %zu failed\n", n);
		failed = 1;
		exit(1);
	}
	b->p = p;
	b->n = n;
	b->tag = (unsigned char)(1 + rnd(s) % 250);
	fill(b);
}

static void grow(blk *b, uint64_t *s)
{
	size_t n = rnd(s) % 2 ? b->n * 2 + 1 : b->n / 2 + 1;
	unsigned char *q = realloc(b->p, n);
	if (!q) {
		fprintf(stderr, "lt_stress: realloc failed\n");
		exit(1);
	}
	size_t keep = n < b->n ? n : b->n;
	for (size_t i = 0; i < keep; i += 1 + i / 64)
		if (q[i] != b->tag) {
			fprintf(stderr, "lt_stress: realloc lost the contents\n");
			failed = 1;
			break;
		}
	b->p = q;
	b->n = n;
	fill(b);
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(me + 1);
	blk *slots = calloc(SLOTS, sizeof *slots);
	for (long i = 0; i < ops; i++) {
		blk *b = &slots[rnd(&s) % SLOTS];
		if (b->p) {
			check(b, "own");
			if (rnd(&s) % 4 == 0) {
				grow(b, &s);
				continue;
			}
			int to = (me + 1) % nthreads;
			if (nthreads > 1 && rnd(&s) % 8 == 0) {
				/* another thread frees it */
				pthread_mutex_lock(&hlock[to]);
				blk *h = &handoff[to][rnd(&s) % SHARED];
				if (h->p) {
					check(h, "handed-off");
					free(h->p);
				}
				*h = *b;
				pthread_mutex_unlock(&hlock[to]);
			} else {
				free(b->p);
			}
			b->p = NULL;
		}
		make(b, &s);
		pthread_mutex_lock(&hlock[me]);
		blk *h = &handoff[me][rnd(&s) % SHARED];
		if (h->p) {
			check(h, "received");
			free(h->p);
			h->p = NULL;
		}
		pthread_mutex_unlock(&hlock[me]);
	}
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].p) {
			check(&slots[i], "final");
			free(slots[i].p);
		}
	free(slots);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: lt_stress THREADS OPS [fork]\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	ops = atol(argv[2]);
	if (nthreads < 1 || nthreads > 64)
		return 2;
	for (int i = 0; i < 64; i++)
		pthread_mutex_init(&hlock[i], NULL);
	pthread_t t[64];
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	int status = 0;
	if (argc > 3 && !strcmp(argv[3], "fork")) {
		usleep(20000);
		pid_t pid = fork();
		if (pid == 0) {
			/* the child: the heap must work (its locks were released) */
			uint64_t s = 42;
			blk b[100];
			for (int i = 0; i < 100; i++)
				make(&b[i], &s);
			for (int i = 0; i < 100; i++) {
				check(&b[i], "child");
				free(b[i].p);
			}
			_exit(failed ? 1 : 0);
		}
		waitpid(pid, &status, 0);
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < nthreads; i++)
		for (int j = 0; j < SHARED; j++)
			if (handoff[i][j].p) {
				check(&handoff[i][j], "left");
				free(handoff[i][j].p);
			}
	if (status) {
		fprintf(stderr, "lt_stress: the forked child failed (status %d)\n", status);
		return 1;
	}
	printf("lt_stress: %d threads x %ld operations: %s\n", nthreads, ops, failed ? "FAILED" : "ok");
	return failed;
}
