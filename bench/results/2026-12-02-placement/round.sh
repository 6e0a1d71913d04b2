#!/bin/bash
# round.sh N: N interleaved rounds of every placement
for r in $(seq $1); do
  echo "# round $r $(date +%T)"
  "$(dirname "$0")"/place.sh host - 0,1 -; "$(dirname "$0")"/place.sh host - 0 -
  for tr in unix tcp; do for srv in diskgate qemu-nbd; do
    "$(dirname "$0")"/place.sh $srv 0,1 0,1 $tr; "$(dirname "$0")"/place.sh $srv 1 0 $tr
  done; done
done
