/*
 * test_pyframe.c - Python frames (detector/pyframe.c): "FILE:LINE in
 * FUNCTION" parsed into its parts, and which files are the user's own code
 * (the rows of a report lead with them) against the interpreter's library,
 * installed packages, the profiler's shim and the modules torch.compile
 * generates (Inductor's cache); and which installed package is the
 * program's own, from a path's outermost Python frames.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../frames.h"
#include "stprof/trace.h"

static int user(const char *file)
{
	stp_det_frame fr = {.ip = STP_PYFRAME_TAG | 1, .file = file};
	return det_frame_is_user_python(&fr);
}

static int entry(uint32_t n, const char *const *files, const char *want)
{
	uint32_t at = 99;
	size_t len = 0;
	int r = det_pyentry_package(files, n, &at, &len);
	if (r != 1)
		return r;
	CHECK(at < n);
	CHECK(strlen(want) == len && !strncmp(files[at], want, len));
	return r;
}

int main(void)
{
	char *file, *func;
	uint32_t line;
	CHECK(det_pyframe_parse("/home/u/train.py:22 in <module>", &file, &line, &func) == 0);
	CHECK_STR(file, "/home/u/train.py");
	CHECK_EQ_U(line, 22);
	CHECK_STR(func, "<module>");
	free(file);
	free(func);
	CHECK(det_pyframe_parse("no line here", &file, &line, &func) == -1);

	CHECK(user("/home/u/train.py"));
	CHECK(user("train.py"));
	CHECK(!user("/usr/lib/python3/dist-packages/torch/nn/modules/module.py"));
	CHECK(!user("/venv/lib/python3.11/site-packages/torch/optim/adam.py"));
	CHECK(!user("/usr/lib/python3.11/functools.py"));
	CHECK(!user("<frozen importlib._bootstrap>"));
	CHECK(!user("/opt/stprof/lib/stprof-python/stprof/torch_markers.py"));
	CHECK(!user("/tmp/torchinductor_root/t5/ct5dpve3rg3sgkfd7yoxxa2yvyzcu4v45wvrx63qggstwcypnny5.py"));
	/* TORCHINDUCTOR_CACHE_DIR elsewhere: the cache's layout tells */
	CHECK(!user("/scratch/ind/zf/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(!user("zf/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(user("/home/u/ab/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(user("/home/u/zf/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qwXwe.py"));
	CHECK(user("/home/u/zf/czf.py"));
	CHECK(user("/home/u/zf/config.py"));
	CHECK(user("/home/u/cz/czfolaa7zcskam46lrwh66fbjf4lbzcg2rg7tqncvu6nld3qw3we.py"));
	CHECK(!user("/home/u/model.cpp"));
	/* a frame the interpreter ran: Python, whatever the name (./train) */
	stp_det_frame ran = {.ip = STP_PYFRAME_TAG | 1, .file = "/home/u/train", .interpreted = 1};
	CHECK(det_frame_is_user_python(&ran));
	ran.file = "/usr/lib/python3.11/threading.py";
	CHECK(!det_frame_is_user_python(&ran));
	ran.file = "<string>";
	CHECK(!det_frame_is_user_python(&ran));
	ran.file = "t";
	CHECK(det_frame_is_user_python(&ran));
	CHECK(!user("/home/u/train")); /* a snapshot's source frame: Python files only */

	/* the program's own package, outermost frame first */
	const char *script[] = {"/home/u/train.py", "/venv/lib/python3.11/site-packages/transformers/trainer.py"};
	CHECK(entry(2, script, "") == -1); /* a script: HF's Trainer stays a library */
	const char *noext[] = {"/home/u/train", "/venv/lib/python3.11/site-packages/transformers/trainer.py"};
	CHECK(entry(2, noext, "") == 0); /* ./train, a script without .py: no package */
	const char *console[] = {"/venv/bin/mytrain", "/venv/lib/python3.11/site-packages/mytrainer/cli.py",
	                         "/venv/lib/python3.11/site-packages/mytrainer/model.py"};
	CHECK(entry(3, console, "/venv/lib/python3.11/site-packages/mytrainer/") == 1);
	const char *dashm[] = {"<frozen runpy>", "<frozen runpy>", "/usr/local/lib/python3.11/dist-packages/mytrainer/__main__.py"};
	CHECK(entry(3, dashm, "/usr/local/lib/python3.11/dist-packages/mytrainer/") == 1);
	const char *onefile[] = {"<string>", "<frozen importlib._bootstrap>", "/venv/lib/python3.11/site-packages/train_one.py"};
	CHECK(entry(3, onefile, "/venv/lib/python3.11/site-packages/train_one.py") == 1);
	const char *mine[] = {"<frozen runpy>", "<frozen runpy>", "/home/u/proj/mytrainer/__main__.py"};
	CHECK(entry(3, mine, "") == -1); /* python -m of the user's own module */
	const char *thread[] = {"/usr/lib/python3.11/threading.py", "/usr/lib/python3.11/threading.py"};
	CHECK(entry(2, thread, "") == 0);
	const char *torchrun[] = {"/venv/bin/torchrun", "/venv/lib/python3.11/site-packages/torch/distributed/run.py"};
	CHECK(entry(2, torchrun, "") == 0); /* PyTorch is never the program's */
	CHECK(entry(1, console, "") == 0);
	CHECK(entry(0, console, "") == 0);
	stp_det_frame own = {.ip = STP_PYFRAME_TAG | 1, .file = console[2], .program = 1};
	CHECK(det_frame_is_user_python(&own) && !det_frame_is_package_python(&own));
	own.program = 0;
	CHECK(!det_frame_is_user_python(&own) && det_frame_is_package_python(&own));
	return check_done();
}
