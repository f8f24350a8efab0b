package dns

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// TestKeptEndpointIsLabelledWhateverTheDomain: upgrading from fe9d909 with the chart's default
// externalDNS.labelFilter, a DNSEndpoint written before labels existed is published only once
// the new controller labels it. publish() returns before label() when the cluster's domain has a
// problem (zone not in --served-zones after a typo, a profile momentarily invalid): the records
// are kept in the DNSEndpoint "because nothing may be lost", but external-dns (--policy=sync,
// --label-filter) no longer sees them and deletes them from the zone.
func TestKeptEndpointIsLabelledWhateverTheDomain(t *testing.T) {
	ctx := context.Background()
	s := labelTestScheme()
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c1"},
		Spec: v1alpha1.ClusterIngressSpec{ClusterID: "c1", DNS: v1alpha1.ResolveDNS(v1alpha1.DNSSettings{Zone: "z.test"}, "")}}
	ep := &dnsrecords.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c1"}}
	ep.Spec.Endpoints = []dnsrecords.Endpoint{{DNSName: "c1.z.test", RecordType: "A", Targets: []string{"192.0.2.1"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ci, ep).WithStatusSubresource(ci).Build()
	r := &Reconciler{Client: c, Access: clusteraccess.NewFake(), ServedZones: []string{"z.tset"}, // the 3 a.m. typo
		Clock: clocktesting.NewFakeClock(time.Now()), Board: cistatus.NewBoard(c)}
	_, _ = r.publish(ctx, ci)
	got := &dnsrecords.DNSEndpoint{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ep), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Endpoints) == 0 {
		t.Fatal("records emptied")
	}
	if got.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		t.Fatal("a kept DNSEndpoint stays unlabelled: the chart's external-dns (label filter, policy sync) deletes its records")
	}
}

// TestEndpointMovesShareByLabelOnly: with --dns-shares changed, a DNSEndpoint is relabelled with its
// new share and nothing else about it changes (its records are what the new share's external-dns
// takes over).
func TestEndpointMovesShareByLabelOnly(t *testing.T) {
	ctx := context.Background()
	s := labelTestScheme()
	// An endpoint whose share changes going from 1 to 4 shares.
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("c%d", i); dnsrecords.Share("t", n, 4) != "0" {
			name = n
		}
	}
	ep := &dnsrecords.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name,
		Labels: dnsrecords.EndpointLabels("t", name, 1)}}
	ep.Spec.Endpoints = []dnsrecords.Endpoint{{DNSName: "*." + name + ".z.test", RecordType: "A", Targets: []string{"192.0.2.1"}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ep).Build()
	r := &Reconciler{Client: c, DNSShares: 4}
	if err := r.label(ctx, ep); err != nil {
		t.Fatal(err)
	}
	got := &dnsrecords.DNSEndpoint{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ep), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1alpha1.DNSShareLabel] != dnsrecords.Share("t", name, 4) || got.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		t.Fatalf("labels %v, want share %s", got.Labels, dnsrecords.Share("t", name, 4))
	}
	if len(got.Spec.Endpoints) != 1 || got.Spec.Endpoints[0].Targets[0] != "192.0.2.1" || got.Generation != ep.Generation {
		t.Fatalf("the move changed the records: %+v", got.Spec)
	}
}

func labelTestScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	_ = dnsrecords.AddToScheme(s)
	return s
}
