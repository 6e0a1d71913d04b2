/* SPDX-License-Identifier: MIT */
/* bytes.h: big-endian loads and stores for the NBD wire format (all fields are network
 * byte order), and overflow-checked offset arithmetic. Header-only, any thread.
 * Tested by tests/unit/test_bytes.c. */
#ifndef DISKGATE_UTIL_BYTES_H
#define DISKGATE_UTIL_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t bytes_get_be16(const void *p)
{
  const uint8_t *b = p;
  return (uint16_t)((b[0] << 8) | b[1]);
}

static inline uint32_t bytes_get_be32(const void *p)
{
  const uint8_t *b = p;
  return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static inline uint64_t bytes_get_be64(const void *p)
{
  const uint8_t *b = p;
  return ((uint64_t)bytes_get_be32(b) << 32) | bytes_get_be32(b + 4);
}

static inline void bytes_put_be16(void *p, uint16_t v)
{
  uint8_t *b = p;
  b[0] = (uint8_t)(v >> 8);
  b[1] = (uint8_t)v;
}

static inline void bytes_put_be32(void *p, uint32_t v)
{
  uint8_t *b = p;
  b[0] = (uint8_t)(v >> 24);
  b[1] = (uint8_t)(v >> 16);
  b[2] = (uint8_t)(v >> 8);
  b[3] = (uint8_t)v;
}

static inline void bytes_put_be64(void *p, uint64_t v)
{
  bytes_put_be32(p, (uint32_t)(v >> 32));
  bytes_put_be32((uint8_t *)p + 4, (uint32_t)v);
}

/* True when offset + length does not overflow 64 bits and ends at or before `size`
 * (all in bytes). */
static inline bool bytes_range_within(uint64_t offset, uint64_t length, uint64_t size)
{
  uint64_t end;
  if (__builtin_add_overflow(offset, length, &end)) {
    return false;
  }
  return end <= size;
}

/* Rounds down / up to a power-of-two `align`. round_up: caller ensures no overflow. */
static inline uint64_t bytes_align_down(uint64_t v, uint64_t align)
{
  return v & ~(align - 1);
}

static inline uint64_t bytes_align_up(uint64_t v, uint64_t align)
{
  return (v + align - 1) & ~(align - 1);
}

static inline bool bytes_is_power_of_two(uint64_t v)
{
  return v != 0 && (v & (v - 1)) == 0;
}

#endif
