// Package dnsname validates the DNS names Shardgate publishes: zones, cluster IDs, shard domains,
// and the names external-dns' TXT registry writes beside them, within DNS limits.
package dnsname

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxNameLength is the longest DNS name (RFC 1035, presentation form without the trailing dot);
// MaxLabelLength the longest label.
const (
	MaxNameLength  = 253
	MaxLabelLength = 63
)

// external-dns' TXT registry (--registry=txt --txt-wildcard-replacement=star, no prefix or
// suffix) writes an ownership record beside every record: "<type>-" in front of the name's first
// label, with a leading "*" replaced by "star" (registry/mapper in external-dns v0.22). Shardgate
// publishes A, AAAA and CNAME records, so the longest ownership names are cname-<apex label>.<rest>
// and cname-star.<domain>. A record whose ownership record cannot be written is never published,
// updated or removed by external-dns, so every name must leave room for it.
const (
	registryTypePrefix = "cname-"
	registryWildcard   = "cname-star."
	// MaxApexLabel is the longest first label of a published apex (a cluster ID, a shard name).
	MaxApexLabel = MaxLabelLength - len(registryTypePrefix)
	// MaxDomainLength is the longest domain whose wildcard's ownership name fits.
	MaxDomainLength = MaxNameLength - len(registryWildcard)
)

// ErrTooLong marks names that are valid but leave no room for external-dns' ownership records.
var ErrTooLong = errors.New("names too long")

// NormalizeZone validates a DNS zone and returns it lower-cased without a trailing dot.
func NormalizeZone(zone string) (string, error) {
	z := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(zone), "."))
	if z == "" {
		return "", fmt.Errorf("zone is empty: set the profile's dns.zone or the controller's --dns-zone")
	}
	if len(z) > MaxNameLength {
		return "", fmt.Errorf("zone %q is %d characters long, more than %d", zone, len(z), MaxNameLength)
	}
	for _, label := range strings.Split(z, ".") {
		if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
			return "", fmt.Errorf("zone %q: label %q: %s", zone, label, strings.Join(errs, "; "))
		}
	}
	return z, nil
}

// ValidateClusterID checks that id is one RFC 1123 label that leaves room for external-dns'
// ownership record of the cluster's apex.
func ValidateClusterID(id string) error {
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Errorf("cluster ID %q is not an RFC 1123 label: %s", id, strings.Join(errs, "; "))
	}
	if len(id) > MaxApexLabel {
		return fmt.Errorf("%w: cluster ID %q is %d characters; at most %d fit (external-dns' TXT registry writes %s<id> beside the apex, and a DNS label holds %d)",
			ErrTooLong, id, len(id), MaxApexLabel, registryTypePrefix, MaxLabelLength)
	}
	return nil
}

// Domain returns <id>.<zone> after checking that every name published for it, and every
// ownership record external-dns writes beside them, fits DNS limits. zone must be normalized.
func Domain(id, zone string) (string, error) {
	if err := ValidateClusterID(id); err != nil {
		return "", err
	}
	domain := id + "." + zone
	if err := CheckDomain(domain); err != nil {
		return "", err
	}
	return domain, nil
}

// CheckDomain checks that a published domain (a cluster's or a shard's) and its wildcard fit,
// with their ownership records: the apex label at most MaxApexLabel, the whole domain at most
// MaxDomainLength.
func CheckDomain(domain string) error {
	first, _, _ := strings.Cut(domain, ".")
	if len(first) > MaxApexLabel {
		return fmt.Errorf("%w: %s: its first label is %d characters; at most %d fit (external-dns' TXT registry writes %s%s)",
			ErrTooLong, domain, len(first), MaxApexLabel, registryTypePrefix, first)
	}
	if len(domain) > MaxDomainLength {
		return fmt.Errorf("%w: %s is %d characters; at most %d fit (external-dns' TXT registry writes %s<domain>, and a DNS name holds %d)",
			ErrTooLong, domain, len(domain), MaxDomainLength, registryWildcard, MaxNameLength)
	}
	return nil
}

// RegistryNames are the ownership records external-dns writes for a domain's apex and wildcard,
// for the longest record type (exposed for tests that check the budget against the real thing).
func RegistryNames(domain string) []string {
	return []string{registryTypePrefix + domain, registryWildcard + domain}
}

// WildcardName is the name that covers every host under domain.
func WildcardName(domain string) string { return "*." + domain }
