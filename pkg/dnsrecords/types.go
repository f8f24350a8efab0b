package dnsrecords

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The wire-compatible subset of external-dns' DNSEndpoint (externaldns.k8s.io/v1alpha1). We keep
// our own small copy instead of importing external-dns: its module drags in every DNS provider's
// SDK. TestTypeMatchesRealCRD round-trips this type through the real CRD to keep it honest.

// GroupVersion of external-dns' CRD.
var GroupVersion = schema.GroupVersion{Group: "externaldns.k8s.io", Version: "v1alpha1"}

// Record types Shardgate publishes.
const (
	RecordTypeA     = "A"
	RecordTypeAAAA  = "AAAA"
	RecordTypeCNAME = "CNAME"
)

// DNSEndpoint is a set of records external-dns publishes.
type DNSEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DNSEndpointSpec   `json:"spec,omitempty"`
	Status            DNSEndpointStatus `json:"status,omitempty"`
}

// DNSEndpointSpec holds the records.
type DNSEndpointSpec struct {
	Endpoints []Endpoint `json:"endpoints,omitempty"`
}

// DNSEndpointStatus is written by external-dns only ("seen", not "published").
type DNSEndpointStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Endpoint is one record set.
type Endpoint struct {
	DNSName          string                     `json:"dnsName,omitempty"`
	Targets          []string                   `json:"targets,omitempty"`
	RecordType       string                     `json:"recordType,omitempty"`
	SetIdentifier    string                     `json:"setIdentifier,omitempty"`
	RecordTTL        int64                      `json:"recordTTL,omitempty"`
	Labels           map[string]string          `json:"labels,omitempty"`
	ProviderSpecific []ProviderSpecificProperty `json:"providerSpecific,omitempty"`
}

// ProviderSpecificProperty is a provider option on a record.
type ProviderSpecificProperty struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// DNSEndpointList is a list of DNSEndpoints.
type DNSEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSEndpoint `json:"items"`
}

// AddToScheme registers the types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &DNSEndpoint{}, &DNSEndpointList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// DeepCopyInto copies e into out.
func (e *Endpoint) DeepCopyInto(out *Endpoint) {
	*out = *e
	out.Targets = append([]string(nil), e.Targets...)
	if e.Labels != nil {
		out.Labels = make(map[string]string, len(e.Labels))
		for k, v := range e.Labels {
			out.Labels[k] = v
		}
	}
	out.ProviderSpecific = append([]ProviderSpecificProperty(nil), e.ProviderSpecific...)
}

// DeepCopyInto copies in into out.
func (in *DNSEndpoint) DeepCopyInto(out *DNSEndpoint) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.Endpoints = nil
	if in.Spec.Endpoints != nil {
		out.Spec.Endpoints = make([]Endpoint, len(in.Spec.Endpoints))
		for i := range in.Spec.Endpoints {
			in.Spec.Endpoints[i].DeepCopyInto(&out.Spec.Endpoints[i])
		}
	}
}

// DeepCopy returns a copy.
func (in *DNSEndpoint) DeepCopy() *DNSEndpoint {
	if in == nil {
		return nil
	}
	out := new(DNSEndpoint)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *DNSEndpoint) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (in *DNSEndpointList) DeepCopyObject() runtime.Object {
	if in == nil {
		return nil
	}
	out := &DNSEndpointList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]DNSEndpoint, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
