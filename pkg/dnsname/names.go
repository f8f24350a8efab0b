// Package dnsname validates the DNS names Shardgate publishes: zones, cluster IDs, and the
// domains built from them, within DNS limits and with room for external-dns' registry records.
package dnsname

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// maxNameLength is the longest DNS name (RFC 1035, presentation form without the trailing dot).
const maxNameLength = 253

// registryPrefixLength is the room external-dns' TXT registry needs in front of a name: it writes
// an ownership record "<type>-<name>" ("aaaa-" at most) next to every record. A cluster whose
// records fit but whose ownership records do not would never publish.
const registryPrefixLength = len("aaaa-")

// NormalizeZone validates a DNS zone and returns it lower-cased without a trailing dot.
func NormalizeZone(zone string) (string, error) {
	z := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(zone), "."))
	if z == "" {
		return "", fmt.Errorf("zone is empty: set the profile's dns.zone or the controller's --dns-zone")
	}
	if len(z) > maxNameLength {
		return "", fmt.Errorf("zone %q is %d characters long, more than %d", zone, len(z), maxNameLength)
	}
	for _, label := range strings.Split(z, ".") {
		if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
			return "", fmt.Errorf("zone %q: label %q: %s", zone, label, strings.Join(errs, "; "))
		}
	}
	return z, nil
}

// ValidateClusterID checks that id is one RFC 1123 label (lower case letters, digits, '-').
func ValidateClusterID(id string) error {
	if errs := validation.IsDNS1123Label(id); len(errs) > 0 {
		return fmt.Errorf("cluster ID %q is not an RFC 1123 label: %s", id, strings.Join(errs, "; "))
	}
	return nil
}

// Domain returns <id>.<zone> after checking that the cluster's longest name, the wildcard with
// external-dns' registry prefix, fits DNS limits. zone must be normalized.
func Domain(id, zone string) (string, error) {
	if err := ValidateClusterID(id); err != nil {
		return "", err
	}
	domain := id + "." + zone
	if n := len(WildcardName(domain)) + registryPrefixLength; n > maxNameLength {
		return "", fmt.Errorf("cluster ID %q in zone %q makes names of %d characters (with external-dns' registry prefix), more than %d",
			id, zone, n, maxNameLength)
	}
	return domain, nil
}

// WildcardName is the name that covers every host under domain.
func WildcardName(domain string) string { return "*." + domain }
