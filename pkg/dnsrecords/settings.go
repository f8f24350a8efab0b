package dnsrecords

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// SettingsFrom converts a cluster's resolved DNS settings for Desired. Its error (an ingress node
// selector that does not parse) is why a cluster's domain is refused (ProfileInvalid).
func SettingsFrom(d v1alpha1.DNSSettings) (Settings, error) {
	s := Settings{TTL: d.TTL, EmptyTargets: d.EmptyTargets, IngressNodes: labels.Everything()}
	for _, t := range d.AddressTypes {
		s.AddressTypes = append(s.AddressTypes, corev1.NodeAddressType(t))
	}
	for _, f := range d.IPFamilies {
		switch f {
		case v1alpha1.IPv4:
			s.IPv4 = true
		case v1alpha1.IPv6:
			s.IPv6 = true
		}
	}
	if d.IngressNodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(d.IngressNodeSelector)
		if err != nil {
			return s, fmt.Errorf("dns.ingressNodeSelector: %w", err)
		}
		s.IngressNodes = sel
	}
	return s, nil
}
