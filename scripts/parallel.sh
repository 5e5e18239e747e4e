#!/bin/sh
# Runs each argument as a shell command, all at once, and fails if any of them fails. Each command's
# output is shown whole once it has ended (in the order given), never interleaved with another's.
# `npm test` runs its static checks this way: the service's type-check alone takes most of their
# time, and the other checks fit beside it on a second core.
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=0
for cmd in "$@"; do
  i=$((i + 1))
  sh -c "$cmd" >"$dir/$i" 2>&1 &
  eval "pid_$i=$!"
done
status=0
i=0
for cmd in "$@"; do
  i=$((i + 1))
  eval "pid=\$pid_$i"
  wait "$pid" || { status=1; printf 'failed: %s\n' "$cmd" >>"$dir/$i"; }
  cat "$dir/$i"
done
exit "$status"
