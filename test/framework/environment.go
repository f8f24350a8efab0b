package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// DefaultZone is the DNS zone the harness serves unless told otherwise (.test is reserved for
// testing, RFC 6761).
const DefaultZone = "shardgate.test"

// Environment is a seed control plane with Shardgate's, Cluster API's and external-dns' CRDs,
// N user-cluster control planes, and optionally BIND plus external-dns reading the seed.
type Environment struct {
	Seed        *ControlPlane
	Users       []*ControlPlane
	DNS         *DNSServer
	ExternalDNS *ExternalDNS
}

// EnvironmentOptions configures StartEnvironment.
type EnvironmentOptions struct {
	UserClusters int
	// SimulatedNodes gives every user cluster kube-scheduler, kube-controller-manager and kwok.
	SimulatedNodes bool
	// DNS starts BIND for Zone and external-dns against the seed.
	DNS  bool
	Zone string
}

// StartEnvironment starts everything opts asks for; all of it is stopped when t ends.
func StartEnvironment(t testing.TB, opts EnvironmentOptions) *Environment {
	t.Helper()
	crds, err := SeedCRDDirs()
	if err != nil {
		t.Fatal(err)
	}
	env := &Environment{Seed: StartControlPlane(t, "seed", ControlPlaneOptions{CRDDirs: crds})}
	for i := 1; i <= opts.UserClusters; i++ {
		env.Users = append(env.Users, StartControlPlane(t, fmt.Sprintf("user%d", i), ControlPlaneOptions{SimulatedNodes: opts.SimulatedNodes}))
	}
	if opts.DNS {
		zone := opts.Zone
		if zone == "" {
			zone = DefaultZone
		}
		env.DNS = StartBIND(t, zone)
		env.ExternalDNS = StartExternalDNS(t, env.Seed, env.DNS, ExternalDNSOptions{})
	}
	return env
}

// SeedCRDDirs are the CRD folders a seed needs: Cluster API's core CRDs and external-dns'
// DNSEndpoint (copied from their pinned modules by hack/tools/build.sh), and Shardgate's own
// (config/crd/bases, when generated).
func SeedCRDDirs() ([]string, error) {
	tools, err := LocateTools("crds/cluster-api", "crds/external-dns")
	if err != nil {
		return nil, err
	}
	dirs := []string{tools.Path("crds/cluster-api"), tools.Path("crds/external-dns")}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	own := filepath.Join(root, "config", "crd", "bases")
	if entries, err := os.ReadDir(own); err == nil && len(entries) > 0 {
		dirs = append(dirs, own)
	}
	return dirs, nil
}
