# SPDX-License-Identifier: MIT
# edge_lib.sh: what the tests driving edge_clients.py share. Source it after tests/lib.sh.
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree
EDGE="$SRCDIR/tests/server/edge_clients.py"

# edge_each_engine SIZE FUNC: for the uring engine, then the threads engine, starts a server
# on a fresh sparse image of SIZE (truncate's units) and calls FUNC ENGINE; FUNC stops the
# server (dg_stop, or a signal it checks) before it returns.
edge_each_engine() {
  local size=$1 func=$2 engine
  for engine in uring threads; do
    rm -f "$T/edge.img"; truncate -s "$size" "$T/edge.img"
    DG_ENGINE=$engine dg_start "$T/edge.img"
    "$func" "$engine"
  done
}

# edge_engines_at_once SIZE FUNC: edge_each_engine with the two engines' runs at once
# (dg_spawn), each on its own image; for a FUNC that mostly waits (sleeps, timeouts), not
# one that measures time under load.
edge_engines_at_once() {
  local size=$1 func=$2 engine
  for engine in uring threads; do
    dg_spawn "$engine" edge_engine_run "$size" "$func" "$engine"
  done
  dg_join
}

# edge_engine_run SIZE FUNC ENGINE: one job of edge_engines_at_once.
edge_engine_run() {
  rm -f "$T/edge.$3.img"; truncate -s "$1" "$T/edge.$3.img"
  DG_ENGINE=$3 dg_start "$T/edge.$3.img"
  "$2" "$3"
}

# edge_check_engines CHECK [ARGS...]: on a 1 MiB image and each engine, runs
# `edge_clients.py CHECK SOCKET ARGS...` (an argument LOG stands for the server's log) and
# fails naming the check and the engine.
edge_check_engines() {
  EDGE_CHECK=("$@")
  edge_each_engine 1M edge_check_run
}

# edge_check_run ENGINE: one run of EDGE_CHECK against the running server, then dg_stop.
edge_check_run() {
  local a args=()
  for a in "${EDGE_CHECK[@]:1}"; do
    if [ "$a" = LOG ]; then args+=("$DG_LOG"); else args+=("$a"); fi
  done
  $PY "$EDGE" "${EDGE_CHECK[0]}" "$DG_SOCK" "${args[@]}" || fail "${EDGE_CHECK[0]} ($1)"
  dg_stop
}
