/*
 * record.c - run a program under libstprof.so: the environment it needs
 * (LD_PRELOAD, STPROF_*), the wait, signal forwarding, and leaving the way
 * the program left (exit code or signal).
 *
 * stprof itself ignores SIGINT and SIGQUIT while the program runs (a terminal
 * sends them to the whole process group, so the program gets its own) and
 * passes SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM on to it; after, they
 * are as they were.  SIGKILL,
 * which cannot be passed on, reaches the program through the parent-death
 * signal: stprof killed, the program is killed too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outname.h"
#include "record.h"
#include "guard.h"
#include "stprof/trace_codec.h"
#include "util.h"

const char record_optstring[] = "+o:m:d:qh";
const struct option record_longopts[] = {
	{"output", required_argument, 0, 'o'},
	{"min-size", required_argument, 0, 'm'},
	{"depth", required_argument, 0, 'd'},
	{"host-depth", required_argument, 0, 'D'},
	{"flush-ms", required_argument, 0, 'F'},
	{"accesses", optional_argument, 0, 'A'},
	{"sample-launches", required_argument, 0, 'S'},
	{"torch-cuda", required_argument, 0, 'C'},
	{"cuda", no_argument, 0, 'G'},
	{"no-cuda", no_argument, 0, 'g'},
	{"full", no_argument, 0, 'U'},
	{"heap-sample", required_argument, 0, 'H'},
	{"skip-exec", required_argument, 0, 'K'},
	{"quiet", no_argument, 0, 'q'},
	{"help", no_argument, 0, 'h'},
	{0, 0, 0, 0},
};
const char record_help[] =
	"  -o, --output FILE    write the trace to FILE (default: PROGRAM.stp in the\n"
	"                       current directory, named after the script for an\n"
	"                       interpreter: python3 train.py (or ./train.py) writes\n"
	"                       train.stp; an earlier trace there is kept as\n"
	"                       FILE.old, a file stprof did not write is left alone:\n"
	"                       PROGRAM.<pid>.stp); child processes and exec'd images\n"
	"                       write FILE.<pid> (and FILE.<pid>.<n>); report, export\n"
	"                       and plan read the last image of the command's process\n"
	"  -m, --min-size SIZE  record only allocations of at least SIZE bytes\n"
	"                       (e.g. 4k, 1M; default 0: every allocation)\n"
	"  -d, --depth N        frames of call path per allocation, 0-256 (default 32;\n"
	"                       0 records no call paths)\n"
	"      --host-depth N   frames of call path per host-heap allocation (malloc,\n"
	"                       new), 0-256 (default: --depth's; 8 in a Python process\n"
	"                       when --depth is not given; tensors keep --depth's)\n"
	"      --flush-ms N     write buffered events at least every N ms, 1-100\n"
	"                       (default 50); bounds what a SIGKILL can lose\n"
	"      --heap-sample SIZE\n"
	"                       host-heap allocations below SIZE are sampled, one per\n"
	"                       SIZE bytes allocated on average, each weighed by what\n"
	"                       it stands for; larger ones always recorded (0: every\n"
	"                       allocation; default 64k in a Python process, 0\n"
	"                       elsewhere; docs/record.md, \"Host heap\")\n"
	"      --full           record every event: no host-heap sampling, no folding\n"
	"                       of steady iterations (docs/record.md, \"Long runs\";\n"
	"                       tensors and device memory are never sampled)\n"
	"      --skip-exec PATTERNS\n"
	"                       programs the program runs that are not recorded:\n"
	"                       comma-separated shell patterns of their names (default:\n"
	"                       compilers, assemblers, linkers and build tools, as\n"
	"                       torch.compile and cpp_extension run: cc, *gcc, *g++,\n"
	"                       cc1*, as, ld, nvcc, ptxas, ninja, make..., and the\n"
	"                       shells and utilities wrapper scripts run: sh, bash,\n"
	"                       env, cat, sed, readlink, git...; '' records every\n"
	"                       one); the recorded command itself always is\n"
	"  -q, --quiet          print nothing of stprof's own\n"
	"      --accesses[=ops|exact]\n"
	"                       record which objects each operation read and wrote,\n"
	"                       for the access patterns of stprof report (early\n"
	"                       allocation, late deallocation, unused, idleness, dead\n"
	"                       write, redundant allocation).  ops (the default):\n"
	"                       PyTorch programs, which tensors each aten op touched\n"
	"                       (a Python call per op).  exact: CUDA programs, which\n"
	"                       device objects each kernel, copy and set touched,\n"
	"                       from patched memory instructions (Compute Sanitizer\n"
	"                       API; kernels run several times slower; docs/accesses.md)\n"
	"      --sample-launches N\n"
	"                       with --accesses=exact: record the accesses of every Nth\n"
	"                       kernel launch only, 1-1000000 (default 1: all); the\n"
	"                       others are recorded without them\n"
	"      --torch-cuda MODE  PyTorch programs: who records CUDA tensors (docs/python.md):\n"
	"                       caching (default): PyTorch's caching allocator runs as\n"
	"                       usual, its blocks and segments are recorded; pluggable:\n"
	"                       stprof is PyTorch's CUDA allocator, one cudaMalloc per\n"
	"                       tensor, each with its Python line (PyTorch 2.x); off\n"
	"      --cuda, --no-cuda  record the program's CUDA memory and work through CUPTI\n"
	"                       (default: on whenever the program initializes CUDA):\n"
	"                       device, managed and pinned allocations, memory pools,\n"
	"                       VMM mappings, kernel launches with the objects their\n"
	"                       arguments point into, copies, sets and syncs, with\n"
	"                       device times (docs/record.md, \"CUDA\")\n"
	"  Python programs also get PyTorch tensor events, Python lines and markers\n"
	"  (iterations, phases, modules) from stprof's shim, with no change to the\n"
	"  script (docs/python.md; STPROF_SHIM=0 turns the shim off)\n";

int record_apply_option(record_opts *o, int c, const char *arg)
{
	uint64_t v;
	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case 'm':
		if (stprof_parse_size(arg, &v)) {
			stprof_err("--min-size: '%s' is not a size (examples: 512, 4k, 1M)", arg);
			return -1;
		}
		o->min_size = v;
		return 0;
	case 'd':
		if (stprof_parse_uint(arg, 256, &v)) {
			stprof_err("--depth: '%s' is not a number from 0 to 256", arg);
			return -1;
		}
		o->depth = (int)v;
		return 0;
	case 'D':
		if (stprof_parse_uint(arg, 256, &v)) {
			stprof_err("--host-depth: '%s' is not a number from 0 to 256", arg);
			return -1;
		}
		o->host_depth = (int)v;
		return 0;
	case 'F':
		if (stprof_parse_uint(arg, 100, &v) || v == 0) {
			stprof_err("--flush-ms: '%s' is not a number from 1 to 100", arg);
			return -1;
		}
		o->flush_ms = (int)v;
		return 0;
	case 'q':
		o->quiet = 1;
		return 0;
	case 'A':
		if (!arg || !strcmp(arg, "ops")) {
			o->accesses = RECORD_ACCESSES_OPS;
		} else if (!strcmp(arg, "exact")) {
#ifndef STPROF_HAVE_SANITIZER
			stprof_err("--accesses=exact: this stprof was built without the Compute Sanitizer API "
			           "(scripts/deps.sh installs it; see docs/accesses.md)");
			return -1;
#endif
			o->accesses = RECORD_ACCESSES_EXACT;
		} else {
			stprof_err("--accesses: '%s' is not ops or exact", arg);
			return -1;
		}
		return 0;
	case 'S':
		if (stprof_parse_uint(arg, 1000000, &v) || v == 0) {
			stprof_err("--sample-launches: '%s' is not a number from 1 to 1000000", arg);
			return -1;
		}
		o->sample_launches = (int)v;
		return 0;
	case 'C':
		if (strcmp(arg, "caching") && strcmp(arg, "pluggable") && strcmp(arg, "off")) {
			stprof_err("--torch-cuda: '%s' is not one of caching, pluggable, off", arg);
			return -1;
		}
		o->torch_cuda = arg;
		return 0;
	case 'G':
#ifndef STPROF_HAVE_CUPTI
		stprof_err("--cuda: this stprof was built without the CUPTI headers: the CUDA backend is not built "
		           "in (rebuild where the CUDA toolkit is, see docs/record.md)");
		return -1;
#else
		o->cuda = 1;
		return 0;
#endif
	case 'g':
		o->cuda = -1;
		return 0;
	case 'U':
		o->full = 1;
		return 0;
	case 'H':
		if (stprof_parse_size(arg, &v) || v > (1ull << 40)) {
			stprof_err("--heap-sample: '%s' is not a size up to 1T (examples: 0, 64k, 1M)", arg);
			return -1;
		}
		o->heap_sample = (int64_t)v;
		return 0;
	case 'K':
		if (strlen(arg) >= 1024) {
			stprof_err("--skip-exec: the patterns are %zu bytes long, at most 1023 are taken", strlen(arg));
			return -1;
		}
		o->skip_exec = arg;
		return 0;
	}
	return 1;
}

static pid_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* Calls fn for FILE and every FILE.<digits>[.<digits>] and
 * FILE.rank<digits>[.<digits>] beside it. */
