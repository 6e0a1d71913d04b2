/* SPDX-License-Identifier: MIT */
/* engine_ring.h: an engine bound to a ring that its owner thread runs (io/loop.c).
 *
 * On the owner thread, engine_submit only fills an SQE (user data: the request pointer with
 * ENGINE_RING_TAG in its low bits) and makes no system call: the owner submits the batch
 * with its next io_uring_enter and, for each CQE carrying the tag, calls
 * engine_ring_complete. A READ or WRITE whose buffer is registered with the ring
 * (engine_req.fixed_buf) becomes READ_FIXED or WRITE_FIXED. ENGINE_CALL requests, and
 * submissions from any other thread, go to the fallback engine (shared workers and
 * rings), whose completions run on their threads.
 * Source: liburing's examples (one ring, batched submission). */
#ifndef DISKGATE_IO_ENGINE_RING_H
#define DISKGATE_IO_ENGINE_RING_H

#include <liburing.h>
#include <pthread.h>
#include <stdint.h>

#include "io/engine.h"

#define ENGINE_RING_TAG 1u /* low bits of a CQE's user data for engine requests */
#define ENGINE_RING_TAG_MASK 7u

/* Creates the engine for `ring`, owned by thread `owner`. Returns 0 and *out, or -ENOMEM. */
int engine_ring_create(struct io_uring *ring, pthread_t owner, struct engine *fallback,
                       struct engine **out);

/* Runs the completion of the engine request a CQE with ENGINE_RING_TAG carries. Owner
 * thread only. */
void engine_ring_complete(uint64_t user_data, int32_t res);

/* Frees the engine (not the ring). */
void engine_ring_destroy(struct engine *engine);

#endif
