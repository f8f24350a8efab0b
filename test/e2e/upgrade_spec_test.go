package e2e

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/test/framework"
)

// previousRelease is hack/previous-release: the release the upgrade spec starts from.
type previousRelease struct {
	Commit, Chart, Image string
}

func readPreviousRelease(root string) (previousRelease, error) {
	f, err := os.Open(filepath.Join(root, "hack", "previous-release"))
	if err != nil {
		return previousRelease{}, err
	}
	defer f.Close()
	var r previousRelease
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch k {
		case "commit":
			r.Commit = v
		case "chart":
			r.Chart = v
		case "image":
			r.Image = v
		}
	}
	if r.Commit == "" || r.Chart == "" || !strings.Contains(r.Image, ":") {
		return r, fmt.Errorf("hack/previous-release needs commit=, chart= and image=<repository>:<tag>: %+v", r)
	}
	return r, s.Err()
}

// previousReleaseTree returns the previous release's sources with its seed-controller built in
// bin/ (named as in the image, so that its default field manager is the image's), built once per
// commit into $SHARDGATE_PREVIOUS_RELEASE_CACHE (default ~/.cache/shardgate/previous-release,
// beside the tools): extracted from git and built with the shared module and build caches. It
// fails with what to do when the commit is not in the clone (a shallow one).
func previousReleaseTree(root string, rel previousRelease) (string, error) {
	base := os.Getenv("SHARDGATE_PREVIOUS_RELEASE_CACHE")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".cache", "shardgate", "previous-release")
	}
	dir := filepath.Join(base, rel.Commit)
	if _, err := os.Stat(filepath.Join(dir, "bin", "seed-controller")); err == nil {
		return dir, checkPreviousChart(dir, rel)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(base, rel.Commit+".tmp-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // gone once renamed
	if err := buildPreviousRelease(root, rel, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "bin", "seed-controller")); serr != nil { // another run's rename won
			return "", err
		}
	}
	return dir, checkPreviousChart(dir, rel)
}

// buildPreviousRelease extracts rel's tree from git into dir and builds bin/seed-controller there.
func buildPreviousRelease(root string, rel previousRelease, dir string) error {
	if exec.Command("git", "-C", root, "cat-file", "-e", rel.Commit+"^{commit}").Run() != nil {
		// A shallow clone: its origin (the repository it was cloned from) has the commit.
		_ = exec.Command("git", "-C", root, "fetch", "--quiet", "origin", rel.Commit).Run()
	}
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", rel.Commit+"^{commit}").CombinedOutput(); err != nil {
		return fmt.Errorf("the previous release's commit %s (hack/previous-release) is not in this clone (%v %s): "+
			"the upgrade spec needs it; fetch it (git fetch --unshallow, or git fetch origin %s)", rel.Commit, err, out, rel.Commit)
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", rel.Commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return err
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w %s", rel.Commit, err, stderr.String())
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("untar %s: %w", rel.Commit, err)
	}
	if err := checkPreviousChart(dir, rel); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "seed-controller"), "./cmd/seed-controller")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build the previous release's seed-controller: %w\n%s", err, out)
	}
	return nil
}

// checkPreviousChart: the commit's chart is the version hack/previous-release names.
func checkPreviousChart(dir string, rel previousRelease) error {
	chartYAML, err := os.ReadFile(filepath.Join(dir, chart, "Chart.yaml"))
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Split(string(chartYAML), "\n"), "version: "+rel.Chart) {
		return fmt.Errorf("hack/previous-release says chart %s, but %s's Chart.yaml says:\n%s", rel.Chart, rel.Commit, chartYAML)
	}
	return nil
}

// UpgradeSpecInput is what UpgradeSpec needs: a seed without Shardgate's CRDs (the previous
// release's chart installs them), one user cluster with a real node, BIND with external-dns,
// Pebble and cert-manager, and the previous release's tree and controller binary.
type UpgradeSpecInput struct {
	Seed        *framework.ControlPlane
	User        *framework.ControlPlane
	DNS         *framework.DNSServer
	Pebble      *framework.Pebble
	CertManager *framework.CertManager
	Fabric      *framework.Fabric
	Node        *framework.RealNode
	Previous    previousRelease
	// PreviousTree holds the previous release's sources (its chart); PreviousBinary its controller.
	PreviousTree, PreviousBinary string
}

