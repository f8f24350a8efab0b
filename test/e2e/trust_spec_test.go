package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// TrustSpecInput is what TrustSpec runs on: a seed with external-dns and BIND, two user clusters
// with simulated nodes, and the controller with a short source-removal grace period.
type TrustSpecInput struct {
	Seed       *framework.ControlPlane
	Users      []*framework.ControlPlane
	DNS        *framework.DNSServer
	Controller *framework.Controller
	// Grace is the controller's --source-removal-grace.
	Grace time.Duration
}

// TrustSpec proves the promises an operator buys Shardgate for, each against the attack or
// accident that broke it: a kubeconfig is data, never a way into the seed or a way to read other
// endpoints; an unusable cluster says why at once and holds no one else up; DNS records are
// never lost because something was contested, invalid, unreadable or briefly gone.
func TrustSpec(ctx context.Context, t *testing.T, inputGetter func() TrustSpecInput) {
	in := inputGetter()
	seed, zone, dnsSrv := in.Seed, in.DNS.Zone, in.DNS
	u1, u2 := in.Users[0], in.Users[1]
	sel := map[string]string{"ingress": "trust"}
	createProfile(ctx, t, seed, "trust", sel, v1alpha1.DNSSettings{},
		v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})
	addNodes(ctx, t, u1, nodeSpec("n1", "127.0.60.1"))
	addNodes(ctx, t, u2, nodeSpec("n1", "127.0.61.1"))
	answer := func(t *testing.T, name string, ips ...string) {
		t.Helper()
		waitAnswer(ctx, t, dnsSrv, name, framework.AnswerIs(ips...))
	}
	secretKubeconfig := func(t *testing.T, name, id string, kc []byte) {
		t.Helper()
		putKubeconfigSecret(ctx, t, seed, "default", name, id, kc, sel)
	}
	// unreachable waits for ClusterReachable=False with reason within 30 s and returns its message.
	unreachable := func(t *testing.T, name, reason string) string {
		t.Helper()
		start := time.Now()
		var msg string
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			c := condition(ctx, t, seed, key(name), v1alpha1.ConditionClusterReachable)
			if c == nil {
				return false, "no ClusterReachable yet"
			}
			msg = c.Message
			return c.Status == metav1.ConditionFalse && c.Reason == reason, fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
		})
		t.Logf("%s: ClusterReachable=False/%s after %s: %s", name, reason, time.Since(start).Round(100*time.Millisecond), msg)
		return msg
	}

	t.Run("a kubeconfig's file references never reach a server", func(t *testing.T) {
		// The controller's own service-account token, as a file it can read.
		tokenFile := filepath.Join(t.TempDir(), "token")
		must(t, os.WriteFile(tokenFile, []byte("controller-sa-token-MARKER"), 0o600))
		attacker := framework.StartHostileServer(t, framework.HostileAnswer, "unused")
		kc, err := attacker.Kubeconfig(func(u *clientcmdapi.AuthInfo) { u.Token, u.TokenFile = "", tokenFile })
		must(t, err)
		secretKubeconfig(t, "tokenfile", "tokenfile", kc)
		waitCondition(ctx, t, seed, key("tokenfile"), v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonKubeconfigInvalid)
		c := condition(ctx, t, seed, key("tokenfile"), v1alpha1.ConditionClusterReachable)
		if !strings.Contains(c.Message, "user.tokenFile") || strings.Contains(c.Message, tokenFile) {
			t.Errorf("message %q must name the field, never the value", c.Message)
		}
		time.Sleep(3 * time.Second) // any connection attempt would have happened by now
		if a := attacker.Authorizations(); len(a) > 0 || attacker.Hits() > 0 {
			t.Fatalf("the attacker's server was contacted (%d requests, credentials %q)", attacker.Hits(), a)
		}
	})

	t.Run("what an endpoint answers never reaches status, Events or logs", func(t *testing.T) {
		const secret = "INTERNAL-PAGE-c2VjcmV0LWRvY3VtZW50"
		internal := framework.StartHostileServer(t, framework.HostileAnswer, secret)
		kc, err := internal.Kubeconfig(nil)
		must(t, err)
		secretKubeconfig(t, "reader", "reader", kc)
		unreachable(t, "reader", v1alpha1.ReasonCredentialsRefused)
		time.Sleep(5 * time.Second) // several probes and retries
		if internal.Hits() == 0 {
			t.Fatal("precondition: the endpoint was never asked")
		}
		ci := getCI(ctx, t, seed, key("reader"))
		for _, c := range ci.Status.Conditions {
			if strings.Contains(c.Message, secret) || strings.Contains(c.Reason, secret) {
				t.Fatalf("the endpoint's answer reached status: %s=%q", c.Type, c.Message)
			}
		}
		evs := &corev1.EventList{}
		must(t, seed.Client.List(ctx, evs))
		for _, e := range evs.Items {
			if strings.Contains(e.Message, secret) {
				t.Fatalf("the endpoint's answer reached an Event: %q", e.Message)
			}
		}
		if in.Controller.LogContains(secret) {
			t.Fatal("the endpoint's answer reached the controller's log")
		}
	})

	t.Run("an unusable cluster says why within 30 s and holds no one up", func(t *testing.T) {
		// A port freed on 127.0.0.1 can be taken at once by a spec running beside this one (it
		// was: a TLS API server answered); nothing of the harness listens on 127.0.250.1.
		dead, err := net.Listen("tcp", "127.0.250.1:0")
		must(t, err)
		deadAddr := dead.Addr().String()
		must(t, dead.Close())
		deadKC, err := framework.KubeconfigFor("https://"+deadAddr, nil, "token")
		must(t, err)
		hung := framework.StartHostileServer(t, framework.HostileHang, "unused")
		hungKC, err := hung.Kubeconfig(nil)
		must(t, err)
		refusedKC, err := framework.KubeconfigFor(u1.Host(), u1.Config.CAData, "not-a-valid-token")
		must(t, err)
		secretKubeconfig(t, "dead", "dead", deadKC)
		secretKubeconfig(t, "hung", "hung", hungKC)
		secretKubeconfig(t, "refused", "refused", refusedKC)
		kc, err := u2.Kubeconfig("shardgate-healthy", "system:masters")
		must(t, err)
		secretKubeconfig(t, "healthy", "healthy", kc)
		// The healthy cluster converges while the others fail.
		answer(t, "healthy."+zone, "127.0.61.1")
		if msg := unreachable(t, "dead", v1alpha1.ReasonUnreachable); !strings.Contains(msg, "connection refused") {
			t.Errorf("dead: %q", msg)
		}
		if msg := unreachable(t, "hung", v1alpha1.ReasonUnreachable); !strings.Contains(msg, "timed out") {
			t.Errorf("hung: %q", msg)
		}
		unreachable(t, "refused", v1alpha1.ReasonCredentialsRefused)

		// A cluster that is down when it is registered says so, and is engaged once it is up.
		must(t, u1.StopAPIServer())
		kc, err = u1.Kubeconfig("shardgate-late", "system:masters")
		if err != nil { // adding a user needs no API server, but be safe
			must(t, u1.StartAPIServer(ctx))
			t.Fatal(err)
		}
		secretKubeconfig(t, "late", "late", kc)
		unreachable(t, "late", v1alpha1.ReasonUnreachable)
		must(t, u1.StartAPIServer(ctx))
		waitCondition(ctx, t, seed, key("late"), v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)
		answer(t, "late."+zone, "127.0.60.1")
	})

	t.Run("kubeconfig Secrets register clusters only from the listed namespaces", func(t *testing.T) {
		must(t, seed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}))
		kc, err := u2.Kubeconfig("shardgate-elsewhere", "system:masters")
		must(t, err)
		putKubeconfigSecret(ctx, t, seed, "elsewhere", "outsider", "outsider", kc, sel)
		answer(t, "healthy."+zone, "127.0.61.1") // the controller is busy and well
		time.Sleep(5 * time.Second)
		if err := seed.Client.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: "outsider"}, &v1alpha1.ClusterIngress{}); err == nil {
			t.Fatal("a kubeconfig Secret outside --kubeconfig-secret-namespaces registered a cluster")
		}
		waitAnswer(ctx, t, dnsSrv, "outsider."+zone, framework.AnswerNXDomain)
	})

	t.Run("a cluster ID stays with its holder", func(t *testing.T) {
		// "early" exists first; "holder" takes the ID "target"; then "early" asks for "target"
		// too. Before, the older source won and the holder's records were deleted.
		kc, err := u2.Kubeconfig("shardgate-early", "system:masters")
		must(t, err)
		secretKubeconfig(t, "early", "early", kc)
		answer(t, "early."+zone, "127.0.61.1")
		kc, err = u1.Kubeconfig("shardgate-holder", "system:masters")
		must(t, err)
		secretKubeconfig(t, "holder", "target", kc)
		answer(t, "target."+zone, "127.0.60.1")
		annotate(ctx, t, seed, &corev1.Secret{}, key("early"), v1alpha1.ClusterIDAnnotation, "target")
		waitCondition(ctx, t, seed, key("early"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict)
		answer(t, "target."+zone, "127.0.60.1")
		answer(t, "early."+zone, "127.0.61.1") // the newcomer's own records are not touched either
		// The holder is recorded durably: the same after a restart.
		must(t, in.Controller.Restart())
		time.Sleep(5 * time.Second)
		waitCondition(ctx, t, seed, key("early"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonClusterIDConflict)
		answer(t, "target."+zone, "127.0.60.1")
		if ci := getCI(ctx, t, seed, key("holder")); ci.Status.Domain != "target."+zone {
			t.Fatalf("holder's domain %q", ci.Status.Domain)
		}
	})

	t.Run("an invalid profile changes nothing", func(t *testing.T) {
		// matchLabels keys are not checked by the schema: the controller finds the selector
		// invalid. Before, the profile then selected nothing and every cluster's records went.
		setSelector(ctx, t, seed, "trust", map[string]string{"not a key!": "x"})
		defer setSelector(ctx, t, seed, "trust", sel)
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			p := &v1alpha1.IngressProfile{}
			must(t, seed.Client.Get(ctx, client.ObjectKey{Name: "trust"}, p))
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionValid)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonClusterSelectorBad,
				fmt.Sprintf("profile status %+v", p.Status.Conditions)
		})
		time.Sleep(5 * time.Second)
		for _, name := range []string{"healthy", "holder", "late"} {
			if err := seed.Client.Get(ctx, key(name), &v1alpha1.ClusterIngress{}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		answer(t, "healthy."+zone, "127.0.61.1")
		answer(t, "target."+zone, "127.0.60.1")
		setSelector(ctx, t, seed, "trust", sel)
		waitProfileValid(ctx, t, seed, "trust")
	})

	t.Run("a kubeconfig Secret deleted and recreated loses no records", func(t *testing.T) {
		kc, err := u2.Kubeconfig("shardgate-gitops", "system:masters")
		must(t, err)
		secretKubeconfig(t, "gitops", "gitops", kc)
		answer(t, "gitops."+zone, "127.0.61.1")
		ci := getCI(ctx, t, seed, key("gitops"))
		stop := watchAnswers(ctx, dnsSrv, "gitops."+zone)
		must(t, seed.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gitops"}}))
		waitCondition(ctx, t, seed, key("gitops"), v1alpha1.ConditionSourceAvailable, metav1.ConditionFalse, v1alpha1.ReasonSourceMissing)
		time.Sleep(3 * time.Second)
		secretKubeconfig(t, "gitops", "gitops", kc)
		waitCondition(ctx, t, seed, key("gitops"), v1alpha1.ConditionSourceAvailable, metav1.ConditionTrue, v1alpha1.ReasonSourcePresent)
		if n, lost := stop(); lost > 0 {
			t.Fatalf("%d of %d answers lost the records while the Secret was recreated", lost, n)
		}
		if again := getCI(ctx, t, seed, key("gitops")); again.UID != ci.UID {
			t.Fatal("the ClusterIngress was replaced, not adopted")
		}
		// Gone for good: the records stay for the grace period, then go.
		must(t, seed.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gitops"}}))
		waitCondition(ctx, t, seed, key("gitops"), v1alpha1.ConditionSourceAvailable, metav1.ConditionFalse, v1alpha1.ReasonSourceMissing)
		answer(t, "gitops."+zone, "127.0.61.1")
		start := time.Now()
		eventually(ctx, t, in.Grace+45*time.Second, func() (bool, string) {
			a, err := dnsSrv.Lookup(ctx, "gitops."+zone, dns.TypeA)
			return err == nil && framework.AnswerNXDomain(a), fmt.Sprintf("answer %s %v", a, err)
		})
		if waited := time.Since(start); waited < in.Grace/2 {
			t.Fatalf("records removed after %s, before the grace period", waited)
		}
	})

	t.Run("name budgets match what external-dns writes", func(t *testing.T) {
		fits := strings.Repeat("f", 57)
		kc, err := u2.Kubeconfig("shardgate-fits", "system:masters")
		must(t, err)
		// Secret names over 63 characters work (no label value is built from them).
		long := "a-kubeconfig-secret-whose-name-is-longer-than-any-label-value-may-be"
		secretKubeconfig(t, long, fits, kc)
		// Published through external-dns' TXT registry, whose ownership record cname-<id> is a
		// 63-character label: the records really reach BIND.
		answer(t, fits+"."+zone, "127.0.61.1")
		kc, err = u2.Kubeconfig("shardgate-toolong", "system:masters")
		must(t, err)
		secretKubeconfig(t, "toolong", strings.Repeat("t", 58), kc)
		waitCondition(ctx, t, seed, key("toolong"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonNamesTooLong)
		if c := condition(ctx, t, seed, key("toolong"), v1alpha1.ConditionDNSPublished); !strings.Contains(c.Message, "at most 57") {
			t.Errorf("message %q must name the limit", c.Message)
		}
	})

	t.Run("a zone the seed's external-dns does not serve is reported", func(t *testing.T) {
		other := map[string]string{"ingress": "elsewhere"}
		createProfile(ctx, t, seed, "unserved", other, v1alpha1.DNSSettings{Zone: "not-served.test"},
			v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})
		kc, err := u2.Kubeconfig("shardgate-unserved", "system:masters")
		must(t, err)
		putKubeconfigSecret(ctx, t, seed, "default", "unserved", "unserved", kc, other)
		waitCondition(ctx, t, seed, key("unserved"), v1alpha1.ConditionDNSPublished, metav1.ConditionFalse, v1alpha1.ReasonZoneNotServed)
	})
}

func TestTrust(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 2, SimulatedNodes: true, DNS: true})
	grace := 15 * time.Second
	ctrl := framework.StartController(t, env.Seed, "--dns-zone="+env.DNS.Zone, "--source-removal-grace="+grace.String())
	TrustSpec(ctx, t, func() TrustSpecInput {
		return TrustSpecInput{Seed: env.Seed, Users: env.Users, DNS: env.DNS, Controller: ctrl, Grace: grace}
	})
}

