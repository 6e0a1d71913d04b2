/* SPDX-License-Identifier: MIT */
/* qcow2_compress.c: inflating compressed clusters (QEMU's docs/interop/qcow2.txt,
 * "Compressed Clusters Descriptor" and the header's compression_type): zlib's raw deflate
 * (no zlib header, window 2^15) or a zstd stream, each inflating to exactly one cluster. The
 * input may carry padding after the stream (the descriptor counts whole sectors). */
#include "backing/qcow2/qcow2_impl.h"

#include <errno.h>
#include <zlib.h>
#include <zstd.h>

static int inflate_zlib(const void *in, size_t in_len, void *out, size_t out_len)
{
  z_stream s = {0};
  int ret;

  if (inflateInit2(&s, -15) != Z_OK) {
    return -ENOMEM;
  }
  s.next_in = (Bytef *)in;
  s.avail_in = (uInt)in_len;
  s.next_out = out;
  s.avail_out = (uInt)out_len;
  ret = inflate(&s, Z_FINISH);
  inflateEnd(&s);
  /* A full cluster out is the goal; the stream's end marker may lie in the padding. */
  if ((ret == Z_STREAM_END || ret == Z_BUF_ERROR) && s.avail_out == 0) {
    return 0;
  }
  return -EIO;
}

static int inflate_zstd(const void *in, size_t in_len, void *out, size_t out_len)
{
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  ZSTD_inBuffer ib = {.src = in, .size = in_len, .pos = 0};
  ZSTD_outBuffer ob = {.dst = out, .size = out_len, .pos = 0};
  int rc = 0;

  if (dctx == NULL) {
    return -ENOMEM;
  }
  while (ob.pos < ob.size) {
    size_t before_in = ib.pos, before_out = ob.pos;
    size_t r = ZSTD_decompressStream(dctx, &ob, &ib);
    if (ZSTD_isError(r)) {
      rc = -EIO;
      break;
    }
    if (ib.pos == before_in && ob.pos == before_out) {
      rc = -EIO; /* no progress: the stream ended short of a cluster */
      break;
    }
  }
  ZSTD_freeDCtx(dctx);
  return rc;
}

int qcow2_decompress(const struct qcow2 *q, const void *in, size_t in_len, void *out)
{
  if (q->h.compression_type == QCOW2_COMPRESSION_ZSTD) {
    return inflate_zstd(in, in_len, out, (size_t)q->cluster_size);
  }
  return inflate_zlib(in, in_len, out, (size_t)q->cluster_size);
}