// UpgradeSpec proves that an upgrade from the previous release to this tree, and a rollback to the
// previous release, lose nothing: with a cluster published through the previous release (a router
// shard with an ACME certificate, and a claimed shard), while BIND is polled for the cluster's and
// the claim's wildcard names and requests go through both shards' routers the whole time, the
// controller is replaced as a chart upgrade replaces its pod (the new one starts, the old one
// stops and releases the leader Lease), settles, and is replaced back. No DNS answer is lost, no
// request fails, no router pod is restarted or replaced unless its rendered spec changed, and the
// status written by one version is read and written on by the other: after the upgrade no field
// of it is left to the previous release's update-style field manager (csaupgrade's hand-over to
// the apply manager), after the rollback the previous release writes it again and it still has
// its domain, targets, certificate, claim and Ready.
//
// What of the chart is exercised: the previous release's chart is `helm install`ed into the seed
// (its CRDs, RBAC, ServiceAccount, Deployment), this tree's is `helm upgrade`d onto it after its
// CRDs are applied (Helm never upgrades crds/), and `helm rollback` goes back (the CRDs stay this
// tree's, as in a real rollback). Each controller runs as a process with the args, the
// POD_NAMESPACE/POD_NAME/SHARDGATE_MEMORY_LIMIT environment and the ServiceAccount token the
// Deployment of that revision gives it, less the listen addresses and the canary (the harness
// binds its own loopback ports; the canary would resolve the test zone through the machine's
// resolver). Not exercised: the image (the seed runs no containers; the binary is built from the
// commit instead of pulled by tag), the Deployment's rollout itself (probes, surge: the harness
// orders start and stop as a RollingUpdate with maxUnavailable 0 does), the chart's external-dns
// (the harness runs its own) and its ACME Issuer (the spec creates one for Pebble), replicas > 1.
func UpgradeSpec(ctx context.Context, t *testing.T, inputGetter func() UpgradeSpecInput) {
	in := inputGetter()
	seed, u, zone := in.Seed, in.User, in.DNS.Zone
	const ns = "shardgate" // the release namespace: kubeconfig Secrets, certificates, Lease
	start := time.Now()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(kc, mustKubeconfig(t, seed), 0o600))
	must(t, seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	_, tag, _ := strings.Cut(in.Previous.Image, ":")
	set := []string{"--kubeconfig", kc, "--namespace", ns, "--set", "dns.zone=" + zone, "--set", "defaultProfile.enabled=false"}
	if out, err := helm(t, append([]string{"install", "shardgate", filepath.Join(in.PreviousTree, chart), "--set", "image.tag=" + tag}, set...)...); err != nil {
		t.Fatalf("helm install (previous release %s): %v\n%s", in.Previous.Commit, err, out)
	}
	token, err := framework.ServiceAccountToken(seed, ns, "shardgate")
	must(t, err)
	saKC, err := framework.KubeconfigFor(seed.Host(), seed.Config.CAData, token)
	must(t, err)
	// run starts the controller the release's Deployment describes, with binary.
	run := func(name, binary string) *framework.Controller {
		t.Helper()
		d := &appsv1.Deployment{}
		must(t, seed.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shardgate"}, d))
		c := d.Spec.Template.Spec.Containers[0]
		var args []string
		for _, a := range c.Args {
			if !strings.HasPrefix(a, "--metrics-bind-address") && !strings.HasPrefix(a, "--health-probe-bind-address") &&
				!strings.HasPrefix(a, "--status-bind-address") && !strings.HasPrefix(a, "--metrics-cert-dir") && !strings.HasPrefix(a, "--canary-") &&
				// The webhook's port on the host would collide with other specs' (TestAdmission runs it).
				!strings.HasPrefix(a, "--admission-webhook-") {
				args = append(args, a)
			}
		}
		env := []string{"POD_NAMESPACE=" + ns, "POD_NAME=" + name}
		if l := c.Resources.Limits.Memory(); l != nil && !l.IsZero() {
			env = append(env, fmt.Sprintf("SHARDGATE_MEMORY_LIMIT=%d", l.Value()))
		}
		t.Logf("%s: %s (image %s) %v", name, binary, c.Image, args)
		return framework.StartControllerWith(t, seed, framework.ControllerOptions{Binary: binary, Name: name, Kubeconfig: saKC, Env: env}, args...)
	}
	headBinary, err := framework.ControllerBinary()
	must(t, err)
	old := run("seed-controller-previous", in.PreviousBinary)

	// Publish through the previous release: a default shard on the node's host network with a
	// certificate from Pebble, and a claim's shard behind a NodePort Service (reached through
	// its pod: the harness has no kube-proxy; one node cannot hold two host-network shards).
	must(t, in.CertManager.CreateACMEIssuer(ctx, seed, in.Pebble, in.DNS, framework.ACMEIssuer{Name: "pebble", Namespace: ns, SkipSelfCheck: true}))
	roots, err := in.Pebble.Roots(ctx)
	must(t, err)
	sel := map[string]string{"upgrade": "yes"}
	must(t, seed.Client.Create(ctx, &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "upgrade"}, Spec: v1alpha1.IngressProfileSpec{
		ClusterSelector: metav1.LabelSelector{MatchLabels: sel}, DNS: v1alpha1.DNSSettings{TTL: 5},
		Shards: []v1alpha1.ShardSpec{realRouter(v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName})},
		TLS:    v1alpha1.TLSSettings{IssuerRef: &v1alpha1.IssuerReference{Name: "pebble", Kind: v1alpha1.KindIssuer}},
		Claims: v1alpha1.ClaimSettings{Allowed: true, Publishing: v1alpha1.PublishNodePort, Image: framework.TraefikImage, ImagePullPolicy: corev1.PullNever,
			MaxReplicas: 1, MaxPerNamespace: 1, MaxResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
	}}))
	const team = "team-a"
	must(t, u.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}))
	must(t, framework.DeployBackend(ctx, u, team, "web", 1))
	appHost := "app.u1." + zone
	must(t, u.Client.Create(ctx, nsIngress(team, "app", appHost)))
	must(t, u.Client.Create(ctx, nsIngress(team, "claimed", "")))
	// Each release runs with its own user-cluster RBAC, as the operator guide's upgrade says: the
	// router roles must grant exactly what the running release renders.
	previousRBAC := filepath.Join(in.PreviousTree, "config/user-cluster/rbac.yaml")
	ukc, err := u.RestrictedKubeconfig(ctx, "shardgate-upgrade", previousRBAC)
	must(t, err)
	putKubeconfigSecret(ctx, t, seed, ns, "u1", "u1", ukc, sel)
	k := types.NamespacedName{Namespace: ns, Name: "u1"}
	nodeIP, claimShard := in.Node.IP, "mine-"+team
	clusterName, claimName := "probe.u1."+zone, "probe."+names.ShardDomain(claimShard, "u1."+zone)

	var claimedHost, claimPod string
	var before *v1alpha1.ClusterIngress
	if !t.Run("the previous release publishes a cluster with TLS and a claim", func(t *testing.T) {
		waitAnswer(ctx, t, in.DNS, clusterName, framework.AnswerIs(nodeIP))
		eventually(ctx, t, 4*time.Minute, func() (bool, string) {
			code, body, _, err := in.Fabric.GetTLS(ctx, nodeIP+":443", appHost, roots)
			return err == nil && code == 200, fmt.Sprintf("https://%s: %d %q %v", appHost, code, body, err)
		})
		// IngressClaim's CRD is Shardgate's to install into the user cluster once it engaged it.
		eventually(ctx, t, time.Minute, func() (bool, string) {
			err := u.Client.Create(ctx, &v1alpha1.IngressClaim{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "mine"}, Spec: v1alpha1.IngressClaimSpec{
				Ingresses: []corev1.LocalObjectReference{{Name: "claimed"}}, Replicas: 1, ReclaimPolicy: v1alpha1.ReclaimRetain}})
			return err == nil, fmt.Sprintf("IngressClaim: %v", err)
		})
		c := &claimsEnv{ctx: ctx, t: t, u: u}
		c.waitPhase(team, "mine", v1alpha1.ClaimBound)
		c.waitShard(team, "claimed", claimShard)
		eventually(ctx, t, time.Minute, func() (bool, string) {
			claimedHost = c.ingress(team, "claimed").Spec.Rules[0].Host
			return strings.HasSuffix(claimedHost, "."+names.ShardDomain(claimShard, "u1."+zone)), "claimed Ingress' host " + claimedHost
		})
		waitAnswer(ctx, t, in.DNS, claimName, func(a framework.Answer) bool { return a.Rcode == dns.RcodeSuccess && len(a.Values) > 0 })
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			pods := &corev1.PodList{}
			must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace), client.MatchingLabels(names.RouterSelector(claimShard))))
			if len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
				return false, fmt.Sprintf("%d routers of %s", len(pods.Items), claimShard)
			}
			claimPod = pods.Items[0].Status.PodIP
			code, body, err := in.Fabric.Get(ctx, claimPod+":8000", claimedHost)
			return err == nil && code == 200, fmt.Sprintf("claimed router %s for %s: %d %q %v", claimPod, claimedHost, code, body, err)
		})
		waitCertificate(ctx, t, seed, k, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
		waitCondition(ctx, t, seed, k, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady)
		before = getCI(ctx, t, seed, k)
		if len(before.Status.Claims) != 1 || before.Status.Claims[0].Shard != claimShard || before.Status.Certificate == nil {
			t.Fatalf("status.claims %+v, certificate %+v", before.Status.Claims, before.Status.Certificate)
		}
		t.Logf("published by the previous release in %s: domain %s, targets %v, status managers %v",
			time.Since(start).Round(100*time.Millisecond), before.Status.Domain, before.Status.Targets, statusManagers(before))
	}) {
		return
	}
	routers := snapshotRouters(ctx, t, u)

	// Watchers for the whole upgrade and rollback: BIND answers for both wildcard names, HTTPS
	// through the default shard (resolved through BIND), HTTP through the claimed shard's router.
	var lost, queryErrs atomic.Int64
	var lostLog atomic.Value
	stopDNS := loop(ctx, 100*time.Millisecond, func(ctx context.Context, i int) (bool, bool) {
		name := []string{clusterName, claimName}[i%2]
		a, err := in.DNS.Lookup(ctx, name, dns.TypeA)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				queryErrs.Add(1)
				lostLog.Store(fmt.Sprintf("%s %s: %v", time.Now().Format(time.StampMilli), name, err))
			}
			return true, true
		case a.Rcode != dns.RcodeSuccess || len(a.Values) == 0:
			lost.Add(1)
			lostLog.Store(fmt.Sprintf("%s %s: %s", time.Now().Format(time.StampMilli), name, a))
			return true, true
		}
		return true, false
	})
	stopHTTPS := loopTLSClient(ctx, in.DNS, in.Fabric, appHost, roots)
	stopClaim := loop(ctx, 100*time.Millisecond, func(ctx context.Context, _ int) (bool, bool) {
		code, _, err := in.Fabric.Get(ctx, claimPod+":8000", claimedHost)
		return true, err != nil || code != 200
	})
	watching := time.Now()

	// addExtra / deleteExtra change what the allocation controller reports (status.routes), so
	// that the controller that runs has to write the status the other one wrote.
	extra := nsIngress(team, "extra", "extra.u1."+zone)
	waitRoutes := func(t *testing.T, want int32, writer metav1.ManagedFieldsOperationType, since time.Time) *v1alpha1.ClusterIngress {
		t.Helper()
		var ci *v1alpha1.ClusterIngress
		eventually(ctx, t, 2*time.Minute, func() (bool, string) {
			ci = getCI(ctx, t, seed, k)
			r := meta.FindStatusCondition(ci.Status.Conditions, v1alpha1.ConditionReady)
			wrote := lastStatusWrite(ci, writer)
			return ci.Status.Routes == want && r != nil && r.Status == metav1.ConditionTrue && wrote != nil && !wrote.Before(&metav1.Time{Time: since.Truncate(time.Second)}),
				fmt.Sprintf("routes %d (want %d), Ready %+v, status managers %v, %s last wrote at %v", ci.Status.Routes, want, r, statusManagers(ci), writer, wrote)
		})
		return ci
	}
	sameStatus := func(t *testing.T, ci *v1alpha1.ClusterIngress) {
		t.Helper()
		s, b := ci.Status, before.Status
		if s.Domain != b.Domain || !slices.Equal(s.Targets, b.Targets) || s.Certificate == nil || s.Certificate.SerialNumber != b.Certificate.SerialNumber ||
			len(s.Claims) != 1 || s.Claims[0].Shard != claimShard {
			t.Errorf("status changed: domain %s targets %v certificate %+v claims %+v; before: domain %s targets %v certificate %+v claims %+v",
				s.Domain, s.Targets, s.Certificate, s.Claims, b.Domain, b.Targets, b.Certificate, b.Claims)
		}
	}

	upgraded := t.Run("upgrade to this tree", func(t *testing.T) {
		// Helm never upgrades crds/: the operator applies the new release's CRDs first, and its
		// user-cluster RBAC.
		applyChartCRDs(ctx, t, seed, chart)
		must(t, u.ApplyClusterRoles(ctx, "config/user-cluster/rbac.yaml"))
		if out, err := helm(t, append([]string{"upgrade", "shardgate", chart}, set...)...); err != nil {
			t.Fatalf("helm upgrade: %v\n%s", err, out)
		}
		switched := time.Now()
		head := run("seed-controller-head", headBinary)
		must(t, old.Stop())
		must(t, u.Client.Create(ctx, extra))
		ci := waitRoutes(t, before.Status.Routes+1, "Apply", switched)
		t.Logf("upgrade settled %s after the switch; status managers %v", time.Since(switched).Round(100*time.Millisecond), statusManagers(ci))
		// Handed over: every status field the previous release wrote by merge patch now
		// belongs to the apply manager, so a field this tree stops reporting goes.
		for _, m := range ci.ManagedFields {
			if m.Subresource == "status" && m.Operation != metav1.ManagedFieldsOperationApply {
				t.Errorf("after the upgrade %s (%s) still owns status fields: %s", m.Manager, m.Operation, m.FieldsV1.GetRawString())
			}
		}
		sameStatus(t, ci)
		checkRouters(ctx, t, u, routers)
		noReconcileErrors(t, head, switched)
		old = head
	})
	if !upgraded {
		return
	}

	t.Run("rollback to the previous release", func(t *testing.T) {
		if out, err := helm(t, "rollback", "shardgate", "1", "--kubeconfig", kc, "--namespace", ns); err != nil {
			t.Fatalf("helm rollback: %v\n%s", err, out)
		}
		must(t, u.ApplyClusterRoles(ctx, previousRBAC))
		switched := time.Now()
		prev := run("seed-controller-previous-again", in.PreviousBinary)
		must(t, old.Stop())
		must(t, u.Client.Delete(ctx, extra))
		// The previous release reads the applied status and writes on it (merge patches).
		ci := waitRoutes(t, before.Status.Routes, "Update", switched)
		t.Logf("rollback settled %s after the switch; status managers %v", time.Since(switched).Round(100*time.Millisecond), statusManagers(ci))
		sameStatus(t, ci)
		checkRouters(ctx, t, u, routers)
		noReconcileErrors(t, prev, switched)
	})

	time.Sleep(2 * time.Second) // a last look after the rollback settled
	nDNS, _ := stopDNS()
	nHTTPS, failedHTTPS := stopHTTPS()
	nClaim, failedClaim := stopClaim()
	t.Logf("over %s of upgrade and rollback: %d DNS queries (%d answers lost, %d query errors; last: %v), %d HTTPS requests through the default shard (%d failed), %d through the claimed shard (%d failed); spec wall time %s",
		time.Since(watching).Round(100*time.Millisecond), nDNS, lost.Load(), queryErrs.Load(), lostLog.Load(), nHTTPS, failedHTTPS, nClaim, failedClaim,
		time.Since(start).Round(time.Second))
	if lost.Load() > 0 || queryErrs.Load() > 0 {
		t.Errorf("%d DNS answers lost, %d queries failed (last: %v)", lost.Load(), queryErrs.Load(), lostLog.Load())
	}
	if nHTTPS < 20 || failedHTTPS > 0 || nClaim < 20 || failedClaim > 0 {
		t.Errorf("requests through the routers: HTTPS %d failed of %d, claimed shard %d failed of %d", failedHTTPS, nHTTPS, failedClaim, nClaim)
	}
}

