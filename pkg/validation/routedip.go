package validation

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// RoutedIP reports what makes a shard's routed-IP settings unusable: settings on a shard that
// does not publish through routed IPs, a RoutedIP shard without them, an address that is not one
// IPv4 address, the same address twice. Whether the class exists and holds the addresses is
// checked per cluster (the class may come later).
func RoutedIP(s v1alpha1.ShardSpec, p *field.Path) field.ErrorList {
	rp := p.Child("routedIP")
	if s.Publishing != v1alpha1.PublishRoutedIP {
		if s.RoutedIP != nil {
			return field.ErrorList{field.Forbidden(rp, "only for publishing RoutedIP")}
		}
		return nil
	}
	if s.RoutedIP == nil {
		return field.ErrorList{field.Required(rp, "publishing RoutedIP needs a className and addresses")}
	}
	var errs field.ErrorList
	if s.RoutedIP.ClassName == "" {
		errs = append(errs, field.Required(rp.Child("className"), ""))
	}
	if len(s.RoutedIP.Addresses) == 0 {
		errs = append(errs, field.Required(rp.Child("addresses"), ""))
	}
	seen := map[string]bool{}
	for i, a := range s.RoutedIP.Addresses {
		ip, err := netip.ParseAddr(a)
		switch {
		case err != nil || !ip.Is4() || ip.String() != a:
			errs = append(errs, field.Invalid(rp.Child("addresses").Index(i), a, "must be one IPv4 address in dotted form"))
		case seen[a]:
			errs = append(errs, field.Duplicate(rp.Child("addresses").Index(i), a))
		}
		seen[a] = true
	}
	return errs
}
