package validation

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/vip"
)

// Advert interval bounds: keepalived counts in centiseconds, VRRPv3 allows up to 40.95 s.
const (
	minAdvertInterval = 10 * time.Millisecond
	maxAdvertInterval = 25 * time.Second
)

// VIP reports what makes a shard's VIP settings unusable: settings on a shard that does not
// publish through VIPs, a pool that does not parse, an advert interval keepalived cannot use.
// A VIP shard without a pool is valid: it takes the profile's pool (ProfileVIP), else is told
// per cluster.
func VIP(s v1alpha1.ShardSpec, p *field.Path) field.ErrorList {
	vp := p.Child("vip")
	if s.Publishing != v1alpha1.PublishVIP {
		if s.VIP != nil {
			return field.ErrorList{field.Forbidden(vp, "only for publishing VIP")}
		}
		return nil
	}
	if s.VIP == nil {
		return nil
	}
	var errs field.ErrorList
	if len(s.VIP.Pool) > 0 {
		if _, err := vip.ParsePool(s.VIP.Pool); err != nil {
			errs = append(errs, field.Invalid(vp.Child("pool"), s.VIP.Pool, err.Error()))
		}
	}
	if s.VIP.Count < 0 || s.VIP.Count > 16 {
		errs = append(errs, field.Invalid(vp.Child("count"), s.VIP.Count, "must be 1 to 16"))
	}
	errs = append(errs, enum(vp.Child("vrrp"), s.VIP.VRRP, "", v1alpha1.VRRPUnicast, v1alpha1.VRRPMulticast)...)
	if a := s.VIP.AdvertInterval; a != nil {
		if a.Duration < minAdvertInterval || a.Duration > maxAdvertInterval || a.Duration%minAdvertInterval != 0 {
			errs = append(errs, field.Invalid(vp.Child("advertInterval"), a.Duration.String(), "must be 10ms to 25s in steps of 10ms"))
		}
	}
	return errs
}

// ProfileVIP reports what makes a profile's VIP settings unusable: a pool that does not parse, an
// L2 domain that is not a DNS label, a router ID range outside 1-255 or backwards. (The CRD
// refuses the same; this covers objects stored before it did.)
func ProfileVIP(v v1alpha1.ClusterVIPSettings, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(v.Pool) > 0 {
		if _, err := vip.ParsePool(v.Pool); err != nil {
			errs = append(errs, field.Invalid(p.Child("pool"), v.Pool, err.Error()))
		}
	}
	if v.L2Domain != "" {
		for _, msg := range validation.IsDNS1123Label(v.L2Domain) {
			errs = append(errs, field.Invalid(p.Child("l2Domain"), v.L2Domain, msg))
		}
	}
	if r := v.RouterIDs; r != nil && (r.First < 1 || r.Last > vip.MaxRouterID || r.First > r.Last) {
		errs = append(errs, field.Invalid(p.Child("routerIDs"), fmt.Sprintf("%d-%d", r.First, r.Last),
			fmt.Sprintf("must be a range within 1-%d, first to last", vip.MaxRouterID)))
	}
	return errs
}
