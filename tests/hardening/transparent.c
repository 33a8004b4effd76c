/*
 * transparent.c - programs that behave in ways a profiler must not disturb,
 * one per mode, for test_transparency2.sh: transparent MODE [ARGS].  Each
 * prints what it saw and exits with a status the test compares with the
 * same program run natively.
 */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(64 + (size_t)(i % 512));
		sink = p;
		free(p);
	}
}

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *worker(void *arg)
{
	churn(1000);
	msleep((int)(long)arg);
	churn(1000);
	return NULL;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static volatile sig_atomic_t got;
static void on_sig(int sig) { got = sig; }

/* Allocates at the bottom of a call path `depth` frames deep. */
__attribute__((noinline)) static void *deep_alloc(int depth, size_t n)
{
	if (depth > 0) {
		void *p = deep_alloc(depth - 1, n);
		__asm__ volatile("" ::: "memory");
		return p;
	}
	return malloc(n);
}

static pthread_barrier_t live_in, live_out;

static void *live_worker(void *arg)
{
	for (int i = 0; i < 24; i++)
		free(deep_alloc(i, 64 + (size_t)i));
	pthread_barrier_wait(&live_in);
	pthread_barrier_wait(&live_out);
	return arg;
}

/* Recurses without end (the depth bound is never reached): a stack overflow. */
static volatile int limitless = 1 << 30;
__attribute__((noinline)) static int recurse(int n)
{
	volatile char frame[1024];
	memset((char *)frame, n & 0xff, sizeof frame);
	if (n >= limitless)
		return n;
	return recurse(n + 1) + frame[n & 1023];
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "pthread-exit")) { /* case 1: main leaves by pthread_exit */
		printf("hi\n");
		pthread_exit(0);
	}
	if (!strcmp(m, "pthread-exit-threads")) { /* ... after it had threads */
		pthread_t t;
		pthread_create(&t, NULL, worker, (void *)0L);
		pthread_join(t, NULL);
		pthread_create(&t, NULL, worker, (void *)200L); /* outlives main */
		pthread_detach(t);
		churn(1000);
		msleep(120); /* the flusher runs by now */
		printf("hi\n");
		pthread_exit(0);
	}
	if (!strcmp(m, "threads")) { /* case 3: create and join N threads */
		int n = argc > 2 ? atoi(argv[2]) : 1000;
		long before = 0;
		for (int i = 0; i < n; i++) {
			pthread_t t;
			if (pthread_create(&t, NULL, worker, (void *)0L))
				return 2;
			pthread_join(t, NULL);
			if (i == n / 10)
				before = rss_kb();
		}
		printf("rss-growth-kb %ld\n", rss_kb() - before);
		return 0;
	}
	if (!strcmp(m, "threads-live")) { /* issue 26: N threads alive at once */
		int n = argc > 2 ? atoi(argv[2]) : 1000;
		pthread_t *t = calloc((size_t)n, sizeof *t);
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 256 << 10);
		pthread_barrier_init(&live_in, NULL, (unsigned)n + 1);
		pthread_barrier_init(&live_out, NULL, (unsigned)n + 1);
		long before = rss_kb();
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], &at, live_worker, NULL))
				return 2;
		pthread_barrier_wait(&live_in);
		long grown = rss_kb() - before;
		pthread_barrier_wait(&live_out);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		printf("rss-growth-kb %ld\n", grown);
		return 0;
	}
	if (!strcmp(m, "dl-loop")) { /* issue 26: dlopen and dlclose LIB N times */
		int n = argc > 3 ? atoi(argv[3]) : 2000;
		long before = 0;
		for (int i = 0; i < n; i++) {
			void *h = dlopen(argv[2], RTLD_NOW);
			if (!h) {
				printf("dlopen: %s\n", dlerror());
				return 2;
			}
			churn(8);
			dlclose(h);
			if (i == n / 10)
				before = rss_kb();
		}
		printf("rss-growth-kb %ld\n", rss_kb() - before);
		return 0;
	}
	if (!strcmp(m, "overflow")) { /* issue 26: dies of a stack overflow */
		churn(100);
		printf("deep\n");
		fflush(stdout);
		return recurse(0);
	}
	if (!strcmp(m, "altstack")) { /* what sigaltstack says, before and after one of its own */
		churn(10);
		stack_t cur;
		sigaltstack(NULL, &cur);
		printf("disabled %d\n", !!(cur.ss_flags & SS_DISABLE));
		static char mine[1 << 16];
		stack_t ss = {.ss_sp = mine, .ss_size = sizeof mine};
		int rc = sigaltstack(&ss, NULL);
		sigaltstack(NULL, &cur);
		printf("set %d: mine %d\n", rc, cur.ss_sp == mine && !(cur.ss_flags & SS_DISABLE));
		stack_t off = {.ss_flags = SS_DISABLE};
		rc = sigaltstack(&off, NULL);
		sigaltstack(NULL, &cur);
		printf("off %d: disabled %d\n", rc, !!(cur.ss_flags & SS_DISABLE));
		return 0;
	}
	if (!strcmp(m, "fsize")) { /* issue 26: lowers RLIMIT_FSIZE (argv[2]: and the hard limit), as a log rotator might */
		signal(SIGXFSZ, SIG_IGN); /* as Python does */
		struct rlimit rl = {4096, argc > 2 ? (rlim_t)atol(argv[2]) : RLIM_INFINITY};
		if (setrlimit(RLIMIT_FSIZE, &rl))
			return 2;
		churn(100000);
		getrlimit(RLIMIT_FSIZE, &rl);
		printf("soft %llu\n", (unsigned long long)rl.rlim_cur);
		return 0;
	}
	if (!strcmp(m, "read-stdin")) { /* case 4: stdin may be closed */
		char c;
		ssize_t r = read(0, &c, 1);
		printf("read %zd %s\n", r, r < 0 ? strerror(errno) : "");
		return 0;
	}
	if (!strcmp(m, "open-until-full")) { /* case 4: RLIMIT_NOFILE is the program's */
		churn(1000);
		int n = 0;
		while (open("/dev/null", O_RDONLY) >= 0)
			n++;
		printf("opened %d then %s\n", n, strerror(errno));
		return 0;
	}
	if (!strcmp(m, "first-fd")) { /* the program's first open gets 3 */
		churn(1000);
		int fd = open("/dev/null", O_RDONLY);
		printf("fd %d\n", fd);
		return 0;
	}
	if (!strcmp(m, "close-all")) { /* closes every fd, then reopens 0, 1, 2 */
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
		int a = open("/dev/null", O_RDONLY);
		churn(5000);
		return a == 0 ? 0 : 10 + a;
	}
	if (!strcmp(m, "daemon")) { /* case 6: argv[2] is a file the daemon writes */
		churn(1000);
		if (daemon(1, 1))
			return 3;
		churn(1000);
		FILE *f = fopen(argv[2], "w");
		if (f) {
			fprintf(f, "daemon %d\n", (int)getpid());
			fclose(f);
		}
		return 0;
	}
	if (!strcmp(m, "dl-quick")) { /* case 7: load, use and unload at once */
		void *h = dlopen(argv[2], RTLD_NOW);
		if (!h) {
			printf("dlopen: %s\n", dlerror());
			return 2;
		}
		void *(*fn)(size_t);
		void *s = dlsym(h, "quicklib_alloc");
		memcpy(&fn, &s, sizeof fn);
		void *p = fn(4321);
		free(p);
		dlclose(h);
		printf("done\n");
		return 0;
	}
	if (!strcmp(m, "block-all")) { /* every signal blocked */
		sigset_t all;
		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		pthread_t t;
		pthread_create(&t, NULL, worker, (void *)100L);
		pthread_join(t, NULL);
		raise(SIGUSR1);
		sigset_t pend;
		sigpending(&pend);
		printf("pending USR1 %d\n", sigismember(&pend, SIGUSR1));
		return 5;
	}
	if (!strcmp(m, "clone")) { /* a raw clone(2) child, no atfork handlers */
		churn(1000);
		long pid = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
		if (pid == 0) {
			churn(1000);
			syscall(SYS_exit_group, 7);
		}
		int st;
		waitpid((pid_t)pid, &st, 0);
		churn(1000);
		printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return 0;
	}
	if (!strcmp(m, "signals")) { /* signals while the flusher runs */
		struct sigaction sa = {.sa_handler = on_sig};
		sigaction(SIGUSR1, &sa, NULL);
		pthread_t t;
		pthread_create(&t, NULL, worker, (void *)10L);
		pthread_join(t, NULL);
		msleep(100);
		int n = 0;
		for (int i = 0; i < 200; i++) {
			got = 0;
			kill(getpid(), SIGUSR1);
			churn(100);
			n += got == SIGUSR1;
		}
		printf("handled %d\n", n);
		printf("ready\n");
		fflush(stdout);
		for (;;) { /* until SIGTERM (default action) */
			churn(100);
			msleep(5);
		}
	}
	if (!strcmp(m, "threads-now")) { /* how many threads the process has */
		churn(1000);
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "Threads:", 8))
				fputs(line, stdout);
		if (f)
			fclose(f);
		return 0;
	}
	fprintf(stderr, "usage: transparent MODE [ARGS]\n");
	return 2;
}
