#!/usr/bin/env bash
# Builds the real components that tests and the demo run, once per version, into a cache outside
# the repository, and links them into bin/tools/ of the checkout. A tool whose versioned binary is
# already cached is skipped, so only the first run on a machine pays the build (~43 min cold, README.md).
#
#   hack/tools/build.sh            build every tool that is missing
#   hack/tools/build.sh etcd kwok  build only these
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cache=${SHARDGATE_TOOLS_CACHE:-$HOME/.cache/shardgate/tools}
links=${SHARDGATE_TOOLS_BIN:-$root/bin/tools}
mkdir -p "$cache" "$links"
export GOFLAGS=-buildvcs=false
export CGO_ENABLED=0

log() { printf '[tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# build NAME VERSION -- COMMAND... : runs COMMAND with $out set to the versioned target file unless
# that file exists, then checks the binary starts and links it into bin/tools.
build() {
  local name=$1 version=$2; shift 3
  local dir="$cache/$name-$version"
  local out="$dir/$name"
  if [[ ! -x $out ]]; then
    log "building $name $version (cold builds take minutes; progress below)"
    local start=$SECONDS tmp
    mkdir -p "$dir"
    tmp="$out.tmp.$$"
    out=$tmp "$@"
    mv "$tmp" "$out"
    log "built $name $version in $((SECONDS - start))s"
  fi
  check_runs "$name" "$out"
  ln -sfn "$out" "$links/$name"
}

check_runs() {
  local name=$1 bin=$2 arg=--version
  case $name in
    etcd) arg=--version ;;
    kwok) arg=--version ;;
    helm|controller-gen|golangci-lint) arg=version ;;
    containerd-shim-runc-v2) arg=-v ;;
    traefik) arg=version ;;
    haproxy-ingress) arg=--version ;;
    promtool) arg=--version ;;
    pebble) arg=-version ;;
    kubectl) arg="version --client" ;;
  esac
  [[ $name == controller-gen ]] && arg=--version
  if ! "$bin" $arg >/dev/null 2>&1; then
    log "ERROR: $bin $arg failed; remove $(dirname "$bin") to rebuild"
    "$bin" $arg || true
    exit 1
  fi
}

# go_build_in MODULE_DIR PACKAGE [LDFLAGS]: builds PACKAGE inside a pinned tools module.
go_build_in() {
  local dir=$1 pkg=$2 ldflags=${3:-}
  (cd "$dir" && go build -mod=mod -trimpath -ldflags "-s -w $ldflags" -o "$out" "$pkg")
}

