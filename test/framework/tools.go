package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tools locates the real component binaries that hack/tools/build.sh built and linked into
// bin/tools (or $SHARDGATE_TOOLS_BIN).
type Tools struct{ Dir string }

// The binaries and CRD folders the harness uses, by their name in the tools directory.
const (
	ToolKubeAPIServer         = "kube-apiserver"
	ToolKubeScheduler         = "kube-scheduler"
	ToolKubeControllerManager = "kube-controller-manager"
	ToolEtcd                  = "etcd"
	ToolKwok                  = "kwok"
	ToolExternalDNS           = "external-dns"
	ToolTraefik               = "traefik"
	ToolHAProxyIngress        = "haproxy-ingress"
	// ToolHAProxyRoot is a folder: Debian 13's haproxy, its loader and libraries at their paths.
	ToolHAProxyRoot    = "haproxy-root"
	ToolHelm           = "helm"
	ToolKubelet        = "kubelet"
	ToolContainerd     = "containerd"
	ToolCtr            = "ctr"
	ToolContainerdShim = "containerd-shim-runc-v2"
	ToolCertManager    = "cert-manager-controller"
	ToolPebble         = "pebble"
)

// LocateTools finds the tools directory and checks that it holds every binary named.
func LocateTools(names ...string) (Tools, error) {
	dir := os.Getenv("SHARDGATE_TOOLS_BIN")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return Tools{}, err
		}
		dir = filepath.Join(root, "bin", "tools")
	}
	t := Tools{Dir: dir}
	var missing []string
	for _, n := range names {
		if _, err := os.Stat(t.Path(n)); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("tools %s missing in %s: run `make tools` (hack/tools/build.sh) first",
			strings.Join(missing, ", "), dir)
	}
	return t, nil
}

// Path of a tool binary (or folder, e.g. "crds/cluster-api").
func (t Tools) Path(name string) string { return filepath.Join(t.Dir, name) }

// RepoRoot walks up from the working directory to the Shardgate module root.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/shardgate/shardgate\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no Shardgate go.mod above the working directory")
		}
		dir = parent
	}
}
