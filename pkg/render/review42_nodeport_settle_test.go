package render

import (
	"os"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestReview42NodePortAndLoadBalancerRoutersAreNotSettledAndTheDocsDoNotSay (Low; who: T with a
// claimed router — claims publish NodePort by default — and every NodePort/LoadBalancer shard's
// users; the operator reading the guide).
//
// What: b9ae69c moves Traefik's settle from the probe (successThreshold 2, which gated the
// Service's endpoints too) to the DNS controller, which only applies it to HostNetwork shards
// (TargetNodes). A NodePort or LoadBalancer shard's DNS follows nodes or the LB, and kube-proxy
// sends requests to a Traefik router at its first ping, 1-2 s before its Kubernetes routes are
// loaded: the 404s f91aae7 was written for return there at every router start (rollout, restart,
// scale-up), and the routers' ClusterIP Service likewise. The operator guide says "a Traefik router
// enters DNS only once it has been ready for 5 s" and marks only the HostNetwork shard with it; it
// never says NodePort/LoadBalancer routers are unprotected. (Not a regression from the last
// release, which had successThreshold 1, but the guide reads as if every Traefik router settled.)
//
// Fix: say so in the guide (and the shard example: "NodePort/LoadBalancer: a router takes requests
// at its first ping, Traefik's routes may load 1-2 s later"); a real fix needs the pod template
// (successThreshold, a startupProbe or a readiness gate), so it belongs to a release that rolls
// the routers anyway.
func TestReview42NodePortAndLoadBalancerRoutersAreNotSettledAndTheDocsDoNotSay(t *testing.T) {
	for _, p := range []v1alpha1.Publishing{v1alpha1.PublishNodePort, v1alpha1.PublishLoadBalancer} {
		s := v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "internal", Publishing: p}})[0]
		objs, err := RenderShard(Traefik{}, RenderInput{Domain: "internal.c1.example.test", Shard: s, DNSTTL: 60})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			d := as[appsv1.Deployment](t, o)
			if len(d.Spec.Template.Spec.ReadinessGates) > 0 {
				t.Fatalf("premise: %s routers have readiness gates", p)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.ReadinessProbe != nil && c.ReadinessProbe.SuccessThreshold > 1 {
					t.Fatalf("premise: %s router readiness successThreshold %d", p, c.ReadinessProbe.SuccessThreshold)
				}
			}
		}
	}
	guide, err := os.ReadFile("../../docs/operator-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	honest := regexp.MustCompile(`(?i)(NodePort|LoadBalancer)[^\n]*(settle|first ping|5 s)|(settle|first ping|5 s)[^\n]*(NodePort|LoadBalancer)`)
	for _, line := range strings.Split(string(guide), "\n") {
		if honest.MatchString(line) {
			return
		}
	}
	t.Errorf("docs/operator-guide.md says a Traefik router enters DNS only once ready for 5 s, but nowhere that " +
		"NodePort and LoadBalancer routers (claims' default) get no settle: kube-proxy sends them requests at their first ping")
}
