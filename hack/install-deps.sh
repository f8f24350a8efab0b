#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when they are missing:
# BIND 9 (named, tsig-keygen, dig) for the real DNS server; runc and the CNI plugins for the
# real-pod nodes (kubelet + containerd in network namespaces); iproute2, util-linux (ip netns,
# nsenter, unshare) and iptables for those nodes; keepalived, which the harness packs into an
# image with its shared libraries; Chromium, which renders the status page in its test; tmux, the terminal the demo's test uses.
set -euo pipefail

need=()
[[ -x /usr/sbin/named ]] || command -v named >/dev/null || need+=(bind9)
command -v tsig-keygen >/dev/null || [[ -x /usr/sbin/tsig-keygen ]] || need+=(bind9-utils)
command -v dig >/dev/null || need+=(bind9-dnsutils)
command -v runc >/dev/null || [[ -x /usr/sbin/runc ]] || need+=(runc)
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local ]] || need+=(containernetworking-plugins)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
command -v iptables >/dev/null || [[ -x /usr/sbin/iptables ]] || need+=(iptables)
[[ -x /usr/sbin/keepalived ]] || need+=(keepalived)
# Headless Chromium loads the status page in its test, as an operator's browser would.
[[ -x /usr/bin/chromium ]] || need+=(chromium)
# tmux: the demo's test stops it from a real terminal (Ctrl-C, closed window).
command -v tmux >/dev/null || need+=(tmux)
# Every kube-apiserver, kubelet and controller watching its certificates takes inotify instances,
# 128 per user by default: with the 30 user clusters of TestSharding and other specs running
# beside it, the next process's certificate watcher failed with "too many open files" (EMFILE
# from inotify_init). Raised as kind's docs advise for many clusters on one host.
if [[ $(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo 1024) -lt 1024 ]]; then
  echo "[deps] fs.inotify.max_user_instances=1024 (many API servers on one host)" >&2
  # Where it cannot be set (no root, a read-only /proc/sys), the run goes on as before.
  { if [[ $(id -u) -eq 0 ]]; then echo 1024 >/proc/sys/fs/inotify/max_user_instances; else
    echo 1024 | sudo tee /proc/sys/fs/inotify/max_user_instances >/dev/null; fi; } 2>/dev/null ||
    echo "[deps] could not raise it: specs with many API servers may fail to start a process (EMFILE)" >&2
fi
[[ ${#need[@]} -eq 0 ]] && exit 0

echo "[deps] installing ${need[*]} (Debian packages)" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The packages' own named and keepalived services are not used (the harness runs its own); do not
# leave one running where a service manager started it.
for svc in named keepalived; do
  if command -v systemctl >/dev/null && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $sudo systemctl disable --now "$svc" >/dev/null 2>&1 || true
  fi
done
