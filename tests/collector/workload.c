/*
 * workload.c - programs for the collector tests, one mode per situation:
 *   basic            every interposed function once, with sizes 1001..1010,
 *                    markers, and a report on stdout
 *   storm T N        T threads x N malloc/free pairs (sizes 3000+tid), 16 live
 *   fork             child allocates (size 2222), then execs `workload basic`;
 *                    parent allocates (size 3333) and waits
 *   spin             prints "ready", then allocates forever
 *   exit N | _exit N | segv | abort | raise SIG
 *   sigquery         prints what sigaction() reports for SIGINT/SIGTERM/SIGSEGV
 *   vforkint         Python's Ctrl-C after a subprocess: a SIGINT handler, a
 *                    vfork child that resets it before exec (as
 *                    _posixsubprocess does), then SIG_DFL and raise(SIGINT)
 *   closefds FILE    closes every fd >= 3, writes FILE, allocates meanwhile
 *   reallocfail      realloc to an impossible size: NULL, old block still valid
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stprof/stprof.h"

/* Every allocation of interest goes through here: the compiler may not
 * remove a malloc/free pair it cannot see, and call paths start here. */

#if defined(__clang__)
#define NO_IPA __attribute__((noinline))
#else
#define NO_IPA __attribute__((noipa))
#endif
NO_IPA void *site_malloc(size_t n);
void *site_malloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::: "memory"); /* keeps the call out of tail position */
	return p;
}

static int basic(void)
{
	void *p[12];
	stprof_iteration_begin(0);
	stprof_phase_begin("forward", 0);
	p[0] = site_malloc(1001);
	p[1] = calloc(1, 1002);
	p[2] = realloc(NULL, 1003);
	p[2] = realloc(p[2], 1004);
	if (posix_memalign(&p[3], 64, 1005))
		return 1;
	p[4] = aligned_alloc(64, 1024 + 6 * 0); /* 1024: aligned_alloc wants a multiple */
	p[5] = memalign(64, 1007);
	p[6] = valloc(1008);
	p[7] = pvalloc(1009);
	p[8] = reallocarray(NULL, 1, 1010);
	stprof_phase_end("forward", 0);
	stprof_module_enter("layers.0");
	stprof_module_exit("layers.0");
	stprof_annotate("answer", 42);
	stprof_iteration_end(0);
	for (int i = 0; i < 9; i++)
		free(p[i]);
	printf("basic: marker api %s\n", stprof_active() ? "active" : "inactive");
	return 0;
}

struct storm_arg { int tid; long n; };

static void *storm_thread(void *a)
{
	struct storm_arg *s = a;
	void *live[16] = {0};
	for (long i = 0; i < s->n; i++) {
		int k = (int)(i % 16);
		free(live[k]);
		live[k] = site_malloc(3000 + (size_t)s->tid);
	}
	for (int k = 0; k < 16; k++)
		free(live[k]);
	return NULL;
}

static int storm(int t, long n)
{
	pthread_t th[64];
	struct storm_arg args[64];
	if (t > 64)
		t = 64;
	for (int i = 0; i < t; i++) {
		args[i] = (struct storm_arg){i, n};
		pthread_create(&th[i], NULL, storm_thread, &args[i]);
	}
	for (int i = 0; i < t; i++)
		pthread_join(th[i], NULL);
	printf("storm: %d threads x %ld pairs\n", t, n);
	return 0;
}

static int do_fork(const char *self)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		void *c = site_malloc(2222);
		free(c);
		execl(self, self, "basic", (char *)NULL);
		_exit(127);
	}
	void *p = site_malloc(3333);
	int st;
	waitpid(pid, &st, 0);
	free(p);
	printf("fork: child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

static int spin(void)
{
	printf("ready\n");
	fflush(stdout);
	for (uint64_t i = 0; i < UINT64_MAX; i++) {
		void *p = site_malloc(100 + i % 900);
		free(p);
		if (i % 1000 == 0)
			usleep(100);
	}
	return 0;
}

static const char *disp(int sig)
{
	struct sigaction sa;
	sigaction(sig, NULL, &sa);
	return sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignore" : "handler";
}

static volatile sig_atomic_t got;
static void on_sig(int s) { got = s; }

static int sigquery(void)
{
	printf("SIGINT %s SIGTERM %s SIGSEGV %s\n", disp(SIGINT), disp(SIGTERM), disp(SIGSEGV));
	signal(SIGTERM, on_sig);
	printf("after signal(): SIGTERM %s\n", disp(SIGTERM));
	raise(SIGTERM);
	printf("handled %d\n", (int)got);
	signal(SIGTERM, SIG_DFL);
	printf("restored: SIGTERM %s\n", disp(SIGTERM));
	return 0;
}

/* A vfork child shares our memory until it execs; what it asks of
 * sigaction() must not change what the parent's later calls do. */
static int vforkint(void)
{
	signal(SIGINT, on_sig);
	pid_t pid = vfork();
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		_exit(0);
	}
	if (pid < 0)
		return 2;
	waitpid(pid, NULL, 0);
	signal(SIGINT, SIG_DFL);
	raise(SIGINT);
	printf("still alive: handler saw %d\n", (int)got);
	return 1;
}

static int closefds(const char *path)
{
	for (int fd = 3; fd < 4096; fd++)
		close(fd);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 2000; i++) {
		char *p = malloc(64 + i);
		snprintf(p, 64, "line %d\n", i);
		if (write(fd, p, strlen(p)) < 0)
			return 1;
		free(p);
	}
	close(fd);
	printf("closefds: done\n");
	return 0;
}

/* realloc failing leaves the old block valid: reading it is the point */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#pragma GCC diagnostic ignored "-Wuse-after-free"
static int reallocfail(void)
{
	char *p = site_malloc(4000);
	strcpy(p, "still here");
	char *q = realloc(p, (size_t)1 << 62);
	printf("realloc %s, old block: %s\n", q ? "succeeded" : "failed", p);
	free(q ? q : p);
	return 0;
}
#pragma GCC diagnostic pop

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: workload MODE [ARGS]\n");
		return 2;
	}
	const char *m = argv[1];
	if (!strcmp(m, "basic"))
		return basic();
	if (!strcmp(m, "storm") && argc == 4)
		return storm(atoi(argv[2]), atol(argv[3]));
	if (!strcmp(m, "fork"))
		return do_fork(argv[0]);
	if (!strcmp(m, "spin"))
		return spin();
	if (!strcmp(m, "exit") && argc == 3) {
		printf("exiting %d\n", atoi(argv[2]));
		exit(atoi(argv[2]));
	}
	if (!strcmp(m, "_exit") && argc == 3) {
		printf("_exiting %d\n", atoi(argv[2]));
		fflush(stdout);
		_exit(atoi(argv[2]));
	}
	if (!strcmp(m, "segv")) {
		fprintf(stderr, "about to crash\n");
		/* a write to a read-only page: a hardware fault, which no
		 * sanitizer intercepts (UBSan would catch a NULL load) */
		volatile char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ro[0] = 1;
		return 0;
	}
	if (!strcmp(m, "abort")) {
		fprintf(stderr, "aborting\n");
		abort();
	}
	if (!strcmp(m, "raise") && argc == 3)
		return raise(atoi(argv[2]));
	if (!strcmp(m, "sigquery"))
		return sigquery();
	if (!strcmp(m, "vforkint"))
		return vforkint();
	if (!strcmp(m, "closefds") && argc == 3)
		return closefds(argv[2]);
	if (!strcmp(m, "reallocfail"))
		return reallocfail();
	fprintf(stderr, "workload: unknown mode %s\n", m);
	return 2;
}
