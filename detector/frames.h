/*
 * frames.h - turns call-path addresses into printable frames.
 *
 * Owns the trace's module table (MODULE events) and a cache of resolved
 * addresses.  Without a symbolizer a frame is "module+0xoffset", the offset
 * being the ELF virtual address (ip - load bias), which `addr2line -e
 * module 0xoffset` understands.  The symbolizer (function, file, line from
 * DWARF) plugs in behind det_frames_resolve() and nothing else changes.
 *
 * Invariants: strings handed out stay valid until det_frames_free(); the
 * module table may grow while frames are resolved (modules can be loaded
 * late, e.g. by dlopen).
 */
#ifndef STP_DET_FRAMES_H
#define STP_DET_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "stprof/detector.h"

typedef struct det_frames det_frames;

det_frames *det_frames_new(void);
void det_frames_free(det_frames *f);
int det_frames_add_module(det_frames *f, const char *path, uint64_t base, uint64_t size, uint64_t bias,
                          const uint8_t *build_id, uint32_t build_id_len);
/* Fills *out for ip.  `caller` is 1 for a return address (every frame but
 * the innermost): its line is looked up at ip - 1. */
void det_frames_resolve(det_frames *f, uint64_t ip, int caller, stp_det_frame *out);
/* The frames of ip with its inlined calls apart, innermost first: each
 * inlined function at the line running in it, then the function holding
 * them at the line where it called the first (DW_AT_call_file/line):
 * cudaMalloc<float> (cuda_runtime.h) then main (prog.cu:12).  One frame
 * when nothing is inlined there.  Returns how many (<= max). */
uint32_t det_frames_resolve_inline(det_frames *f, uint64_t ip, int caller, stp_det_frame *out, uint32_t max);
/* 1 when function names and lines are looked up (the symbolizer is built in). */
int det_frames_symbolized(const det_frames *f);
/* The symbolizer's warnings so far (unreadable module, build-id mismatch). */
uint32_t det_frames_warnings(const det_frames *f, const char **out, uint32_t max);
/* The path of the module holding ip ("" when none), without symbolizing. */
const char *det_frames_module_of(const det_frames *f, uint64_t ip);
/* What the module holding ip is, from its path alone (cached per module):
 * DET_MOD_PLUMBING (det_frames_is_plumbing without a function name),
 * DET_MOD_INTERPRETER (det_frames_is_interpreter); 0 for none or no module. */
#define DET_MOD_PLUMBING 1u
#define DET_MOD_INTERPRETER 2u
unsigned det_frames_module_class(det_frames *f, uint64_t ip);
/* 1 when the frame belongs to the profiler or to the allocator itself
 * (libstprof, the C library's malloc family, the dynamic loader), which the
 * report skips. */
int det_frames_is_plumbing(const stp_det_frame *fr);
/* 1 when the frame is in a language interpreter (python3.X, libpython). */
int det_frames_is_interpreter(const stp_det_frame *fr);
/* The trace reader whose strings name Python frames (STP_PYFRAME_TAG). */
void det_frames_set_reader(det_frames *f, const stp_reader *rd);

/* Python frames (pyframe.c). "FILE:LINE in FUNCTION" into malloc'd parts;
 * -1 when the text is not of that form. */
int det_pyframe_parse(const char *text, char **file, uint32_t *line, char **func);
int det_frame_is_python(const stp_det_frame *fr);
/* A Python frame of the user's own code: not the standard library, an
 * installed package (but the program's own: stp_det_frame.program) or the
 * profiler's shim. */
int det_frame_is_user_python(const stp_det_frame *fr);
/* The program's own package, from the files of one path's Python frames,
 * outermost first: -1 when the outermost is the user's code (a script: no
 * package is the program's); 1 when the program entered an installed
 * package from a stub (a console script in a bin/ directory, runpy for
 * python -m, <string> for python -c): files[*at] is then the first file
 * past the stub, and its first *len bytes name the package
 * (".../site-packages/PKG/", or the file of a one-file module); 0 when
 * this path does not tell (a thread's, which starts in threading.py; a
 * script without .py; PyTorch's or the shim's frames past the stub). */
int det_pyentry_package(const char *const *files, uint32_t n, uint32_t *at, size_t *len);
/* A Python frame of an installed package other than PyTorch (transformers,
 * timm, torchvision...): where a library's model runs. */
int det_frame_is_package_python(const stp_det_frame *fr);
/* A Python frame of a DataLoader: torch/utils/data/ (the fetch and collate,
 * the iterator's receiving and reordering) or torch.multiprocessing's
 * rebuilding of a shared storage. */
int det_frame_is_loader(const stp_det_frame *fr);
/* A copy of s kept until det_frames_free(), one per distinct text. */
const char *det_frames_intern(det_frames *f, const char *s);

/* Folding (fold.c). */
/* Frames no user acts on: the framework's (PyTorch, CUDA, the interpreter,
 * the C and C++ runtimes), or a Python frame not of the user's code. */
int det_frame_is_framework(const stp_det_frame *fr);
/* "aten::NAME" of an at::_ops::NAME::call/redispatch function; 0 if none. */
int det_frame_aten_op(const char *fn, char *buf, size_t len);
/* A C++ name with its argument and template lists elided. */
size_t det_short_name(const char *in, char *out, size_t len);
/* The folded view of a path (raw frames, innermost first, plumbing and
 * wrappers already dropped). */
uint32_t det_fold_frames(det_frames *fs, const stp_det_frame *in, uint32_t n, stp_det_frame *out, uint32_t max);
#endif
