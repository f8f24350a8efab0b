package validation

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
	"github.com/shardgate/shardgate/pkg/render"
)

// MaxExtenderTimeout bounds one extender request.
const MaxExtenderTimeout = 10 * time.Second

// Allocation reports what makes a profile's custom allocation unusable: a score that does not
// compile or is not a number, an extender that is not https or whose CA bundle holds no
// certificate, a timeout past MaxExtenderTimeout.
func Allocation(a v1alpha1.AllocationSettings, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if a.Score != "" {
		if _, err := allocation.CompileScore(a.Score); err != nil {
			errs = append(errs, field.Invalid(path.Child("score"), a.Score, err.Error()))
		}
	}
	if e := a.Extender; e != nil {
		p := path.Child("extender")
		if u, err := url.Parse(e.URL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			errs = append(errs, field.Invalid(p.Child("url"), e.URL, "must be an https URL with a host and no user info"))
		}
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(e.CABundle)) {
			errs = append(errs, field.Invalid(p.Child("caBundle"), "(PEM)", "holds no PEM certificate"))
		}
		if e.Timeout != nil && (e.Timeout.Duration <= 0 || e.Timeout.Duration > MaxExtenderTimeout) {
			errs = append(errs, field.Invalid(p.Child("timeout"), e.Timeout.Duration.String(), "must be more than 0 and at most 10s"))
		}
	}
	return errs
}

// Load reports what makes a shard's load settings unusable: a capacity or thresholds out of range,
// a negative scale-down delay, routers that follow load on a flavour whose routers report none,
// or fewer most routers than least.
func Load(s v1alpha1.ShardSpec, path *field.Path) field.ErrorList {
	l := s.Load
	if l == nil {
		return nil
	}
	p := path.Child("load")
	var errs field.ErrorList
	if l.RequestsPerSecond != nil && *l.RequestsPerSecond < 1 {
		errs = append(errs, field.Invalid(p.Child("requestsPerSecond"), *l.RequestsPerSecond, "must be at least 1"))
	}
	if l.SaturationPercent != nil && (*l.SaturationPercent < 10 || *l.SaturationPercent > 1000) {
		errs = append(errs, field.Invalid(p.Child("saturationPercent"), *l.SaturationPercent, "must be 10 to 1000"))
	}
	if l.TargetPercent != nil && (*l.TargetPercent < 10 || *l.TargetPercent > 100) {
		errs = append(errs, field.Invalid(p.Child("targetPercent"), *l.TargetPercent, "must be 10 to 100"))
	}
	if l.ScaleDownDelay != nil && l.ScaleDownDelay.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("scaleDownDelay"), l.ScaleDownDelay.Duration.String(), "must not be negative"))
	}
	if l.MaxReplicas == nil {
		return errs
	}
	if f, ok := render.FlavourFor(s.Flavour); ok && !render.ReportsLoad(f, s) {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), *l.MaxReplicas,
			fmt.Sprintf("%s routers report no load to follow", s.Flavour)))
	}
	if s.Replicas != nil && *l.MaxReplicas < *s.Replicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), *l.MaxReplicas, "must be at least replicas"))
	}
	return errs
}
