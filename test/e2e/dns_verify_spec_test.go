package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/test/framework"
)

// TestDNSVerification: with --dns-verify-servers, DNSPublished says what the zone's
// authoritative server (real BIND, written by real external-dns) answers, not merely that the
// DNSEndpoint is written: Propagating (with how long it has waited) while external-dns has not
// published, Published once BIND answers exactly the targets, Propagating again when someone
// edits a record behind Shardgate's back, Published once external-dns repairs it.
func TestDNSVerification(t *testing.T) {
	t.Parallel() // see main_test.go
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := framework.StartEnvironment(t, framework.EnvironmentOptions{UserClusters: 1, SimulatedNodes: true, DNS: true})
	seed, u, zone := env.Seed, env.Users[0], env.DNS.Zone
	ctl := framework.StartController(t, seed, "--dns-zone="+zone, "--dns-verify-servers="+env.DNS.Addr, "--dns-verify-interval=2s")
	sel := map[string]string{"verify": "yes"}
	createProfile(ctx, t, seed, "verify", sel, v1alpha1.DNSSettings{TTL: 5}, v1alpha1.ShardSpec{Name: v1alpha1.DefaultShardName, Publishing: v1alpha1.PublishNodePort})
	addNodes(ctx, t, u, nodeSpec("n1", "127.0.31.1"), nodeSpec("n2", "127.0.31.2"))
	k := key("v1")
	published := func() *metav1.Condition {
		return meta.FindStatusCondition(getCI(ctx, t, seed, k).Status.Conditions, v1alpha1.ConditionDNSPublished)
	}
	waitPublished := func(t *testing.T, status metav1.ConditionStatus, reason, inMessage string, within time.Duration) *metav1.Condition {
		t.Helper()
		var c *metav1.Condition
		eventually(ctx, t, within, func() (bool, string) {
			if err := seed.Client.Get(ctx, k, &v1alpha1.ClusterIngress{}); err != nil {
				return false, err.Error()
			}
			c = published()
			return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, inMessage), fmt.Sprintf("DNSPublished %+v", c)
		})
		return c
	}

	t.Run("Propagating while external-dns has not published, Published once BIND answers", func(t *testing.T) {
		must(t, env.ExternalDNS.Pause(true))
		resumed := false
		defer func() {
			if !resumed {
				_ = env.ExternalDNS.Pause(false)
			}
		}()
		registerKubeconfigSecret(ctx, t, seed, "default", "v1", "v1", u, sel)
		waitPublished(t, metav1.ConditionFalse, v1alpha1.ReasonPropagating, "answers []", time.Minute)
		// The wait it reports grows (checks run every 2 s, so any value from 3 s on, not exactly 3 s).
		var c *metav1.Condition
		eventually(ctx, t, 30*time.Second, func() (bool, string) {
			c = published()
			return c != nil && c.Reason == v1alpha1.ReasonPropagating && reportedWait(c.Message) >= 3*time.Second,
				fmt.Sprintf("DNSPublished %+v", c)
		})
		t.Logf("while external-dns is stopped: %s", c.Message)
		if r := meta.FindStatusCondition(getCI(ctx, t, seed, k).Status.Conditions, v1alpha1.ConditionReady); r == nil || r.Status == metav1.ConditionTrue {
			t.Errorf("Ready while the names do not answer: %+v", r)
		}
		must(t, env.ExternalDNS.Pause(false))
		resumed = true
		start := time.Now()
		c = waitPublished(t, metav1.ConditionTrue, v1alpha1.ReasonPublished, "the authoritative servers", time.Minute)
		t.Logf("external-dns resumed → Published in %s: %s", time.Since(start).Round(100*time.Millisecond), c.Message)
		a, err := env.DNS.Lookup(ctx, "*.v1."+zone, dns.TypeA)
		must(t, err)
		if strings.Join(a.Values, ",") != "127.0.31.1,127.0.31.2" {
			t.Errorf("BIND answers %v for the wildcard", a.Values)
		}
		m, err := ctl.Metrics()
		must(t, err)
		if !strings.Contains(m, "shardgate_dns_verification_seconds_count 1") {
			var lines []string
			for _, l := range strings.Split(m, "\n") {
				if strings.Contains(l, "verification") {
					lines = append(lines, l)
				}
			}
			t.Errorf("verification latency not observed once:\n%s", strings.Join(lines, "\n"))
		}
	})

	t.Run("a record edited behind Shardgate's back is Propagating until external-dns repairs it", func(t *testing.T) {
		must(t, env.ExternalDNS.Pause(true))
		resumed := false
		defer func() {
			if !resumed {
				_ = env.ExternalDNS.Pause(false)
			}
		}()
		must(t, env.DNS.Replace(ctx, "*.v1."+zone, dns.TypeA, "127.0.31.99"))
		c := waitPublished(t, metav1.ConditionFalse, v1alpha1.ReasonPropagating, "127.0.31.99", 30*time.Second)
		t.Logf("after the edit: %s", c.Message)
		must(t, env.ExternalDNS.Pause(false))
		resumed = true
		waitPublished(t, metav1.ConditionTrue, v1alpha1.ReasonPublished, "the authoritative servers", time.Minute)
		waitAnswer(ctx, t, env.DNS, "anything.v1."+zone, framework.AnswerIs("127.0.31.1", "127.0.31.2"))
	})
}

// reportedWait is the duration in DNSPublished's "waiting <d> for the authoritative servers", or
// -1 when the message says none.
func reportedWait(message string) time.Duration {
	_, rest, ok := strings.Cut(message, "waiting ")
	if !ok {
		return -1
	}
	field, _, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(field)
	if err != nil {
		return -1
	}
	return d
}
