// Package clusterid holds the pure decisions about a cluster's identity: the domain a
// ClusterIngress asks for (RequestedDomain), who holds a domain (Holder), which domains a
// cluster's records are under by its status (PublishedDomains), and the identity's part of
// the status: status.clusterID, status.domain and DomainAssigned (Decide). Objects in, decisions
// out; the identity controller (pkg/controller/identity) gathers and posts.
package clusterid

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/pkg/names"
)

// Refusal is why a ClusterIngress cannot have the domain it asks for, as a condition's reason and
// message: the identity controller says it in DomainAssigned, the DNS controller in DNSPublished.
type Refusal struct {
	Reason, Message string
}

// RequestedDomain is the domain a ClusterIngress asks for (<clusterID>.<zone>), or why it cannot
// have one. Nothing it refuses is given or taken.
func RequestedDomain(spec v1alpha1.ClusterIngressSpec, servedZones []string) (string, *Refusal) {
	zone, err := dnsname.NormalizeZone(spec.DNS.Zone)
	if err != nil {
		return "", &Refusal{v1alpha1.ReasonInvalidZone, err.Error()}
	}
	if !zoneServed(zone, servedZones) {
		return "", &Refusal{v1alpha1.ReasonZoneNotServed, fmt.Sprintf(
			"zone %s is not one the seed's external-dns publishes (%s); records would never reach DNS",
			zone, strings.Join(servedZones, ", "))}
	}
	domain, err := dnsname.Domain(spec.ClusterID, zone)
	if err != nil {
		reason := v1alpha1.ReasonInvalidClusterID
		if errors.Is(err, dnsname.ErrTooLong) {
			reason = v1alpha1.ReasonNamesTooLong
		}
		return "", &Refusal{reason, err.Error()}
	}
	for _, s := range spec.ShardsOrDefault() {
		if err := dnsname.CheckDomain(names.ShardDomain(s.Name, domain)); err != nil {
			return "", &Refusal{v1alpha1.ReasonNamesTooLong, fmt.Sprintf("shard %s: %v", s.Name, err)}
		}
	}
	if _, err := dnsrecords.SettingsFrom(spec.DNS); err != nil {
		return "", &Refusal{v1alpha1.ReasonProfileInvalid, err.Error()}
	}
	return domain, nil
}

// Asked is the domain spec asks for, unchecked beyond its zone ("" when the zone is unusable):
// what the field index of requested domains holds, so that an invalid ID still finds the
// clusters it would contend with once valid.
func Asked(spec v1alpha1.ClusterIngressSpec) string {
	zone, err := dnsname.NormalizeZone(spec.DNS.Zone)
	if err != nil || spec.ClusterID == "" {
		return ""
	}
	return spec.ClusterID + "." + zone
}

// zoneServed reports whether zone is, or is under, one of the zones the seed's external-dns
// publishes. No list, or "*", serves everything.
func zoneServed(zone string, served []string) bool {
	if len(served) == 0 {
		return true
	}
	for _, s := range served {
		s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
		if s == "*" || zone == s || strings.HasSuffix(zone, "."+s) {
			return true
		}
	}
	return false
}
