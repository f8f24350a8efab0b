package listenersets

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/shardgate/shardgate/pkg/names"
)

// TestReview36OneNamespaceStarvesEveryOtherOnItsShard: the 62 tenant listeners of a shard's
// Gateway are one pool for every namespace, given oldest ListenerSet first. Tenant T (edit in
// team-a) claims 62 hosts of its own (any names nobody claimed yet: first claimant wins), routes
// them, and attaches one ListenerSet with a listener each: every ListenerSet any other namespace
// attaches later for a host on that shard is refused TooManyListeners, for as long as T keeps its
// set. No per-namespace share exists.
func TestReview36OneNamespaceStarvesEveryOtherOnItsShard(t *testing.T) {
	old := metav1.NewTime(time.Unix(1000, 0))
	set := func(ns string, created metav1.Time, hosts ...string) gatewayv1.ListenerSet {
		s := gatewayv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s", CreationTimestamp: created, Generation: 1},
			Spec: gatewayv1.ListenerSetSpec{ParentRef: gatewayv1.ParentGatewayReference{Name: names.ParentGatewayName,
				Namespace: ptr.To(gatewayv1.Namespace(names.Namespace))}}}
		for i, h := range hosts {
			s.Spec.Listeners = append(s.Spec.Listeners, gatewayv1.ListenerEntry{Name: gatewayv1.SectionName(fmt.Sprintf("l%d", i)),
				Hostname: ptr.To(gatewayv1.Hostname(h)), Port: PortHTTP, Protocol: gatewayv1.HTTPProtocolType})
		}
		return s
	}
	holders := map[string]Holder{"shop.b.example": {Namespace: "team-b", Shard: "default", Routes: 1}}
	var hosts []string
	for i := 0; i < MaxPerGateway; i++ {
		h := fmt.Sprintf("h%d.a.example", i)
		hosts = append(hosts, h)
		holders[h] = Holder{Namespace: "team-a", Shard: "default", Routes: 1}
	}
	d := Decide(Input{Sets: []gatewayv1.ListenerSet{set("team-a", old, hosts...),
		set("team-b", metav1.NewTime(old.Add(time.Hour)), "shop.b.example")},
		Holders: holders, Gateways: map[string]bool{"default": true}, ClusterDomain: "c1.z.test"})
	st := d.Status[types.NamespacedName{Namespace: "team-b", Name: "s"}]
	if len(st.Listeners) != 1 || !meta.IsStatusConditionTrue(st.Listeners[0].Conditions, "Programmed") {
		t.Errorf("team-b's only listener, for a host it holds, is refused because team-a holds all %d slots: %+v",
			MaxPerGateway, st.Listeners)
	}
}