func TestUpgrade(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := framework.RepoRoot()
	must(t, err)
	rel, err := readPreviousRelease(root)
	must(t, err)
	// Both controllers build while the environment starts (the previous release once per
	// machine: it is cached by commit).
	type built struct {
		path string
		took time.Duration
		err  error
	}
	previous, head := make(chan built, 1), make(chan built, 1)
	go func() {
		start := time.Now()
		dir, err := previousReleaseTree(root, rel)
		previous <- built{dir, time.Since(start), err}
	}()
	go func() {
		start := time.Now()
		bin, err := framework.ControllerBinary()
		head <- built{bin, time.Since(start), err}
	}()
	start := time.Now()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, DNS: true, WithoutShardgateCRDs: true,
		RealNodes: [][]framework.RealNodeSpec{{{Name: "n1"}}}})
	pebble := framework.StartPebble(t, env.DNS, framework.PebbleOptions{})
	cm := framework.StartCertManager(t, env.Seed, env.DNS)
	t.Logf("environment (seed, user cluster with a real node, BIND, external-dns, Pebble, cert-manager) started in %s", time.Since(start).Round(100*time.Millisecond))
	prev, cur := <-previous, <-head
	if prev.err != nil || cur.err != nil {
		t.Fatalf("builds: previous release: %v; this tree: %v", prev.err, cur.err)
	}
	t.Logf("previous release %s ready in %s (%s), this tree's controller in %s", rel.Commit[:7], prev.took.Round(100*time.Millisecond), prev.path, cur.took.Round(100*time.Millisecond))
	UpgradeSpec(ctx, t, func() UpgradeSpecInput {
		return UpgradeSpecInput{Seed: env.Seed, User: env.Users[0], DNS: env.DNS, Pebble: pebble, CertManager: cm, Fabric: env.Fabrics[0],
			Node: env.Nodes[0][0], Previous: rel, PreviousTree: prev.path, PreviousBinary: filepath.Join(prev.path, "bin", "seed-controller")}
	})
}

