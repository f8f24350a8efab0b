// Package admission is Shardgate's validating admission webhook for IngressProfiles: a profile
// the controller would report Valid=False (a score that does not compile, costs too much or is
// not a number; an extender that is not https or has no CA) is refused when it is written, with
// the same field errors (pkg/validation), and the certificate the webhook serves, kept in a
// Secret and trusted through the webhook configuration's caBundle.
package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/validation"
)

// ProfilePath is where the webhook server serves ProfileValidator (the chart's
// ValidatingWebhookConfiguration names it).
const ProfilePath = "/validate-shardgate-io-v1alpha1-ingressprofile"

// maxMessage bounds a denial's message: a score may be 4 KiB and is quoted in its error, and the
// API server returns the message to the client whole.
const maxMessage = 2048

// ProfileValidator refuses an IngressProfile (CREATE, UPDATE) that validation.Profile finds
// unusable.
type ProfileValidator struct {
	// DefaultZone is the controller's --dns-zone, which a profile without a zone gets.
	DefaultZone string
}

// Handle implements admission.Handler.
func (v *ProfileValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	return Review(req.AdmissionRequest, v.DefaultZone)
}

// Review is the decision on one request: allowed, denied with the profile's field errors, or
// refused as malformed. It never panics on what a client sends.
func Review(req admissionv1.AdmissionRequest, defaultZone string) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	if req.Kind.Group != v1alpha1.GroupVersion.Group || req.Kind.Kind != "IngressProfile" {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("this webhook reviews shardgate.io IngressProfiles, not %s",
			req.Kind.String()))
	}
	if len(req.Object.Raw) == 0 {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the request holds no IngressProfile"))
	}
	p := &v1alpha1.IngressProfile{}
	if err := json.Unmarshal(req.Object.Raw, p); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the IngressProfile: %s", bound(err.Error())))
	}
	errs := validation.Profile(p, defaultZone)
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	// As the API server words its own validation (field: Invalid value: ...: why), with its code.
	r := admission.Denied(bound(errs.ToAggregate().Error()))
	r.Result.Code, r.Result.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	return r
}

// bound cuts s to maxMessage bytes on a character boundary, saying how much it left out.
func bound(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - 40
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:cut], len(s)-cut)
}
