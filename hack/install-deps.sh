#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when they are missing:
# BIND 9 (named, tsig-keygen, dig) for the real DNS server; runc and the CNI plugins for the
# real-pod nodes (kubelet + containerd in network namespaces); iproute2 and util-linux
# (ip netns, nsenter, setpriv) for those nodes and for running routers with their pod's
# security context.
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
[[ ${#need[@]} -eq 0 ]] && exit 0

echo "[deps] installing ${need[*]} (Debian packages)" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The package's own named service is not used (the harness runs its own on loopback); do not
# leave one running where a service manager started it.
if command -v systemctl >/dev/null && systemctl is-active --quiet named 2>/dev/null; then
  $sudo systemctl disable --now named >/dev/null 2>&1 || true
fi