// condition returns the ClusterIngress' condition of type typ (nil when absent).
func condition(ctx context.Context, t testing.TB, seed *framework.ControlPlane, k client.ObjectKey, typ string) *metav1.Condition {
	t.Helper()
	ci := &v1alpha1.ClusterIngress{}
	if err := seed.Client.Get(ctx, k, ci); err != nil {
		return nil
	}
	return meta.FindStatusCondition(ci.Status.Conditions, typ)
}

func annotate(ctx context.Context, t *testing.T, seed *framework.ControlPlane, obj client.Object, k client.ObjectKey, key, value string) {
	t.Helper()
	must(t, seed.Client.Get(ctx, k, obj))
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	metav1.SetMetaDataAnnotation(objectMeta(obj), key, value)
	must(t, seed.Client.Patch(ctx, obj, patch))
}

func objectMeta(obj client.Object) *metav1.ObjectMeta {
	type metaHolder interface{ GetObjectMeta() metav1.Object }
	return obj.(metaHolder).GetObjectMeta().(*metav1.ObjectMeta)
}

func setSelector(ctx context.Context, t *testing.T, seed *framework.ControlPlane, profile string, sel map[string]string) {
	t.Helper()
	updateProfile(ctx, t, seed, profile, func(p *v1alpha1.IngressProfile) {
		p.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: sel}
	})
}