// applyChartCRDs server-side applies chartDir's crds/ to cp, as `kubectl apply --server-side -f
// charts/shardgate/crds/` does before a `helm upgrade`.
func applyChartCRDs(ctx context.Context, t *testing.T, cp *framework.ControlPlane, chartDir string) {
	t.Helper()
	root, err := framework.RepoRoot()
	must(t, err)
	files, err := filepath.Glob(filepath.Join(root, chartDir, "crds", "*.yaml"))
	must(t, err)
	if len(files) == 0 {
		t.Fatalf("no CRDs in %s/crds", chartDir)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		must(t, err)
		obj := &unstructured.Unstructured{}
		must(t, yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096).Decode(&obj.Object))
		must(t, cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership))
	}
}

// statusManagers are "manager/operation" of every managedFields entry of the status.
func statusManagers(ci *v1alpha1.ClusterIngress) []string {
	var out []string
	for _, m := range ci.ManagedFields {
		if m.Subresource == "status" {
			out = append(out, fmt.Sprintf("%s/%s@%s", m.Manager, m.Operation, m.Time.Format(time.TimeOnly)))
		}
	}
	return out
}

// lastStatusWrite is when Shardgate's field manager last wrote the status with operation op
// ("Apply": this tree's writer; "Update": the previous release's merge patches).
func lastStatusWrite(ci *v1alpha1.ClusterIngress, op metav1.ManagedFieldsOperationType) *metav1.Time {
	for _, m := range ci.ManagedFields {
		if m.Subresource == "status" && m.Manager == v1alpha1.FieldOwner && m.Operation == op {
			return m.Time
		}
	}
	return nil
}

