package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

// auditPolicy logs who wrote each ClusterIngress and DNSEndpoint (metadata only), and every Lease
// written with its content (who holds each cluster's fence, from when).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: shardgate.io
    resources: ["clusteringresses", "clusteringresses/status"]
  - group: externaldns.k8s.io
    resources: ["dnsendpoints"]
- level: Request
  verbs: ["create", "update"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: None
`

// TestSharding: three controller replicas share the clusters of one seed (--sharding). Every
// cluster is published; the seed API server's audit log shows each cluster's ClusterIngress and
// DNSEndpoint written by one replica at a time (a hand-over may pass a cluster on, never back and
// forth between writers); SIGKILL of a replica hands its clusters to the others, who hold their
// fences within 20 s and follow their nodes again.
func TestSharding(t *testing.T) {
	const clusters, replicas = 12, 3 // 30 under faults: BenchmarkShardingFaults (make bench)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env, auditLog := auditedEnvironment(t, clusters)
	seed, zone := env.Seed, env.DNS.Zone
	createProfileB(ctx, t, seed)
	for i, u := range env.Users {
		createReadyNode(ctx, t, u, "n1", fmt.Sprintf("127.0.%d.1", 100+i))
		registerKubeconfigSecret(ctx, t, seed, "default", fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i), u, nil)
	}
	// The replicas have the chart's RBAC, released in their Lease namespace: their Leases and
	// fences are allowed there only.
	sa := chartServiceAccount(ctx, t, seed, "default")
	ctls := map[string]*framework.Controller{}
	for r := 1; r <= replicas; r++ {
		id := fmt.Sprintf("r%d", r)
		ctls[id] = framework.StartControllerAs(t, seed, sa, "--dns-zone="+zone, "--sharding", "--replica-id="+id,
			"--leader-election-namespace=default", "--sharding-lease-duration=8s")
	}
	answered := func(t *testing.T, within time.Duration, want func(i int) []string) {
		t.Helper()
		for i := range clusters {
			waitAnswerWithin(ctx, t, env.DNS, fmt.Sprintf("x.c%d.%s", i, zone), within, want(i))
		}
	}
	one := func(i int) []string { return []string{fmt.Sprintf("127.0.%d.1", 100+i)} }
	holders := func() map[string]string {
		var leases coordinationv1.LeaseList
		must(t, seed.Client.List(ctx, &leases, client.InNamespace("default"), client.MatchingLabels{"shardgate.io/lease": "cluster"}))
		out := map[string]string{}
		for _, l := range leases.Items {
			// Cluster-scoped keys (profiles, routed-IP classes: "/<name>") are fenced too; count clusters.
			if k := l.Annotations["shardgate.io/cluster"]; !strings.HasPrefix(k, "/") {
				out[k] = ptr.Deref(l.Spec.HolderIdentity, "")
			}
		}
		return out
	}
	perReplica := func(h map[string]string) map[string]int {
		n := map[string]int{}
		for _, r := range h {
			n[r]++
		}
		return n
	}

	t.Run("three replicas share the clusters, one writer each", func(t *testing.T) {
		start := time.Now()
		answered(t, 3*time.Minute, one)
		t.Logf("%d clusters published by %d replicas in %s", clusters, replicas, time.Since(start).Round(time.Second))
		var h map[string]string
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			h = holders()
			n := perReplica(h)
			return len(h) == clusters && n[""] == 0 && n["r1"] > 0 && n["r2"] > 0 && n["r3"] > 0, fmt.Sprintf("fences per replica %v", n)
		})
		t.Logf("clusters per replica: %v", perReplica(h))
		checkFencedWrites(t, auditLog, time.Time{}, "")
	})

	// The killed replica's clusters, which get a second node.
	var theirs []string
	var killed time.Time
	published := func(i int) []string {
		if slices.Contains(theirs, fmt.Sprintf("default/c%d", i)) {
			return []string{fmt.Sprintf("127.0.%d.1", 100+i), fmt.Sprintf("127.0.%d.2", 100+i)}
		}
		return one(i)
	}
	t.Run("a killed replica's clusters are taken over within 20 s", func(t *testing.T) {
		before := holders()
		for c, r := range before {
			if r == "r2" {
				theirs = append(theirs, c)
			}
		}
		sort.Strings(theirs)
		killed = time.Now()
		must(t, ctls["r2"].Kill())
		eventually(ctx, t, 20*time.Second, func() (bool, string) {
			h := holders()
			for _, c := range theirs {
				if h[c] == "r2" || h[c] == "" {
					return false, fmt.Sprintf("%s still held by %q", c, h[c])
				}
			}
			return true, ""
		})
		t.Logf("r2's %d clusters held by r1/r3 %s after its SIGKILL", len(theirs), time.Since(killed).Round(100*time.Millisecond))
		// Its clusters follow their nodes again: a node added in each is published.
		for _, c := range theirs {
			var i int
			_, _ = fmt.Sscanf(c, "default/c%d", &i)
			createReadyNode(ctx, t, env.Users[i], "n2", fmt.Sprintf("127.0.%d.2", 100+i))
		}
		for _, c := range theirs {
			var i int
			_, _ = fmt.Sscanf(c, "default/c%d", &i)
			waitAnswerWithin(ctx, t, env.DNS, fmt.Sprintf("x.c%d.%s", i, zone), 30*time.Second, []string{fmt.Sprintf("127.0.%d.1", 100+i), fmt.Sprintf("127.0.%d.2", 100+i)})
		}
		t.Logf("kill → every one of r2's clusters publishes a new node: %s", time.Since(killed).Round(100*time.Millisecond))
		// No record of a live cluster went missing meanwhile: every cluster still answers.
		answered(t, 5*time.Second, published)
		checkFencedWrites(t, auditLog, killed, "r2")
	})

	t.Run("a seed API server restart loses no record", func(t *testing.T) {
		// BIND is asked for every cluster's name every second from the stop until the clusters
		// are held again: no answer may be missing or wrong
		// (the Leases lapse while the seed is gone; nothing may take that for a cause to delete).
		sampleCtx, stopSampling := context.WithCancel(ctx)
		samples, wrong := make(chan int, 1), make(chan string, 1)
		go func() {
			n, bad := 0, []string{}
			defer func() { samples <- n; wrong <- strings.Join(bad, "; ") }()
			for sampleCtx.Err() == nil {
				for i := range clusters {
					name := fmt.Sprintf("x.c%d.%s", i, zone)
					a, err := env.DNS.Lookup(sampleCtx, name, 1)
					if sampleCtx.Err() != nil {
						return
					}
					n++
					got := []string{}
					if err == nil {
						got = slices.Sorted(slices.Values(a.Values))
					}
					if want := published(i); !slices.Equal(got, want) && len(bad) < 10 {
						bad = append(bad, fmt.Sprintf("%s at %s answered %v (%v), want %v", name, time.Now().Format("15:04:05.000"), got, err, want))
					}
				}
				select {
				case <-sampleCtx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
		stopped := time.Now()
		must(t, seed.StopAPIServer())
		time.Sleep(15 * time.Second) // longer than the Leases (8 s): every replica's lapses
		must(t, seed.StartAPIServer(ctx))
		t.Logf("seed API server down for %s", time.Since(stopped).Round(100*time.Millisecond))
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			h := holders()
			n := perReplica(h)
			return len(h) == clusters && n["r1"]+n["r3"] == clusters, fmt.Sprintf("fences per replica %v", n)
		})
		t.Logf("every cluster held again %s after the stop", time.Since(stopped).Round(100*time.Millisecond))
		stopSampling()
		n, bad := <-samples, <-wrong
		if bad != "" {
			t.Errorf("records missing or wrong around the restart: %s", bad)
		}
		t.Logf("%d answers sampled from the stop until every cluster was held again, none missing or wrong", n)
		// The clusters are followed again: a node added after the restart is published. (60 s: on
		// a loaded machine the restarted API server answers slowly at first, and a replica whose
		// renewals come late lets its fences go and takes them again, see the #18 note.)
		createReadyNode(ctx, t, env.Users[0], "n3", "127.0.100.3")
		want0 := append(published(0), "127.0.100.3")
		slices.Sort(want0)
		added := time.Now()
		// Shardgate's part (the DNSEndpoint) and external-dns' (BIND) are timed apart: external-dns'
		// own watch of the restarted seed recovers on its own schedule.
		eventually(ctx, t, 60*time.Second, func() (bool, string) {
			got := wildcardTargets(ctx, t, seed, "*.c0."+zone)
			return slices.Equal(got, want0), fmt.Sprintf("the DNSEndpoint of c0 holds %v, want %v", got, want0)
		})
		written := time.Since(added)
		// external-dns' watch comes back by client-go's backoff, which grew to up to 30 s while
		// the seed was down, then relists: 20 s on a quiet machine, past 60 s beside other tests.
		waitAnswerWithin(ctx, t, env.DNS, "x.c0."+zone, 2*time.Minute, want0)
		t.Logf("a node added after the restart: in the DNSEndpoint after %s, answered by BIND after %s", written.Round(100*time.Millisecond),
			time.Since(added).Round(100*time.Millisecond))
		checkFencedWrites(t, auditLog, killed, "r2")
	})
}

// wildcardTargets are the sorted targets of the seed's DNSEndpoint record named name (nil when none).
func wildcardTargets(ctx context.Context, t testing.TB, seed *framework.ControlPlane, name string) []string {
	var eps dnsrecords.DNSEndpointList
	must(t, seed.Client.List(ctx, &eps, client.InNamespace("default")))
	for _, ep := range eps.Items {
		for _, e := range ep.Spec.Endpoints {
			if e.DNSName == name {
				return slices.Sorted(slices.Values(e.Targets))
			}
		}
	}
	return nil
}

// auditedEnvironment starts a seed whose API server keeps an audit log of writes to
// ClusterIngresses and DNSEndpoints (auditPolicy), BIND and external-dns, and n user clusters.
func auditedEnvironment(t testing.TB, n int) (*framework.Environment, string) {
	dir := framework.TestDir(t)
	policy := filepath.Join(dir, "audit-policy.yaml")
	must(t, os.WriteFile(policy, []byte(auditPolicy), 0o644))
	auditLog := filepath.Join(dir, "audit.log")
	return framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: n, DNS: true,
		SeedAPIServerFlags: map[string]string{"audit-policy-file": policy, "audit-log-path": auditLog, "audit-log-format": "json"}}), auditLog
}

// waitAnswerWithin waits until BIND answers exactly want for name.
func waitAnswerWithin(ctx context.Context, t *testing.T, s *framework.DNSServer, name string, within time.Duration, want []string) {
	t.Helper()
	eventually(ctx, t, within, func() (bool, string) {
		a, err := s.Lookup(ctx, name, 1)
		if err != nil {
			return false, err.Error()
		}
		got := slices.Clone(a.Values)
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("%s answers %v, want %v", name, got, want)
	})
}

// auditEvent is what the check reads of an audit log line.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestObject *struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			HolderIdentity *string `json:"holderIdentity"`
		} `json:"spec"`
	} `json:"requestObject"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// fenceChange: from At, Holder holds the fence of a cluster ("" when released).
type fenceChange struct {
	At     time.Time
	Holder string
}

// checkFencedWrites reads the seed's audit log: every write a replica made to a cluster's
// ClusterIngress or DNSEndpoint must fall while that replica held the cluster's fence (its Lease's
// holder, as the Lease writes in the same log say). So no two replicas ever wrote for one cluster
// at once, hand-overs and restarts included. A replica killed at killed (non-zero) wrote nothing
// after.
func checkFencedWrites(t testing.TB, path string, killed time.Time, killedReplica string) {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	fences := map[string][]fenceChange{}
	type write struct {
		at              time.Time
		replica, object string
	}
	var writes []write
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ResponseStatus.Code >= 300 {
			continue
		}
		if e.ObjectRef.Resource == "leases" {
			if e.RequestObject == nil || !strings.HasPrefix(e.ObjectRef.Name, "shardgate-cluster-") {
				continue
			}
			cluster := e.RequestObject.Metadata.Annotations["shardgate.io/cluster"]
			fences[cluster] = append(fences[cluster], fenceChange{At: e.StageTimestamp, Holder: ptr.Deref(e.RequestObject.Spec.HolderIdentity, "")})
			continue
		}
		if !strings.HasPrefix(e.UserAgent, "shardgate/") {
			continue
		}
		replica := strings.SplitN(strings.TrimPrefix(e.UserAgent, "shardgate/"), " ", 2)[0]
		writes = append(writes, write{at: e.StageTimestamp, replica: replica, object: e.ObjectRef.Resource + " " + e.ObjectRef.Namespace + "/" + e.ObjectRef.Name})
	}
	must(t, sc.Err())
	if len(writes) == 0 || len(fences) == 0 {
		t.Fatalf("the audit log holds %d writes by replicas and fences of %d clusters", len(writes), len(fences))
	}
	holderAt := func(cluster string, at time.Time) string {
		h := ""
		for _, c := range fences[cluster] {
			if c.At.After(at) {
				break
			}
			h = c.Holder
		}
		return h
	}
	violations, changes := 0, 0
	for _, fc := range fences {
		changes += len(fc)
	}
	for _, w := range writes {
		cluster := strings.SplitN(w.object, " ", 2)[1]
		if h := holderAt(cluster, w.at); h != w.replica {
			violations++
			if violations <= 10 {
				t.Errorf("%s written by %s at %s while the fence was held by %q", w.object, w.replica, w.at.Format("15:04:05.000000"), h)
			}
		}
		if !killed.IsZero() && w.replica == killedReplica && w.at.After(killed.Add(time.Second)) {
			t.Errorf("%s written by %s at %s, after it was killed", w.object, w.replica, w.at.Format("15:04:05.000"))
		}
	}
	t.Logf("audit log: %d writes by replicas, each within its replica's fence (%d violations); %d fence changes over %d clusters",
		len(writes), violations, changes, len(fences))
}
