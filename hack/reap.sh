#!/usr/bin/env bash
# Stops every process whose command line mentions RUN_DIR (the run directory the test harness puts
# all certificates, data and logs under) and fails when it found any: the harness must stop what it
# starts, so a leftover is a bug worth a red build. Used after `make test`.
#   hack/reap.sh RUN_DIR
set -uo pipefail
dir=${1:?usage: reap.sh RUN_DIR}
left=()
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [[ $pid == "$$" ]] && continue
  cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
  [[ $cmd == *"$dir"* && $cmd != *reap.sh* ]] || continue
  left+=("$pid")
  echo "reap: leftover process $pid: ${cmd:0:200}" >&2
done
[[ ${#left[@]} -eq 0 ]] && exit 0
kill -9 "${left[@]}" 2>/dev/null
echo "reap: ${#left[@]} process(es) of the test run were still running" >&2
exit 1