static int for_each_trace(const char *trace, void (*fn)(const char *, void *), void *arg)
{
	char dirbuf[PATH_MAX], basebuf[PATH_MAX], path[PATH_MAX * 2];
	snprintf(dirbuf, sizeof dirbuf, "%s", trace);
	snprintf(basebuf, sizeof basebuf, "%s", trace);
	const char *dir = dirname(dirbuf), *base = basename(basebuf);
	size_t blen = strlen(base);
	int n = 0;
	if (access(trace, F_OK) == 0) {
		fn(trace, arg);
		n++;
	}
	DIR *d = opendir(dir);
	if (!d)
		return n;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *s = e->d_name;
		if (strncmp(s, base, blen) || s[blen] != '.')
			continue;
		s += blen + 1;
		if (!strncmp(s, "rank", 4)) /* FILE.rank<R>[.<n>]: a rank's process */
			s += 4;
		if (!*s || strspn(s, "0123456789.") != strlen(s))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (stprof_is_trace(path)) {
			fn(path, arg);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void remove_one(const char *path, void *arg)
{
	if (stprof_is_trace(path) || !strcmp(path, (const char *)arg))
		unlink(path);
}

/* The Python shim (collector/python, copied beside libstprof.so as
 * stprof-python/) goes first on PYTHONPATH: every Python program the
 * recording runs loads it, and it loads the user's own sitecustomize.
 * When it is missing and argv runs a Python interpreter, one warning says
 * what the run loses (an installed copy without lib/stprof-python/). */
void record_python_shim(const char *lib, char *const *argv)
{
	char dir[PATH_MAX];
	const char *env = getenv("STPROF_PYTHON_DIR");
	if (env && *env) {
		snprintf(dir, sizeof dir, "%s", env);
	} else {
		snprintf(dir, sizeof dir, "%s", lib);
		char *slash = strrchr(dir, '/');
		if (!slash)
			return;
		snprintf(slash + 1, sizeof dir - (size_t)(slash + 1 - dir), "stprof-python");
	}
	char probe[PATH_MAX + 32];
	snprintf(probe, sizeof probe, "%s/sitecustomize.py", dir);
	if (access(probe, R_OK)) {
		const char *shim = getenv("STPROF_SHIM");
		const char *prog = argv && argv[0] ? strrchr(argv[0], '/') : NULL;
		prog = prog ? prog + 1 : argv && argv[0] ? argv[0] : "";
		if (!strncmp(prog, "python", 6) && !(shim && !strcmp(shim, "0")))
			stprof_err("warning: the Python shim is missing (%s): no iterations, phases, modules or tensor "
			           "space from PyTorch; reinstall stprof or set STPROF_PYTHON_DIR",
			           probe);
		return;
	}
	const char *old = getenv("PYTHONPATH");
	char buf[PATH_MAX * 2];
	snprintf(buf, sizeof buf, "%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
	setenv("PYTHONPATH", buf, 1);
}

int record_run(const record_opts *o, char **argv, char *trace, size_t trace_len, int *started)
{
	*started = 0;
	const char *lib = stprof_collector_path();
	if (!lib) {
		stprof_err("cannot find libstprof.so beside %s (set STPROF_LIB to its path)", stprof_self_dir());
		return -1;
	}
	char want[PATH_MAX];
	if (o->output) {
		snprintf(want, sizeof want, "%s", o->output);
	} else {
		char base[PATH_MAX - 8];
		outname_one_shot(argv, o->sidecars, base, sizeof base);
		snprintf(want, sizeof want, "%s.stp", base);
	}
	/* absolute, so that a program that changes directory still writes it */
	if (want[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof cwd)) {
			stprof_err("cannot read the current directory: %s", strerror(errno));
			return -1;
		}
		snprintf(trace, trace_len, "%s/%s", cwd, want);
	} else {
		snprintf(trace, trace_len, "%s", want);
	}
	struct stat sb;
	/* the collector creates the file with O_EXCL: a dangling link there
	 * would send the trace to FILE.<pid>, a missing directory nowhere */
	if (lstat(trace, &sb) == 0 && S_ISLNK(sb.st_mode) && stat(trace, &sb) != 0) {
		stprof_err("%s: is a symbolic link to a missing file; not following it", trace);
		return -1;
	}
	char dirbuf[PATH_MAX];
	snprintf(dirbuf, sizeof dirbuf, "%s", trace);
	const char *dir = dirname(dirbuf);
	if (access(dir, W_OK | X_OK) != 0) {
		stprof_err("cannot create the trace %s: %s: %s", trace, dir, strerror(errno));
		return -1;
	}
	if (stat(trace, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		stprof_err("%s: exists and is not a regular file", trace);
		return -1;
	}
	if (stat(trace, &sb) == 0 && !stprof_is_trace(trace)) {
		stprof_err("%s: exists and is not an stprof trace; not overwriting it", trace);
		return -1;
	}
	/* an earlier recording is kept as TRACE.old; its child traces go */
	if (outname_keep_old(trace, OUTNAME_TRACE) < 0)
		return -1;
	for_each_trace(trace, remove_one, trace);

	char buf[PATH_MAX * 2];
	const char *old = getenv("LD_PRELOAD");
	snprintf(buf, sizeof buf, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", buf, 1);
	setenv("STPROF_OUTPUT", trace, 1);
	record_python_shim(lib, argv);
	if (o->accesses == RECORD_ACCESSES_OPS)
		setenv("STPROF_ACCESSES", "1", 1);
	if (o->torch_cuda)
		setenv("STPROF_TORCH_CUDA", o->torch_cuda, 1);
	if (o->quiet)
		setenv("STPROF_QUIET", "1", 1);
	/* CUDA: the driver loads the collector at cuInit and calls its
	 * InitializeInjection (unless another tool's injection is set) */
	if (o->cuda < 0) {
		setenv("STPROF_CUDA", "0", 1);
	} else {
#ifdef STPROF_HAVE_CUPTI
		setenv("STPROF_CUDA", "1", 1);
		const char *inj = getenv("CUDA_INJECTION64_PATH");
		if (!inj || !*inj)
			setenv("CUDA_INJECTION64_PATH", lib, 1);
#endif
	}
	if (o->accesses == RECORD_ACCESSES_EXACT) {
		setenv("STPROF_ACCESSES", "exact", 1);
		/* modules load lazily (CUDA's default): the API patches each
		 * function when it loads, so only the kernels that run are
		 * patched (PyTorch's libraries hold tens of thousands);
		 * STPROF_SANITIZER_EAGER=1 loads and patches every module with
		 * its context, as the first versions did */
		const char *eager = getenv("STPROF_SANITIZER_EAGER");
		if (eager && *eager && strcmp(eager, "0"))
			setenv("CUDA_MODULE_LOADING", "EAGER", 0);
		if (o->sample_launches > 0) {
			snprintf(buf, sizeof buf, "%d", o->sample_launches);
			setenv("STPROF_SAMPLE_LAUNCHES", buf, 1);
		}
	}
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)o->min_size);
	setenv("STPROF_MIN_SIZE", buf, 1);
	if (o->depth >= 0) {
		snprintf(buf, sizeof buf, "%d", o->depth);
		setenv("STPROF_DEPTH", buf, 1);
	}
	if (o->host_depth >= 0) {
		snprintf(buf, sizeof buf, "%d", o->host_depth);
		setenv("STPROF_HOST_DEPTH", buf, 1);
	}
	if (o->flush_ms > 0) {
		snprintf(buf, sizeof buf, "%d", o->flush_ms);
		setenv("STPROF_FLUSH_MS", buf, 1);
	}
	if (o->full)
		setenv("STPROF_FULL", "1", 1);
	if (o->heap_sample >= 0) {
		snprintf(buf, sizeof buf, "%lld", (long long)o->heap_sample);
		setenv("STPROF_HEAP_SAMPLE", buf, 1);
	}
	if (o->skip_exec)
		setenv("STPROF_SKIP_EXEC", o->skip_exec, 1);
	/* the program's first image claims the recorded command's pid
	 * (collector/core/skipexec.c), not an image that ran this stprof */
	unsetenv("STPROF_COMMAND_PID");

	fflush(NULL);
	/* a pipe closed on exec tells us whether execvp worked */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC)) {
		stprof_err("pipe: %s", strerror(errno));
		return -1;
	}
	pid_t self = getpid();
	child_pid = fork();
	if (child_pid < 0) {
		stprof_err("fork: %s", strerror(errno));
		return -1;
	}
	if (child_pid == 0) {
		close(pfd[0]);
		/* stprof killed (SIGKILL, which it cannot pass on): the program
		 * goes too, not on as an orphan nobody waits for.  Cleared in the
		 * program's own children; a parent already gone is seen here. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self)
			_exit(127);
		execvp(argv[0], argv);
		int e = errno;
		if (write(pfd[1], &e, sizeof e) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(pfd[1]);
	unsetenv("LD_PRELOAD");
	struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward};
	sigemptyset(&ign.sa_mask);
	sigemptyset(&fwd.sa_mask);
	/* while the program runs; then as they were (the one-shot mode's
	 * analysis can be interrupted, and removes what it half wrote) */
	static const int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM};
	struct sigaction was[sizeof sigs / sizeof sigs[0]];
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], i < 2 ? &ign : &fwd, &was[i]);

	int exec_errno = 0;
	ssize_t got;
	while ((got = read(pfd[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	int status;
	int waited;
	while ((waited = waitpid(child_pid, &status, 0)) < 0 && errno == EINTR)
		;
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &was[i], NULL);
	if (waited < 0) {
		stprof_err("waitpid: %s", strerror(errno));
		return -1;
	}
	if (got == sizeof exec_errno) {
		stprof_err("%s: %s", argv[0], strerror(exec_errno));
		unlink(trace);
		return status;
	}
	*started = 1;
	return status;
}

int record_program(const record_opts *o, char **argv, char *trace, size_t trace_len)
{
	int started;
	int status = record_run(o, argv, trace, trace_len, &started);
	if (status >= 0 && !started)
		exit_like(status);
	return status;
}

struct summary {
	int n, ranks;
	char first_rank[PATH_MAX];
	long long bytes;
	char first_child[PATH_MAX];
	const char *main;
};

static void sum_one(const char *path, void *arg)
{
	struct summary *s = arg;
	struct stat sb;
	if (stat(path, &sb) == 0)
		s->bytes += sb.st_size;
	size_t ml = strlen(s->main);
	if (!strncmp(path, s->main, ml) && !strncmp(path + ml, ".rank", 5)) {
		if (!s->ranks++)
			snprintf(s->first_rank, sizeof s->first_rank, "%s", path);
	} else if (strcmp(path, s->main) && !s->first_child[0]) {
		snprintf(s->first_child, sizeof s->first_child, "%s", path);
	}
	s->n++;
}

int record_summary(const char *trace, const char *program, int status, int quiet)
{
	struct summary s = {.main = trace};
	for_each_trace(trace, sum_one, &s);
	if (quiet)
		return s.n;
	char b[64];
	if (access(trace, F_OK) != 0 && s.n == 0) {
		stprof_err("no trace was written for %s: it did not load libstprof.so (a static or "
		           "setuid program cannot be recorded; see docs/record.md)", program);
		return s.n;
	}
	if (access(trace, F_OK) != 0) /* the program's first image did not write FILE itself */
		stprof_err("%s was not created; trace written to %s (%s)", trace, s.first_child,
		           stprof_fmt_bytes((uint64_t)s.bytes, b, sizeof b));
	else
		stprof_err("trace written to %s (%s)", trace, stprof_fmt_bytes((uint64_t)s.bytes, b, sizeof b));
	/* the program exited, yet its trace has no END record: the writing was
	 * stopped (a file-size limit the program set, a full disk) */
	if (WIFEXITED(status) && access(trace, F_OK) == 0 && !stp_trace_has_end(trace))
		stprof_err("%s has no end record though the program exited (status %d): the recording stopped early "
		           "(a file-size limit, RLIMIT_FSIZE, a full disk, or an exit stprof did not see); what was written is read",
		           trace, WEXITSTATUS(status));
	if (s.ranks)
		stprof_err("%d trace%s of ranks' processes (RANK set, or init_process_group's rank), e.g. %s; `stprof report %s` compares them",
		           s.ranks, s.ranks > 1 ? "s" : "", s.first_rank, trace);
	int others = s.n - 1 - s.ranks + (access(trace, F_OK) != 0);
	if (others > 0)
		stprof_err("%d more trace%s for child processes or exec'd images, e.g. %s", others,
		           others > 1 ? "s" : "", s.first_child);
	return s.n;
}

void exit_like(int status)
{
	if (status < 0)
		exit(127);
	if (WIFEXITED(status))
		exit(WEXITSTATUS(status));
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fflush(NULL);
		struct rlimit nocore = {0, 0};
		setrlimit(RLIMIT_CORE, &nocore); /* the program already dumped its own */
		signal(sig, SIG_DFL);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
		raise(sig);
		exit(128 + sig);
	}
	exit(1);
}
