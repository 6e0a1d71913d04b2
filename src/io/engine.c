/* SPDX-License-Identifier: MIT */
/* engine.c: chooses an engine implementation (engine_uring.c, engine_threads.c). */
#include "io/engine.h"

#include <errno.h>
#include <string.h>

#include "io/engine_impl.h"

int engine_create(enum engine_kind kind, unsigned threads, struct engine **out)
{
  if (threads == 0 || threads > 64 || out == NULL) {
    return -EINVAL;
  }
  switch (kind) {
  case ENGINE_URING:
    return engine_uring_create(threads, out);
  case ENGINE_THREADS:
    return engine_threads_create(threads, out);
  default:
    return -EINVAL;
  }
}

int engine_submit(struct engine *engine, struct engine_req *req)
{
  return engine->vt->submit(engine, req);
}

void engine_destroy(struct engine *engine)
{
  if (engine != NULL) {
    engine->vt->destroy(engine);
  }
}

const char *engine_kind_name(enum engine_kind kind)
{
  return kind == ENGINE_URING ? "uring" : "threads";
}

int engine_kind_parse(const char *text, enum engine_kind *out)
{
  if (strcmp(text, "uring") == 0) {
    *out = ENGINE_URING;
  } else if (strcmp(text, "threads") == 0) {
    *out = ENGINE_THREADS;
  } else {
    return -EINVAL;
  }
  return 0;
}
