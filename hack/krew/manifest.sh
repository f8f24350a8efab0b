#!/usr/bin/env bash
# manifest.sh VERSION DIST: archives dist's kubectl-shardgate binaries for krew (each with the
# LICENSE-free layout krew expects: the binary at the archive's root) and writes
# DIST/krew/shardgate.yaml from shardgate.yaml.tmpl with each archive's sha256.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$1 dist=$2
mkdir -p "$dist/krew"
declare -A sums
for p in linux-amd64 linux-arm64 darwin-arm64; do
  bin="$dist/kubectl-shardgate-$p"
  [[ -x $bin ]] || { echo "missing $bin" >&2; exit 1; }
  tmp=$(mktemp -d)
  cp "$bin" "$tmp/kubectl-shardgate"
  # Reproducible archives: fixed owner and time, so the sha256 depends on the binary alone.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp" -cf - kubectl-shardgate |
    gzip -n > "$dist/kubectl-shardgate-$p.tar.gz"
  rm -rf "$tmp"
  sums[$p]=$(sha256sum "$dist/kubectl-shardgate-$p.tar.gz" | cut -d' ' -f1)
done
sed -e "s|\${VERSION}|$version|g" -e "s|\${SHA256_LINUX_AMD64}|${sums[linux-amd64]}|" \
  -e "s|\${SHA256_LINUX_ARM64}|${sums[linux-arm64]}|" -e "s|\${SHA256_DARWIN_ARM64}|${sums[darwin-arm64]}|" \
  "$here/shardgate.yaml.tmpl" > "$dist/krew/shardgate.yaml"
echo "wrote $dist/krew/shardgate.yaml"
