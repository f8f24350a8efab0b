package clusterid

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

func endpoint(name string, labels map[string]string, refs []metav1.OwnerReference,
	names ...string) *dnsrecords.DNSEndpoint {
	ep := &dnsrecords.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels,
		OwnerReferences: refs}}
	for _, n := range names {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, dnsrecords.Endpoint{DNSName: n, RecordType: "A",
			Targets: []string{"10.0.0.1"}})
	}
	return ep
}

func ref(kind, apiVersion, name string, controller bool) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u",
		Controller: ptr.To(controller)}}
}

func TestPublisherAndPublishedDomains(t *testing.T) {
	own := dnsrecords.EndpointLabels("ns", "a", 1)
	ci := v1alpha1.GroupVersion.String()
	records := []string{"*.a.z.test", "a.z.test", "*.x.a.z.test", "X.a.z.test."}
	want := []string{"a.z.test", "test", "x.a.z.test", "z.test"}
	for _, tt := range []struct {
		name    string
		ep      *dnsrecords.DNSEndpoint
		publish bool
	}{
		{"Shardgate's own", endpoint("a", own, ref("ClusterIngress", ci, "a", true), records...), true},
		{"no label (written by hand or another tool)", endpoint("a", nil, ref("ClusterIngress", ci, "a", true),
			records...), false},
		{"another label value", endpoint("a", map[string]string{v1alpha1.ManagedByLabel: "someone"},
			ref("ClusterIngress", ci, "a", true), records...), false},
		{"no controller reference", endpoint("a", own, nil, records...), false},
		{"an owner that is not its controller", endpoint("a", own, ref("ClusterIngress", ci, "a", false),
			records...), false},
		{"controlled by another kind", endpoint("a", own, ref("Deployment", "apps/v1", "a", true), records...), false},
		{"a ClusterIngress of another group", endpoint("a", own, ref("ClusterIngress", "example.com/v1", "a", true),
			records...), false},
		{"controlled by a ClusterIngress of another name", endpoint("a", own, ref("ClusterIngress", ci, "b", true),
			records...), false},
	} {
		key, ok := Publisher(tt.ep)
		if ok != tt.publish || (ok && (key.Namespace != "ns" || key.Name != "a")) {
			t.Errorf("%s: publisher %v %v, want %v", tt.name, key, ok, tt.publish)
		}
		got := PublishedDomains(tt.ep)
		if tt.publish && !slices.Equal(got, want) || !tt.publish && got != nil {
			t.Errorf("%s: published domains %v", tt.name, got)
		}
	}
	// A rollback to a release that rewrites the records but nothing else: what is published is
	// what the records say now, nothing remembered beside them.
	moved := endpoint("a", own, ref("ClusterIngress", ci, "a", true), "*.b.z.test", "b.z.test")
	moved.Annotations = map[string]string{"shardgate.io/domain": "a.z.test"}
	if got := PublishedDomains(moved); slices.Contains(got, "a.z.test") || !slices.Contains(got, "b.z.test") {
		t.Errorf("records rewritten to b.z.test: published %v", got)
	}
}
