/*
 * cut.c - stp_trace_cut(): does a trace end inside a chunk?  And
 * stp_trace_has_end(): does it end with an END chunk, and
 * stp_trace_end_reason(): for what reason?  Answered without
 * decoding a single event, so that a command can warn before it reads (the
 * readers themselves read such a file to its last whole chunk).
 *
 * A whole trace ends with an END chunk: the last 64 bytes are searched for
 * one that ends exactly at the end of the file and whose checksum holds.
 * Without it (the program was killed, or the writer stopped), the chunk
 * headers are walked from the file header, one pread each, following the
 * lengths, until one reaches past the end.  A header that is not a chunk's
 * stops the walk: that is damage, the reader's error to report, not a cut.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stprof/trace.h"
#include "stprof/trace_codec.h"

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* 1 when the file ends with a whole END chunk (*reason, when given: the
 * reason it carries, the first varint of its payload). */
static int ends_whole(int fd, uint64_t size, uint32_t *reason)
{
	uint8_t t[64];
	size_t n = size < sizeof t ? (size_t)size : sizeof t;
	if (pread(fd, t, n, (off_t)(size - n)) != (ssize_t)n)
		return 0;
	for (size_t p = n >= STP_CHUNK_HEADER_SIZE ? n - STP_CHUNK_HEADER_SIZE + 1 : 0; p-- > 0;) {
		if (le32(t + p) != STP_CHUNK_MAGIC || t[p + 4] != STP_CHUNK_END)
			continue;
		uint32_t len = le32(t + p + 12);
		if (p + STP_CHUNK_HEADER_SIZE + len == n &&
		    stp_crc32c(stp_crc32c(0, t + p, 16), t + p + STP_CHUNK_HEADER_SIZE, len) == le32(t + p + 16)) {
			if (reason) { /* a varint of at most 5 bytes, inside the payload */
				uint64_t v = 0;
				const uint8_t *q = t + p + STP_CHUNK_HEADER_SIZE;
				for (uint32_t i = 0, shift = 0; i < len && i < 5; i++, shift += 7) {
					v |= (uint64_t)(q[i] & 0x7f) << shift;
					if (!(q[i] & 0x80))
						break;
				}
				*reason = v > UINT32_MAX ? 0 : (uint32_t)v;
			}
			return 1;
		}
	}
	return 0;
}

int stp_trace_has_end(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	int whole = !fstat(fd, &sb) && S_ISREG(sb.st_mode) && ends_whole(fd, (uint64_t)sb.st_size, NULL);
	close(fd);
	return whole;
}

int stp_trace_end_reason(const char *path, uint32_t *reason)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	int whole = !fstat(fd, &sb) && S_ISREG(sb.st_mode) && ends_whole(fd, (uint64_t)sb.st_size, reason);
	close(fd);
	return whole;
}

int stp_trace_cut(const char *path, uint64_t *offset, uint64_t *bytes)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat sb;
	uint8_t h[STP_FILE_HEADER_SIZE];
	int cut = 0;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
	    memcmp(h, STP_FILE_MAGIC, 8) || ends_whole(fd, (uint64_t)sb.st_size, NULL)) {
		close(fd);
		return 0;
	}
	uint64_t size = (uint64_t)sb.st_size, off = le32(h + 12);
	while (off < size) {
		uint8_t c[STP_CHUNK_HEADER_SIZE];
		ssize_t got = pread(fd, c, sizeof c, (off_t)off);
		if (got < 0)
			break;
		if ((size_t)got < sizeof c || off + STP_CHUNK_HEADER_SIZE + le32(c + 12) > size) {
			if ((size_t)got >= 4 && le32(c) != STP_CHUNK_MAGIC)
				break; /* not a chunk: damage */
			if ((size_t)got >= sizeof c && le32(c + 12) > STP_CHUNK_MAX_PAYLOAD)
				break;
			*offset = off;
			*bytes = size - off;
			cut = 1;
			break;
		}
		if (le32(c) != STP_CHUNK_MAGIC || le32(c + 12) > STP_CHUNK_MAX_PAYLOAD)
			break;
		off += STP_CHUNK_HEADER_SIZE + le32(c + 12);
	}
	close(fd);
	return cut;
}
