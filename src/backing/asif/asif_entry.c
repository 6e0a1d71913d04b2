/* SPDX-License-Identifier: MIT */
/* asif_entry.c: locating a guest offset in the directory, tables and groups, and decoding
 * data entries, bitmap entries and bitmap states (docs/asif.md "Tables, chunk groups,
 * entries", "Bitmap chunk", "What a reader must validate" points 6 and 7). Pure: no I/O, no
 * allocation, no global state. */
#include "backing/asif/asif_impl.h"

#include <assert.h>
#include <errno.h>

#include "util/bytes.h"

void asif_locate(const struct asif_header *h, uint64_t offset, struct asif_loc *loc)
{
  assert(h != NULL && loc != NULL);
  assert(h->table_span != 0 && h->chunk_size != 0);
  uint64_t group_span = (uint64_t)h->group_entries * h->chunk_size;
  uint64_t r = offset % h->table_span;
  uint64_t q = r % group_span;

  loc->table = offset / h->table_span;
  loc->group = (uint32_t)(r / group_span);
  loc->index = (uint32_t)(q / h->chunk_size);
  loc->in_chunk = q % h->chunk_size;
  assert(loc->group < h->table_groups && loc->index < h->group_entries);
  loc->entry_off = (uint64_t)loc->group * h->group_bytes + 8u * (uint64_t)loc->index;
  loc->bitmap_entry_off = (uint64_t)loc->group * h->group_bytes + 8u * (uint64_t)h->group_entries;
}

/* *host = chunk x cs when the whole chunk lies in the file; else false. */
static bool chunk_inside(const struct asif_header *h, uint64_t chunk, uint64_t file_size,
                         uint64_t *host)
{
  return !__builtin_mul_overflow(chunk, (uint64_t)h->chunk_size, host) &&
         bytes_range_within(*host, h->chunk_size, file_size);
}

int asif_entry_decode(const struct asif_header *h, uint64_t raw, uint64_t file_size,
                      struct asif_entry *out, char *why, size_t why_len)
{
  assert(h != NULL && out != NULL);
  enum asif_status status = (enum asif_status)(raw >> ASIF_ENTRY_STATUS_SHIFT);
  uint64_t chunk = raw & ASIF_ENTRY_CHUNK_MASK;
  uint64_t host = 0;

  if ((raw & ASIF_ENTRY_RESERVED_MASK) != 0) {
    return asif_refuse(why, why_len, "data entry 0x%016llx has reserved bits 55-61 set",
                  (unsigned long long)raw);
  }
  switch (status) {
  case ASIF_STATUS_NEVER:
  case ASIF_STATUS_UNMAPPED:
    if (chunk != 0) {
      return asif_refuse(why, why_len, "data entry 0x%016llx: status %s with chunk %llu (unseen)",
                    (unsigned long long)raw, status == ASIF_STATUS_NEVER ? "00" : "10",
                    (unsigned long long)chunk);
    }
    break;
  case ASIF_STATUS_FULL:
  case ASIF_STATUS_PARTIAL:
    if (chunk == 0) {
      return asif_refuse(why, why_len, "data entry 0x%016llx: status %s with chunk 0",
                    (unsigned long long)raw, status == ASIF_STATUS_FULL ? "01" : "11");
    }
    if (!chunk_inside(h, chunk, file_size, &host)) {
      return asif_refuse(why, why_len,
                    "data entry 0x%016llx: chunk %llu runs past the end of the file (%llu bytes)",
                    (unsigned long long)raw, (unsigned long long)chunk,
                    (unsigned long long)file_size);
    }
    break;
  default:
    assert(false);
    return -EINVAL;
  }
  out->status = status;
  out->host = host;
  return 0;
}

int asif_bitmap_entry_decode(const struct asif_header *h, uint64_t raw, uint64_t file_size,
                             uint64_t *host, char *why, size_t why_len)
{
  assert(h != NULL && host != NULL);
  if (raw == 0) {
    return asif_refuse(why, why_len, "bitmap entry is 0 for a partly written chunk (status 11)");
  }
  if ((raw & ~ASIF_ENTRY_CHUNK_MASK) != 0) {
    return asif_refuse(why, why_len, "bitmap entry 0x%016llx has bits 55-63 set",
                  (unsigned long long)raw);
  }
  if (!chunk_inside(h, raw, file_size, host)) {
    return asif_refuse(why, why_len,
                  "bitmap entry: chunk %llu runs past the end of the file (%llu bytes)",
                  (unsigned long long)raw, (unsigned long long)file_size);
  }
  return 0;
}

int asif_bitmap_state(const struct asif_header *h, const uint8_t *slice, uint64_t slice_off,
                      uint32_t index, uint64_t block)
{
  assert(h != NULL && slice != NULL);
  uint64_t blocks = h->chunk_size / h->block_size;
  assert(index < h->group_entries && block < blocks);
  uint64_t k = (uint64_t)index * blocks + block;
  assert(k / 4u >= slice_off);
  unsigned state = (slice[k / 4u - slice_off] >> ((k % 4u) * 2u)) & 3u;

  return state <= 1u ? (int)state : -EINVAL;
}
