/*
 * fragment.c - a workload that fragments a heap on purpose (Llama §9.6's
 * microbenchmark, in the shape of a server's peak): each round fills the
 * heap with request temporaries, one object in ten of them kept for good
 * (session state allocated at the peak), frees the temporaries, then
 * refills with objects of other sizes and frees those.  A size-class
 * allocator leaves every page of the fill pinned by its kept objects; the
 * refill's sizes cannot use their free slots.
 *
 *   fragment ROUNDS OBJECTS
 *
 * Prints, per round and at the end, the process's RSS over the live bytes
 * the program holds (its own count of requested bytes).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t seed = 88172645463325252ull;
static uint64_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static long rss_kb(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* three sites, so that their calling contexts differ */
__attribute__((noinline)) static char *make_temp(size_t n) { char *p = malloc(n); memset(p, 1, n); return p; }
__attribute__((noinline)) static char *make_kept(size_t n) { char *p = malloc(n); memset(p, 2, n); return p; }
__attribute__((noinline)) static char *make_other(size_t n) { char *p = malloc(n); memset(p, 3, n); return p; }

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 4;
	long n = argc > 2 ? atol(argv[2]) : 400000;
	char **tmp = calloc((size_t)n, sizeof *tmp), **other = calloc((size_t)n, sizeof *other);
	char **kept = calloc((size_t)(n / 10 + 1) * (size_t)rounds, sizeof *kept);
	size_t nkept = 0, live = 0, peak_rss = 0;
	for (int r = 0; r < rounds; r++) {
		for (long i = 0; i < n; i++) {
			size_t s = 32 + rnd() % 480;
			tmp[i] = make_temp(s);
			if (i % 10 == 0) {
				size_t k = 32 + rnd() % 480;
				kept[nkept++] = make_kept(k);
				live += k;
			}
		}
		long fill = rss_kb();
		for (long i = 0; i < n; i++)
			free(tmp[i]);
		long o = n / 4;
		size_t olive = 0;
		for (long i = 0; i < o; i++) {
			size_t s = 1024 + rnd() % 3072;
			other[i] = make_other(s);
			olive += s;
		}
		long refill = rss_kb();
		for (long i = 0; i < o; i++)
			free(other[i]);
		usleep(1500000); /* idle: allocators that give memory back on a timer do */
		long after = rss_kb();
		if ((size_t)refill > peak_rss)
			peak_rss = (size_t)refill;
		printf("round %d: RSS %.1f MiB filled, %.1f MiB refilled (%.1f MiB live), %.1f MiB after (%.1f MiB kept "
		       "live): %.2fx\n",
		       r + 1, fill / 1024.0, refill / 1024.0, (double)(live + olive) / 1048576.0, after / 1024.0,
		       (double)live / 1048576.0, after * 1024.0 / (double)live);
	}
	printf("end: kept %.1f MiB live, RSS %.1f MiB (%.2fx), peak RSS %.1f MiB\n", (double)live / 1048576.0,
	       rss_kb() / 1024.0, rss_kb() * 1024.0 / (double)live, peak_rss / 1024.0);
	for (size_t i = 0; i < nkept; i++)
		free(kept[i]);
	return 0;
}
