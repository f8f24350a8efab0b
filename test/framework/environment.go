package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// Fabrics[i] and Nodes[i] are user cluster i's network and real nodes (nil without any).
	Fabrics []*Fabric
	Nodes   [][]*RealNode
	// SeedNode is the seed's real node (on user cluster 1's fabric), with SeedNode set.
	SeedNode *RealNode
}

// EnvironmentOptions configures StartEnvironment.
type EnvironmentOptions struct {
	UserClusters int
	// SimulatedNodes gives every user cluster kube-scheduler, kube-controller-manager and kwok.
	SimulatedNodes bool
	// RealNodes[i] are real nodes (kubelet + containerd) for user cluster i, on a fabric of its
	// own; their pods really run. Such clusters also get kube-scheduler and the controllers.
	RealNodes [][]RealNodeSpec
	// SeedNode gives the seed kube-scheduler, the controllers and one real node on user cluster
	// 1's fabric (which needs real nodes), so that Jobs Shardgate creates in the seed run as real
	// pods.
	SeedNode bool
	// DNS starts BIND for Zone and external-dns against the seed.
	DNS  bool
	Zone string
	// SeedAPIServerFlags are set on the seed's kube-apiserver (e.g. an audit log).
	SeedAPIServerFlags map[string]string
	// WithoutShardgateCRDs leaves Shardgate's own CRDs out of the seed: the spec installs them
	// (e.g. the upgrade spec, a previous release's chart).
	WithoutShardgateCRDs bool
}

// StartEnvironment starts everything opts asks for; all of it is stopped when t ends.
func StartEnvironment(t testing.TB, opts EnvironmentOptions) *Environment {
	t.Helper()
	crds, err := SeedCRDDirs()
	if err != nil {
		t.Fatal(err)
	}
	if opts.WithoutShardgateCRDs {
		crds = slices.DeleteFunc(crds, func(d string) bool { return strings.HasSuffix(d, filepath.Join("config", "crd", "bases")) })
	}
	env := &Environment{Seed: StartControlPlane(t, "seed", ControlPlaneOptions{CRDDirs: crds, SimulatedNodes: opts.SeedNode, RealNodes: opts.SeedNode,
		APIServerFlags: opts.SeedAPIServerFlags})}
	for i := 1; i <= opts.UserClusters; i++ {
		var real []RealNodeSpec
		if i <= len(opts.RealNodes) {
			real = opts.RealNodes[i-1]
		}
		cp := StartControlPlane(t, fmt.Sprintf("user%d", i), ControlPlaneOptions{
			SimulatedNodes: opts.SimulatedNodes || len(real) > 0, RealNodes: len(real) > 0})
		env.Users = append(env.Users, cp)
		if len(real) == 0 {
			env.Fabrics, env.Nodes = append(env.Fabrics, nil), append(env.Nodes, nil)
			continue
		}
		f := StartFabric(t)
		var nodes []*RealNode
		for _, spec := range real {
			n, err := f.AddRealNode(context.Background(), cp, spec)
			if err != nil {
				t.Fatalf("user%d: %v", i, err)
			}
			nodes = append(nodes, n)
		}
		env.Fabrics, env.Nodes = append(env.Fabrics, f), append(env.Nodes, nodes)
	}
	if opts.SeedNode {
		if len(env.Fabrics) == 0 || env.Fabrics[0] == nil {
			t.Fatal("SeedNode needs real nodes in user cluster 1")
		}
		if env.SeedNode, err = env.Fabrics[0].AddRealNode(context.Background(), env.Seed, RealNodeSpec{Name: "seed1"}); err != nil {
			t.Fatalf("seed node: %v", err)
		}
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
