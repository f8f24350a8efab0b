package framework

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
//
// The seed, every user cluster and BIND start side by side, and so do a cluster's nodes once its
// control plane serves: most of each start is waiting (an API server's readiness, a kubelet's
// registration), which overlaps even on two cores. Sequential, the demo's two clusters of two
// nodes took 53 s.
func StartEnvironment(t testing.TB, opts EnvironmentOptions) *Environment {
	t.Helper()
	crds, err := SeedCRDDirs()
	if err != nil {
		t.Fatal(err)
	}
	if opts.WithoutShardgateCRDs {
		crds = slices.DeleteFunc(crds, func(d string) bool { return strings.HasSuffix(d, filepath.Join("config", "crd", "bases")) })
	}
	began := time.Now()
	env := &Environment{Users: make([]*ControlPlane, opts.UserClusters),
		Fabrics: make([]*Fabric, opts.UserClusters), Nodes: make([][]*RealNode, opts.UserClusters)}
	tasks := []task{{"seed", func(t testing.TB) {
		env.Seed = StartControlPlane(t, "seed", ControlPlaneOptions{CRDDirs: crds, SimulatedNodes: opts.SeedNode,
			RealNodes: opts.SeedNode, APIServerFlags: opts.SeedAPIServerFlags})
	}}}
	names := []string{"seed"}
	if len(opts.RealNodes) > 0 {
		// The images every node imports are built once; building them beside the control
		// planes takes that off the first node's start.
		tasks = append(tasks, task{"images", func(t testing.TB) {
			if _, err := ImageTars(); err != nil {
				t.Fatalf("images: %v", err)
			}
		}})
		names = append(names, "images")
	}
	for i := range opts.UserClusters {
		name := fmt.Sprintf("user%d", i+1)
		tasks = append(tasks, task{name, func(t testing.TB) { env.startUserCluster(t, i, opts) }})
		names = append(names, name)
	}
	zone := cmp.Or(opts.Zone, DefaultZone)
	if opts.DNS {
		tasks = append(tasks, task{"bind", func(t testing.TB) { env.DNS = StartBIND(t, zone) }})
		names = append(names, "bind")
	}
	took := inParallel(t, tasks...)
	if opts.SeedNode {
		if len(env.Fabrics) == 0 || env.Fabrics[0] == nil {
			t.Fatal("SeedNode needs real nodes in user cluster 1")
		}
		if env.SeedNode, err = env.Fabrics[0].AddRealNode(context.Background(), env.Seed, RealNodeSpec{Name: "seed1"}); err != nil {
			t.Fatalf("seed node: %v", err)
		}
	}
	if opts.DNS {
		env.ExternalDNS = StartExternalDNS(t, env.Seed, env.DNS, ExternalDNSOptions{})
	}
	t.Logf("environment up in %.1fs (%s)", time.Since(began).Seconds(), tookLine(took, names...))
	return env
}

// startUserCluster starts user cluster i's control plane, then its fabric and real nodes (if
// opts gives it any), the nodes side by side.
func (env *Environment) startUserCluster(t testing.TB, i int, opts EnvironmentOptions) {
	var real []RealNodeSpec
	if i < len(opts.RealNodes) {
		real = opts.RealNodes[i]
	}
	name := fmt.Sprintf("user%d", i+1)
	cp := StartControlPlane(t, name, ControlPlaneOptions{
		SimulatedNodes: opts.SimulatedNodes || len(real) > 0, RealNodes: len(real) > 0})
	env.Users[i] = cp
	if len(real) == 0 {
		return
	}
	f := StartFabric(t)
	env.Fabrics[i] = f
	nodes := make([]*RealNode, len(real))
	tasks := make([]task, 0, len(real))
	for j, spec := range real {
		tasks = append(tasks, task{spec.Name, func(t testing.TB) {
			n, err := f.AddRealNode(context.Background(), cp, spec)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			nodes[j] = n
			t.Logf("%s: node %s up (%s)", name, n.Name, n.StartedIn)
		}})
	}
	inParallel(t, tasks...)
	env.Nodes[i] = nodes
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
