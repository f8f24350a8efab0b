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
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/allocation"
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
	errs := newErrors(profileErrors(p, defaultZone, previousScore(req)), previous(req, defaultZone))
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	// As the API server words its own validation (field: Invalid value: ...: why), with its code.
	r := admission.Denied(bound(errs.ToAggregate().Error()))
	r.Result.Code, r.Result.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	return r
}

// profileErrors is what the controller finds unusable in p (validation.Profile), and a score
// that is new here (not oldScore) whose estimated worst-case cost is past its run-time bound.
func profileErrors(p *v1alpha1.IngressProfile, defaultZone, oldScore string) field.ErrorList {
	errs := validation.Profile(p, defaultZone)
	score := p.Spec.Allocation.Score
	if score == "" || score == oldScore {
		return errs
	}
	path := field.NewPath("spec", "allocation", "score")
	for _, e := range errs {
		if e.Field == path.String() {
			return errs // it does not compile: that is said already
		}
	}
	if err := allocation.CheckScoreCost(score); err != nil {
		errs = append(errs, field.Invalid(path, score, err.Error()))
	}
	return errs
}

// previous is what was already unusable in the object an UPDATE replaces (nil for a CREATE or an
// old object that does not decode).
func previous(req admissionv1.AdmissionRequest, defaultZone string) field.ErrorList {
	old := oldProfile(req)
	if old == nil {
		return nil
	}
	return profileErrors(old, defaultZone, old.Spec.Allocation.Score)
}

// previousScore is the score of the object an UPDATE replaces ("" for a CREATE).
func previousScore(req admissionv1.AdmissionRequest) string {
	if old := oldProfile(req); old != nil {
		return old.Spec.Allocation.Score
	}
	return ""
}

func oldProfile(req admissionv1.AdmissionRequest) *v1alpha1.IngressProfile {
	if req.Operation != admissionv1.Update || len(req.OldObject.Raw) == 0 {
		return nil
	}
	old := &v1alpha1.IngressProfile{}
	if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
		return nil
	}
	return old
}

// newErrors are the errors of errs that the replaced object did not already have, value and all:
// an update that leaves an unusable field as it was (a label, a finalizer, another field fixed)
// is not refused for it, as Kubernetes ratchets CRD validation. The controller still reports
// the old error (Valid=False) and keeps the clusters on their last good settings.
func newErrors(errs, before field.ErrorList) field.ErrorList {
	had := map[string]bool{}
	for _, e := range before {
		had[e.Error()] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[e.Error()] {
			out = append(out, e)
		}
	}
	return out
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
