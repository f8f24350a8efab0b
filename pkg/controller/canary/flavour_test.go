package canary

import (
	"context"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	canarycheck "github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/controllertest"
	"github.com/shardgate/shardgate/pkg/render/flavourtest"
)

// TestCanaryOfAFlavourItWasNotWrittenFor: each shard's canary asks what its flavour's canary
// route serves and expects its flavour's answer: a Traefik shard /ping and "OK", a shard of a
// flavour registered only here /canary and "fake-ok". Answered the other's way, a shard fails.
func TestCanaryOfAFlavourItWasNotWrittenFor(t *testing.T) {
	flavourtest.Use(t)
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "seed", Name: "c1"},
		Spec: v1alpha1.ClusterIngressSpec{Shards: v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"},
			{Name: "fast", Flavour: flavourtest.Name}})},
		Status: v1alpha1.ClusterIngressStatus{Domain: "c1.z.test",
			Shards: []v1alpha1.ShardStatus{{Name: "default", ReadyReplicas: 1}, {Name: "fast", ReadyReplicas: 1}}}}
	r, _ := reconcilerFor(t, ci, canarycheck.Refused{}, "198.51.100.7")
	key := client.ObjectKeyFromObject(ci)

	// Each shard's routers answer their flavour's canary route, and nothing else.
	var mu sync.Mutex
	asked := map[string]string{}
	serves := map[string]map[string]string{
		"shardgate-canary.c1.z.test":      {"/ping": "OK"},
		"shardgate-canary.fast.c1.z.test": {"/canary": "fake-ok"},
	}
	r.Get = func(_ context.Context, url, host string) (int, string, error) {
		mu.Lock()
		defer mu.Unlock()
		path := url[strings.LastIndex(url, "/"):]
		asked[host] = path
		if body, ok := serves[host][path]; ok {
			return 200, body, nil
		}
		return 404, "404 page not found", nil
	}
	controllertest.Reconcile(t, r, key, 1)

	if asked["shardgate-canary.c1.z.test"] != "/ping" || asked["shardgate-canary.fast.c1.z.test"] != "/canary" {
		t.Errorf("asked %v", asked)
	}
	if c, _ := r.Board.Posted(key, v1alpha1.ConditionRoutesServing); c.Status != metav1.ConditionTrue {
		t.Fatalf("RoutesServing: %+v", c)
	}

	// The other shard's answer is not this flavour's: the shard fails.
	mu.Lock()
	serves["shardgate-canary.fast.c1.z.test"]["/canary"] = "OK"
	mu.Unlock()
	controllertest.Reconcile(t, r, key, 1)
	c, _ := r.Board.Posted(key, v1alpha1.ConditionRoutesServing)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "fast: "+v1alpha1.ReasonNotAnswering) ||
		strings.Contains(c.Message, "default") {
		t.Fatalf("RoutesServing after the wrong answer: %+v", c)
	}
}
