package validation

import (
	"crypto/x509"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
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
