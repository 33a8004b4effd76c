/*
 * process.c - what a trace says of its process image first, and the lazy
 * opening of the trace in a fork child.
 *
 * A trace starts with PROCESS (seq 0: pid, parent, rank, command line,
 * executable, host, the clocks at start), then the loaded modules, the
 * thread's THREAD, and the annotations of options a reader must know of.
 * The collector's start (lifecycle.c) writes them at once; a fork child
 * opens <trace>.<pid> at its first event (stc_ensure_output, which every
 * event's path calls: one load when the trace is open).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sample.h"
#include "stprof/programkey.h"
#include "tbuf.h"

static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;

static int32_t env_int(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return -1;
	char *end;
	long x = strtol(v, &end, 10);
	return *end || x < 0 || x > INT32_MAX ? -1 : (int32_t)x;
}

void stc_announce_process(void)
{
	char buf[8192];
	stp_event ev = {.type = STP_EV_PROCESS};
	stp_process_info *p = &ev.u.process;
	p->pid = (uint32_t)getpid();
	p->ppid = (uint32_t)getppid();
	p->rank = env_int("RANK");
	p->local_rank = env_int("LOCAL_RANK");
	p->world_size = env_int("WORLD_SIZE");
	size_t n = stp_read_cmdline(buf, sizeof buf);
	p->cmdline = stc_intern_string(buf, n);
	ssize_t e = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (e > 0)
		p->exe = stc_intern_string(buf, (size_t)e);
	if (gethostname(buf, 256) == 0) {
		buf[255] = 0;
		p->hostname = stc_intern_string(buf, strlen(buf));
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	p->start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	p->start_monotonic_ns = stc_now();
	stc_emit_def_event(&ev);
	stc_modules_scan();
}

/* An annotation (a MARKER event, as stprof_mark_v1 records it) on this
 * thread, the output open: straight into its buffer, as marker.c's entry
 * point sits above this file. */
static void annotate(const char *name, int64_t value)
{
	int was = t_busy;
	t_busy = 1;
	stp_event ev = {.type = STP_EV_MARKER};
	ev.u.marker.kind = STP_MARK_ANNOTATION;
	ev.u.marker.name = stc_intern_string(name, strlen(name));
	ev.u.marker.value = value;
	stc_tbuf *b = stc_tbuf_self();
	if (b && stc_out_ready() && stc_tbuf_put(b, &ev, 0, 0, NULL) &&
	    !atomic_load_explicit(&g_flusher_on, memory_order_relaxed))
		stc_flusher_lazy(ev.time_ns);
	t_busy = was;
}

/* Options a reader should know of: a host-heap depth other than --depth's
 * (Python processes) makes the reports' host call sites shorter; host-heap
 * sampling makes its events a sample (sample.c). */
void stc_announce_options(void)
{
	if (g_cfg.host_depth != g_cfg.depth)
		annotate("stprof.host_depth", (int64_t)g_cfg.host_depth);
	if (g_cfg.heap_sample) {
		g_heap_annotation_id = stc_intern_string(STP_HEAP_SAMPLE_ANNOTATION, strlen(STP_HEAP_SAMPLE_ANNOTATION));
		annotate(STP_HEAP_SAMPLE_ANNOTATION, (int64_t)g_cfg.heap_sample);
	}
}

int stc_ensure_output(void)
{
	if (STC_LIKELY(stc_out_ready()))
		return 1;
	if (atomic_load(&g_state) != STC_ON)
		return 0;
	int opened = 0;
	pthread_mutex_lock(&open_mu);
	if (!stc_out_ready() && stc_out_open() == 0) {
		stc_announce_process();
		stc_tbuf_announce();
		opened = 1;
	}
	pthread_mutex_unlock(&open_mu);
	if (opened)
		stc_announce_options();
	return stc_out_ready();
}

void stc_process_atfork_child(void) { pthread_mutex_init(&open_mu, NULL); }
