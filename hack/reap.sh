#!/usr/bin/env bash
# Stops every process whose command line mentions RUN_DIR (the run directory the test harness puts
# all certificates, data and logs under) or a real node's runtime directory (/run/shardgate), and
# removes what real nodes leave in the kernel (network namespaces sg<pid>-*, their cgroups, their
# runtime directories), failing when it found any: the harness must stop and delete what it
# starts, so a leftover is a bug worth a red build. Used after `make test`. With --snapshot
# (before the run) it records the host's kernel settings that kubelets, containerd and CNI would
# change if they escaped their namespaces (sysctls, host iptables, mounts); afterwards it fails
# when any differs (a mount only when it appeared). What belongs to a test binary that still runs
# (the pid in sg<pid>-) is another run's on the same machine, and is left alone.
#   hack/reap.sh --snapshot RUN_DIR    (before)
#   hack/reap.sh RUN_DIR               (after)
set -uo pipefail

# host_state prints the host settings a run must leave as it found them.
host_state() {
  local k
  for k in net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv4.conf.all.route_localnet \
    net.ipv4.ip_unprivileged_port_start net.bridge.bridge-nf-call-iptables vm.overcommit_memory \
    vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes; do
    echo "sysctl $k=$(cat "/proc/sys/${k//.//}" 2>/dev/null || echo absent)"
  done
  # Rules only: packet counters change by themselves.
  iptables-save 2>/dev/null | grep -v '^#' | sed 's/ \[[0-9]*:[0-9]*\]$//' | sed 's/^/iptables /'
  # Mounts a real node makes (its network namespaces, runtime directories, sysctl stand-ins).
  grep -E '/run/shardgate|/run/netns/sg[0-9]|/proc/sys/(vm|kernel)' /proc/self/mountinfo | awk '{print "mount " $5}'
}

if [[ ${1:-} == --snapshot ]]; then
  host_state >"${2:?usage: reap.sh --snapshot RUN_DIR}/host-state.before"
  exit 0
fi
# owner_runs: the test binary (or demo) named by the first sg<pid>- in $1 still runs (its run is
# not over); a reused pid of another program does not count.
owner_runs() {
  local cmd
  [[ $1 =~ sg([0-9]+)- ]] || return 1
  { cmd=$(tr '\0' ' ' <"/proc/${BASH_REMATCH[1]}/cmdline"); } 2>/dev/null || return 1
  [[ $cmd == *.test\ * || $cmd == *shardgate-demo* ]]
}

dir=${1:?usage: reap.sh RUN_DIR}
left=()
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  [[ $pid == "$$" ]] && continue
  { cmd=$(tr '\0' ' ' <"$p/cmdline"); } 2>/dev/null || continue
  [[ ($cmd == *"$dir"* || $cmd == *"/run/shardgate/"*) && $cmd != *reap.sh* ]] || continue
  [[ $cmd != *"$dir"* ]] && owner_runs "$cmd" && continue
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
  owner_runs "$ns" && continue
  echo "reap: leftover network namespace $ns" >&2
  ip netns del "$ns" 2>/dev/null; rc=1
done
for cg in /sys/fs/cgroup/*/sg[0-9]*-[0-9]*-*; do
  [[ -d $cg ]] || continue
  owner_runs "${cg##*/}" && continue
  echo "reap: leftover cgroup $cg" >&2
  # Processes a killed containerd left behind (a pause container, a router) keep it from going.
  find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -9 2>/dev/null
  sleep 0.2
  find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null; rc=1
done
for run in /run/shardgate/*; do
  [[ -e $run ]] || continue
  owner_runs "${run##*/}" && continue
  echo "reap: leftover real-node runtime directory $run" >&2
  rm -rf "$run"; rc=1
done
if [[ -f $dir/host-state.before ]]; then
  # A mount that went away is another run's cleaning up (a run on the same machine that ended
  # meanwhile), never this run's leak: only mounts that appeared count.
  changed=$(diff "$dir/host-state.before" <(host_state) | grep -E '^[<>] ' | grep -v '^< mount ')
  if [[ -n $changed ]]; then
    echo "reap: the run changed the host (< before, > after):" >&2
    echo "$changed" >&2
    rc=1
  fi
fi
exit $rc
