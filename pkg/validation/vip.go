package validation

import (
	"time"

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
// A VIP shard without a pool is valid: it takes the cluster's pool, checked per cluster.
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
