/*
 * lastimage.h - the trace of the program a recorded command became (see
 * lastimage.c).
 */
#ifndef STPROF_CLI_LASTIMAGE_H
#define STPROF_CLI_LASTIMAGE_H
#include <stddef.h>

/* From the trace at path, while a trace ends with END(EXEC), the trace of
 * the image its process ran next; the last one's path into out.  Returns
 * how many execs were followed (0: out is path). */
int last_image(const char *path, char *out, size_t len);
/* last_image(), and when it followed any, one line on stderr (headed
 * "cmd: " unless cmd is NULL): the last image's trace is read instead of
 * path's. */
int last_image_said(const char *cmd, const char *path, char *out, size_t len);
#endif
