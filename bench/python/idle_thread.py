#!/usr/bin/env python3
"""idle_thread.py SCRIPT [ARGS...] - runs SCRIPT as __main__ with one more
thread, idle for the whole run.  A process with a second thread takes
glibc's multi-threaded paths (its mutexes, the GIL's among them, with
atomic instructions; malloc's arena locks), as one under stprof does
(the collector's flusher thread): bench/python/loop.sh's native-thread
variant, the native figure that part of the excess is measured against."""
import runpy
import sys
import threading

threading.Thread(target=threading.Event().wait, daemon=True).start()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