kube_ldflags() {
  local v=$KUBERNETES_VERSION major minor
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  local f=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

tool_kubernetes() {
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    build "$b" "$KUBERNETES_VERSION" -- go_build_in "$here/kubernetes" "k8s.io/kubernetes/cmd/$b" "$(kube_ldflags)"
  done
}
tool_etcd() { build etcd "$ETCD_VERSION" -- go_build_in "$here/etcd" . ; }
tool_kwok() { build kwok "$KWOK_VERSION" -- go_build_in "$here/kwok" sigs.k8s.io/kwok/cmd/kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"; }
tool_external-dns() { build external-dns "$EXTERNAL_DNS_VERSION" -- go_build_in "$here/external-dns" sigs.k8s.io/external-dns "-X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=$EXTERNAL_DNS_VERSION"; }
tool_traefik() { build traefik "$TRAEFIK_VERSION" -- go_build_in "$here/traefik" github.com/traefik/traefik/v3/cmd/traefik "-X github.com/traefik/traefik/v3/pkg/version.Version=$TRAEFIK_VERSION"; }
tool_controller-gen() { build controller-gen "$CONTROLLER_GEN_VERSION" -- go_build_in "$here/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen "-X sigs.k8s.io/controller-tools/pkg/version.version=$CONTROLLER_GEN_VERSION"; }
tool_golangci-lint() { build golangci-lint "$GOLANGCI_LINT_VERSION" -- go_build_in "$here/golangci-lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint "-X main.version=$GOLANGCI_LINT_VERSION"; }
# containerd, ctr and the runc shim (static, no cgo) for the real-pod nodes.
containerd_build() {
  local pkg=$1 tags=$2
  (cd "$here/containerd" && go build -mod=mod -trimpath -tags "$tags" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" -o "$out" "$pkg")
}
tool_containerd() {
  local common="urfave_cli_no_docs osusergo netgo static_build"
  build containerd "$CONTAINERD_VERSION" -- containerd_build github.com/containerd/containerd/v2/cmd/containerd "$common no_btrfs no_devmapper no_zfs"
  build ctr "$CONTAINERD_VERSION" -- containerd_build github.com/containerd/containerd/v2/cmd/ctr "$common no_btrfs no_devmapper no_zfs"
  build containerd-shim-runc-v2 "$CONTAINERD_VERSION" -- containerd_build github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$common no_grpc"
}
# cert-manager's controllers (our main over its pkg/controller registry) and Pebble.
# The cache key includes our main's source: a change to it is a new build.
tool_cert-manager() {
  local src
  src=$(cat "$here"/cert-manager/main.go "$here"/cert-manager/go.mod "$here"/cert-manager/go.sum | sha256sum | cut -c1-12)
  build cert-manager-controller "$CERT_MANAGER_VERSION-$src" -- go_build_in "$here/cert-manager" .
}
tool_pebble() { build pebble "$PEBBLE_VERSION" -- go_build_in "$here/pebble" github.com/letsencrypt/pebble/v2/cmd/pebble; }
tool_helm() { build helm "$HELM_VERSION" -- go_build_in "$here/helm" helm.sh/helm/v3/cmd/helm "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"; }

# promtool checks and unit-tests the chart's alerting rules. Built without Prometheus' service
# discoveries (remove_all_sd): promtool's rule tests need none, and the cloud SDKs they pull in
# would double the build.
tool_promtool() {
  build promtool "$PROMTOOL_VERSION" -- bash -c 'cd "$0" && go build -mod=mod -trimpath -tags remove_all_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$1" -o "$out" github.com/prometheus/prometheus/cmd/promtool' \
    "$here/promtool" "$PROMTOOL_VERSION"
}

# HAProxy flavour: the controller (Go, static) and HAProxy itself from Debian 13, which needs
# trixie's glibc (2.38+): its .debs are fetched with a private apt configuration (the system's
# sources stay as they are) and the binary, its loader and the libraries it loads are kept in a
# root of their own, at the paths they have there: what the router image carries.
tool_haproxy-ingress() {
  build haproxy-ingress "$HAPROXY_INGRESS_VERSION" -- go_build_in "$here/haproxy-ingress" github.com/haproxytech/kubernetes-ingress \
    "-X github.com/haproxytech/kubernetes-ingress/pkg/version.GitTag=$HAPROXY_INGRESS_VERSION"
}
haproxy_libs=(libc6 libssl3t64 libcrypt1 liblua5.4-0 libjemalloc2 libpcre2-8-0 libopentracing-c-wrapper0t64
  libopentracing1 libstdc++6 libgcc-s1 zlib1g libzstd1)
tool_haproxy() {
  local dir="$cache/haproxy-$HAPROXY_DEBIAN_VERSION"
  if [[ ! -f $dir/.done ]]; then
    log "fetching Debian 13's haproxy $HAPROXY_DEBIAN_VERSION and its libraries"
    rm -rf "$dir" && mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs" "$dir/full" "$dir/root"
    local keys=/usr/share/keyrings/debian-archive-keyring.gpg
    printf 'deb [signed-by=%s] http://deb.debian.org/debian trixie main\ndeb [signed-by=%s] %s trixie-security main\n' \
      "$keys" "$keys" http://deb.debian.org/debian-security >"$dir/apt/sources.list"
    local apt=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
      -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o Dir::State::Status=/dev/null
      -o Debug::NoLocking=1)
    apt-get -qq "${apt[@]}" update
    # Debian's archive keeps only a suite's newest build: once a security update replaces the
    # pinned one, take the newest of the same suite (and say so) rather than fail every fresh build.
    (cd "$dir/debs" && apt-get -qq "${apt[@]}" download "${haproxy_libs[@]}" &&
      { apt-get -qq "${apt[@]}" download "haproxy=$HAPROXY_DEBIAN_VERSION" 2>/dev/null ||
        { log "haproxy $HAPROXY_DEBIAN_VERSION is no longer in trixie; taking its newest build"; apt-get -qq "${apt[@]}" download haproxy; }; })
    local deb
    for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/full"; done
    # Only what haproxy loads, each at the path the loader looks for it (the default directories).
    local ld=$dir/full/usr/lib64/ld-linux-x86-64.so.2 lib
    install -D -m 0755 "$dir/full/usr/sbin/haproxy" "$dir/root/usr/local/sbin/haproxy"
    install -D -m 0755 "$ld" "$dir/root/lib64/ld-linux-x86-64.so.2"
    for lib in $("$ld" --library-path "$dir/full/usr/lib/x86_64-linux-gnu" --list "$dir/full/usr/sbin/haproxy" |
      awk '$2 == "=>" && $1 !~ /^\// { print $1 }'); do
      install -D -m 0644 "$(readlink -f "$dir/full/usr/lib/x86_64-linux-gnu/$lib")" "$dir/root/usr/lib/x86_64-linux-gnu/$lib"
    done
    rm -rf "$dir/apt" "$dir/debs" "$dir/full"
    "$dir/root/lib64/ld-linux-x86-64.so.2" --library-path "$dir/root/usr/lib/x86_64-linux-gnu" \
      "$dir/root/usr/local/sbin/haproxy" -v | grep -q "version ${HAPROXY_DEBIAN_VERSION%%.*}\."
    touch "$dir/.done"
  fi
  ln -sfn "$dir/root" "$links/haproxy-root"
}

# crds copies the CRDs the harness installs from the pinned upstream modules (downloaded, never
# imported): Cluster API's core CRDs, external-dns' DNSEndpoint CRD and cert-manager's CRDs.
tool_crds() {
  local dir="$cache/crds-capi-$CLUSTER_API_VERSION-edns-$EXTERNAL_DNS_VERSION-cm-$CERT_MANAGER_VERSION" src
  if [[ ! -f $dir/.done ]]; then
    log "copying CRDs (cluster-api $CLUSTER_API_VERSION, external-dns $EXTERNAL_DNS_VERSION, cert-manager $CERT_MANAGER_VERSION)"
    rm -rf "$dir" && mkdir -p "$dir/cluster-api" "$dir/external-dns" "$dir/cert-manager"
    src=$(go mod download -json "sigs.k8s.io/cluster-api@$CLUSTER_API_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    cp "$src"/core/config/crd/bases/*.yaml "$dir/cluster-api/"
    src=$(go mod download -json "sigs.k8s.io/external-dns@$EXTERNAL_DNS_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    cp "$src/config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml" "$dir/external-dns/"
    src=$(go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
    cp "$src"/deploy/crds/*.yaml "$dir/cert-manager/"
    chmod -R u+w "$dir"
    touch "$dir/.done"
  fi
  ln -sfn "$dir" "$links/crds"
}

all=(crds controller-gen golangci-lint etcd kubernetes containerd kwok external-dns helm traefik haproxy-ingress haproxy cert-manager pebble promtool)
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=("${all[@]}")
total=$SECONDS
for t in "${want[@]}"; do
  "tool_$t"
done
log "tools ready in $links ($((SECONDS - total))s)"
