package routedip

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// MaxProviderIDLength bounds a provider ID that may reach a Job: cloud instance IDs are far
// shorter, and a longer one is the cluster owner's input bloating the class's firewall map.
const MaxProviderIDLength = 255

// ClusterIDPlaceholder in a class's providerIDPattern stands for the cluster's accepted ID.
const ClusterIDPlaceholder = "{clusterID}"

// Instances decides which provider IDs are the cluster's own instances. A node's providerID is
// its owner's to write: only a pattern the seed's operator chose, filled with the ID the seed
// accepted for the cluster, proves an instance belongs to the cluster before the class's
// credentials act on it.
type Instances struct {
	re *regexp.Regexp
	// Unusable says why no instance can be proven (no pattern, or no accepted cluster ID).
	Unusable string
}

// InstancesOf compiles pattern for the cluster clusterID.
func InstancesOf(pattern, clusterID string) Instances {
	re, err := compileProviderIDPattern(pattern, clusterID)
	if err != nil {
		return Instances{Unusable: err.Error()}
	}
	return Instances{re: re}
}

func compileProviderIDPattern(pattern, clusterID string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, errors.New("providerIDPattern is not set, so no instance can be proven to belong to a cluster")
	}
	if strings.Contains(pattern, ClusterIDPlaceholder) && clusterID == "" {
		return nil, errors.New("the cluster has no accepted cluster ID yet, and providerIDPattern names " + ClusterIDPlaceholder)
	}
	re, err := regexp.Compile("^(?:" + strings.ReplaceAll(pattern, ClusterIDPlaceholder, regexp.QuoteMeta(clusterID)) + ")$")
	if err != nil {
		return nil, fmt.Errorf("providerIDPattern: %w", err)
	}
	return re, nil
}

// Refusal says why id is not one of the cluster's instances ("" when it is).
func (in Instances) Refusal(id string) string {
	switch {
	case in.re == nil:
		return in.Unusable
	case id == "":
		return "no spec.providerID"
	case len(id) > MaxProviderIDLength:
		return fmt.Sprintf("spec.providerID longer than %d characters", MaxProviderIDLength)
	case !in.re.MatchString(id):
		return "spec.providerID does not match the class's providerIDPattern for this cluster"
	}
	return ""
}

// refusal is in.Refusal(id) for a set id, "" for none.
func refusal(in Instances, id string) string {
	if id == "" {
		return ""
	}
	return in.Refusal(id)
}

// Trusted is a record as the class's firewall may use it: provider IDs that are not the
// cluster's instances and ports beyond the class's bounds are left out (the record was written
// by Shardgate, but the firewall Job runs with the class's credentials, so it checks again what
// the cluster's owner could have chosen). It says what it left out, for the class's status.
func Trusted(rec v1alpha1.RoutedIPRecord, in Instances, class Class) (v1alpha1.RoutedIPRecord, string) {
	var dropped []string
	if why := refusal(in, rec.ProviderID); why != "" {
		dropped = append(dropped, "holder: "+why)
		rec.ProviderID = ""
	}
	if why := refusal(in, rec.MovingProviderID); why != "" {
		dropped = append(dropped, "move target: "+why)
		rec.MovingProviderID = ""
	}
	if _, err := FirewallPorts(rec.Ports, class); err != nil {
		dropped = append(dropped, "ports: "+err.Error())
		rec.Ports = nil
	}
	return rec, strings.Join(dropped, "; ")
}
