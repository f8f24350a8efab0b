package routedip

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/vip"
)

// Claim is one RoutedIP of a user cluster. Everything in it but Shard is tenant input.
type Claim struct {
	// Key is namespace/name.
	Key, Namespace                string
	Address, ClassName            string
	ServiceName, ServiceNamespace string
	Created                       time.Time
	// Shard: Shardgate's own RoutedIP for a RoutedIP shard, as the seed's shard spec asks for it
	// (it wins an address over a tenant's). Decided seed-side: labels are the owner's to write.
	Shard bool
	// Ports the RoutedIP is served on: for a shard, the ports Shardgate renders for its routers;
	// for an owner's RoutedIP, its Service spec's ports.
	Ports []v1alpha1.FirewallPort
}

// Class is what admission and election need of a ClusterRoutedIPClass.
type Class struct {
	Name           string
	Pool           vip.Pool
	Invalid        string // why the class is unusable, if it is
	PostAllow      bool
	PerNodeIPLimit int
	PortLo, PortHi int32
	// MaxPorts a routed IP may have opened; ProviderIDPattern proves instances (Instances).
	MaxPorts          int
	ProviderIDPattern string
	// Profiles the class serves (empty: all); AllowOwners: tenants' own RoutedIPs may use it.
	Profiles    []string
	AllowOwners bool
}

// ClassOf reads a class, saying what is wrong with it instead of failing.
func ClassOf(c *v1alpha1.ClusterRoutedIPClass) Class {
	out := Class{Name: c.Name, PostAllow: c.Spec.FirewallPostAllow, PerNodeIPLimit: max(int(c.Spec.PerNodeIPLimit), 1),
		Profiles: c.Spec.Profiles, AllowOwners: c.Spec.AllowClusterOwners, ProviderIDPattern: c.Spec.ProviderIDPattern,
		MaxPorts: int(c.Spec.MaxPorts)}
	if out.MaxPorts <= 0 {
		out.MaxPorts = DefaultMaxPorts
	}
	var err error
	if out.Pool, err = vip.ParsePool(c.Spec.Addresses); err != nil {
		out.Invalid = "addresses: " + err.Error()
	}
	if out.PortLo, out.PortHi, err = ParseNodePortRange(c.Spec.NodePortRange); err != nil {
		out.Invalid = err.Error()
	}
	if len(c.Spec.UpdateRoutedIP.Template.Spec.Containers) == 0 || len(c.Spec.UpdateFirewall.Template.Spec.Containers) == 0 {
		out.Invalid = "updateRoutedIP and updateFirewall each need a pod template with a container"
	}
	// The pattern with a cluster ID stands in for every cluster's: a pattern that does not compile
	// is the class's error, not any cluster's.
	if _, err := compileProviderIDPattern(c.Spec.ProviderIDPattern, "cluster-id"); err != nil {
		out.Invalid = err.Error()
	}
	return out
}

// Verdict is whether a claim is served, and why not.
type Verdict struct {
	Claim
	Admitted bool
	Reason   string
	Message  string
}

// Admit decides which of the claims of a cluster of profile are served. A claim is refused when
// its class does not exist, is unusable, does not serve the profile or (for a cluster owner's
// claim) does not take owners' claims, its address is not an IPv4 address of the class, its Service is in
// another namespace (a namespace's owner may not steer an address by another's Service), or its
// Service has more ports than the class opens (maxPorts), or its
// address is taken: by another cluster's record (takenElsewhere: address → who), or by an
// earlier claim in this cluster (Shardgate's shard claims first, then the oldest).
func Admit(claims []Claim, profile string, classes map[string]Class, takenElsewhere map[string]string) []Verdict {
	claims = slices.Clone(claims)
	slices.SortFunc(claims, func(a, b Claim) int {
		if a.Shard != b.Shard {
			if a.Shard {
				return -1
			}
			return 1
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	owner := map[string]string{}
	out := make([]Verdict, 0, len(claims))
	for _, c := range claims {
		v := Verdict{Claim: c}
		class, found := classes[c.ClassName]
		addr, err := netip.ParseAddr(c.Address)
		switch {
		case !found:
			v.Reason, v.Message = v1alpha1.ReasonClassNotFound, fmt.Sprintf("no ClusterRoutedIPClass %q in the seed", c.ClassName)
		case class.Invalid != "":
			v.Reason, v.Message = v1alpha1.ReasonClassInvalid, fmt.Sprintf("ClusterRoutedIPClass %s is unusable: %s", c.ClassName, class.Invalid)
		case len(class.Profiles) > 0 && !slices.Contains(class.Profiles, profile):
			v.Reason, v.Message = v1alpha1.ReasonClassNotAllowed, fmt.Sprintf("ClusterRoutedIPClass %s does not serve clusters of IngressProfile %s", c.ClassName, profile)
		case !c.Shard && !class.AllowOwners:
			v.Reason, v.Message = v1alpha1.ReasonClassNotAllowed, fmt.Sprintf("ClusterRoutedIPClass %s takes only Shardgate's RoutedIP shards, not cluster owners' RoutedIPs (its allowClusterOwners is off)", c.ClassName)
		case err != nil || !addr.Is4():
			v.Reason, v.Message = v1alpha1.ReasonAddressNotInClass, "address is not an IPv4 address"
		case !class.Pool.Contains(addr):
			v.Reason, v.Message = v1alpha1.ReasonAddressNotInClass, fmt.Sprintf("%s is not one of ClusterRoutedIPClass %s's addresses", c.Address, c.ClassName)
		case c.ServiceNamespace != "" && c.ServiceNamespace != c.Namespace:
			v.Reason, v.Message = v1alpha1.ReasonServiceNotAllowed, "serviceRef must name a Service in the RoutedIP's own namespace"
		case tooManyPorts(c, class) != nil:
			v.Reason, v.Message = v1alpha1.ReasonTooManyPorts, tooManyPorts(c, class).Error()
		case takenElsewhere[c.Address] != "":
			v.Reason, v.Message = v1alpha1.ReasonAddressInUse, fmt.Sprintf("%s is held for %s", c.Address, takenElsewhere[c.Address])
		case owner[c.Address] != "":
			v.Reason, v.Message = v1alpha1.ReasonAddressInUse, fmt.Sprintf("%s is already asked for by RoutedIP %s", c.Address, owner[c.Address])
		default:
			v.Admitted = true
			owner[c.Address] = c.Key
		}
		out = append(out, v)
	}
	return out
}

func tooManyPorts(c Claim, class Class) error {
	_, err := FirewallPorts(c.Ports, class)
	return err
}

// Frozen: a verdict that keeps the address' record as it stands. A class that cannot be found or
// is unusable may be a moment's operator error; forgetting its holdings would free the addresses
// for whichever cluster asks first once it is fixed.
func Frozen(v Verdict) bool {
	return !v.Admitted && (v.Reason == v1alpha1.ReasonClassNotFound || v.Reason == v1alpha1.ReasonClassInvalid)
}