// routerState is what the routers of a user cluster look like: their workloads' templates and
// their pods' UIDs and restart counts.
type routerState struct {
	templates map[string]corev1.PodTemplateSpec // kind/name
	pods      map[types.UID]string              // UID → pod name and restarts
}

func snapshotRouters(ctx context.Context, t *testing.T, u *framework.ControlPlane) routerState {
	t.Helper()
	s := routerState{templates: map[string]corev1.PodTemplateSpec{}, pods: map[types.UID]string{}}
	deps := &appsv1.DeploymentList{}
	must(t, u.Client.List(ctx, deps, client.InNamespace(names.Namespace)))
	for _, d := range deps.Items {
		s.templates["Deployment/"+d.Name] = d.Spec.Template
	}
	dss := &appsv1.DaemonSetList{}
	must(t, u.Client.List(ctx, dss, client.InNamespace(names.Namespace)))
	for _, d := range dss.Items {
		s.templates["DaemonSet/"+d.Name] = d.Spec.Template
	}
	pods := &corev1.PodList{}
	must(t, u.Client.List(ctx, pods, client.InNamespace(names.Namespace)))
	for _, p := range pods.Items {
		var restarts int32
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		s.pods[p.UID] = fmt.Sprintf("%s (restarts %d)", p.Name, restarts)
	}
	return s
}

