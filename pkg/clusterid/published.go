package clusterid

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
)

// Publisher is the ClusterIngress whose own DNSEndpoint ep is: ep carries Shardgate's managed-by
// label (dnsrecords.EndpointLabels) and a controller reference to a ClusterIngress of its own
// namespace and name, as the DNS controller creates it. Any other DNSEndpoint (written by hand,
// by another tool, or naming another object) is none of a cluster's: it blocks no domain. Whether
// that ClusterIngress exists is the caller's to check (it reads the seed). Nothing here reads
// annotations: a record's owner is told by what external-dns publishes and who controls it, which
// an older Shardgate keeps true when it rewrites the records.
//
// The reference's UID is not compared: a ClusterIngress deleted without its finalizer and created
// again under its name adopts the DNSEndpoint (the DNS controller reads it by name) while the
// garbage collector has not removed it yet, and its records are published all that time; counting
// them blocks their domain instead of letting a second cluster publish the same names.
func Publisher(ep *dnsrecords.DNSEndpoint) (types.NamespacedName, bool) {
	if ep.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		return types.NamespacedName{}, false
	}
	for _, ref := range ep.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != v1alpha1.GroupVersion.Group || ref.Kind != "ClusterIngress" ||
			ref.Name != ep.Name {
			return types.NamespacedName{}, false
		}
		return types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}, true
	}
	return types.NamespacedName{}, false
}

// PublishedDomains are the domains a DNSEndpoint's records are at or under: every record's name
// and each of its parent names, lower-cased, without a trailing dot (a wildcard's "*" label is
// not a domain), sorted. A domain d is published by ep when it is among them: the field index
// over these makes "who publishes names under d" one indexed List. Only a Publisher's DNSEndpoint
// publishes any.
func PublishedDomains(ep *dnsrecords.DNSEndpoint) []string {
	if _, ok := Publisher(ep); !ok {
		return nil
	}
	var out []string
	for _, e := range ep.Spec.Endpoints {
		name := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(e.DNSName), "."))
		for name != "" {
			if !strings.HasPrefix(name, "*.") {
				out = append(out, name)
			}
			_, parent, _ := strings.Cut(name, ".")
			name = parent
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
