#!/usr/bin/env bash
# Stops every process whose command line mentions RUN_DIR (the run directory the test harness puts
# all certificates, data and logs under) or a real node's runtime directory (/run/shardgate), and
# removes what real nodes leave in the kernel (network namespaces sg<pid>-*, their cgroups, their
# runtime directories), failing when it found any: the harness must stop and delete what it
# starts, so a leftover is a bug worth a red build. Used after `make test`.
#   hack/reap.sh RUN_DIR
set -uo pipefail
dir=${1:?usage: reap.sh RUN_DIR}
left=()
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [[ $pid == "$$" ]] && continue
  cmd=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) || continue
  [[ ($cmd == *"$dir"* || $cmd == *"/run/shardgate/"*) && $cmd != *reap.sh* ]] || continue
  left+=("$pid")
  echo "reap: leftover process $pid: ${cmd:0:200}" >&2
done
rc=0
if [[ ${#left[@]} -gt 0 ]]; then
  kill -9 "${left[@]}" 2>/dev/null
  echo "reap: ${#left[@]} process(es) of the test run were still running" >&2
  rc=1
fi
# Real nodes: network namespaces, cgroups (deepest first) and runtime directories.
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^sg[0-9]+-[0-9]+-'); do
  echo "reap: leftover network namespace $ns" >&2
  ip netns del "$ns" 2>/dev/null; rc=1
done
for cg in /sys/fs/cgroup/*/sg[0-9]*-[0-9]*-*; do
  [[ -d $cg ]] || continue
  echo "reap: leftover cgroup $cg" >&2
  find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null; rc=1
done
if [[ -d /run/shardgate ]] && [[ -n $(ls -A /run/shardgate 2>/dev/null) ]]; then
  echo "reap: leftover real-node runtime directories in /run/shardgate" >&2
  rm -rf /run/shardgate/*; rc=1
fi
exit $rc