// checkRouters fails t when a router pod was restarted or replaced although no router's rendered
// spec changed since was taken; with a changed spec it reports which.
func checkRouters(ctx context.Context, t *testing.T, u *framework.ControlPlane, was routerState) {
	t.Helper()
	now := snapshotRouters(ctx, t, u)
	var changed []string
	for name, tpl := range was.templates {
		if cur, ok := now.templates[name]; !ok || !equality.Semantic.DeepEqual(cur, tpl) {
			changed = append(changed, name)
		}
	}
	for name := range now.templates {
		if _, ok := was.templates[name]; !ok {
			changed = append(changed, name+" (new)")
		}
	}
	if len(changed) > 0 {
		t.Logf("router workloads whose rendered spec changed: %v", changed)
	}
	if !equality.Semantic.DeepEqual(now.pods, was.pods) && len(changed) == 0 {
		t.Errorf("router pods restarted or replaced with no rendered spec changed: before %v, now %v", was.pods, now.pods)
		return
	}
	t.Logf("routers: %d workloads, %d changed; pods %v", len(now.templates), len(changed), slices.Sorted(maps.Values(now.pods)))
}

// noReconcileErrors fails t when c logged a reconciler error since.
func noReconcileErrors(t *testing.T, c *framework.Controller, since time.Time) {
	t.Helper()
	b, err := os.ReadFile(c.LogPath())
	must(t, err)
	var bad []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "Reconciler error") || strings.Contains(l, `"level":"error"`) || strings.Contains(l, "\tERROR\t") {
			bad = append(bad, l)
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d errors in %s since %s:\n%s", len(bad), c.LogPath(), since.Format(time.TimeOnly), strings.Join(bad[:min(len(bad), 10)], "\n"))
	}
}