func waitProfileValid(ctx context.Context, t *testing.T, seed *framework.ControlPlane, profile string) {
	t.Helper()
	eventually(ctx, t, 30*time.Second, func() (bool, string) {
		p := &v1alpha1.IngressProfile{}
		must(t, seed.Client.Get(ctx, client.ObjectKey{Name: profile}, p))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionValid)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation, fmt.Sprintf("%+v", p.Status.Conditions)
	})
}

// watchAnswers asks BIND for name every 200 ms until the returned stop is called, which reports
// how many answers there were and how many had no records.
func watchAnswers(ctx context.Context, s *framework.DNSServer, name string) func() (int, int) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan [2]int)
	go func() {
		var n, lost int
		for ctx.Err() == nil {
			if a, err := s.Lookup(ctx, name, dns.TypeA); err == nil {
				n++
				if len(a.Values) == 0 {
					lost++
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		done <- [2]int{n, lost}
	}()
	return func() (int, int) {
		cancel()
		r := <-done
		return r[0], r[1]
	}
}

// TestClusterAPIInstalledLater: Cluster API installed in the seed after Shardgate started is
// picked up without a restart (before, the controller looked once at start-up).
func TestClusterAPIInstalledLater(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dirs, err := framework.SeedCRDDirs()
	must(t, err)
	var capi []string
	var others []string
	for _, d := range dirs {
		if strings.Contains(d, "cluster-api") {
			capi = append(capi, d)
		} else {
			others = append(others, d)
		}
	}
	seed := framework.StartControlPlane(t, "seed", framework.ControlPlaneOptions{CRDDirs: others})
	framework.StartController(t, seed, "--dns-zone=later.test")
	createProfile(ctx, t, seed, "all", nil, v1alpha1.DNSSettings{})
	time.Sleep(3 * time.Second) // the controller is up and has looked for Cluster API
	must(t, seed.InstallCRDs(capi...))
	registerCAPICluster(ctx, t, seed, "default", "later", nil, nil, nil)
	eventually(ctx, t, 60*time.Second, func() (bool, string) {
		ci := &v1alpha1.ClusterIngress{}
		if err := seed.Client.Get(ctx, key("later"), ci); err != nil {
			return false, err.Error()
		}
		return ci.Spec.ClusterRef.Kind == v1alpha1.SourceKindCluster, fmt.Sprintf("clusterRef %+v", ci.Spec.ClusterRef)
	})
	removeCAPIFinalizer(ctx, t, seed, key("later"))
}
