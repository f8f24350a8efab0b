// Package admission is Shardgate's validating admission webhook for IngressProfiles: a profile
// the controller would report Valid=False (a score that does not compile, costs too much or is
// not a number; an extender that is not https or has no CA) is refused when it is written, with
// the same field errors (pkg/validation), and the certificates the webhook serves: one per
// replica, kept in its memory, each CA trusted through the webhook configuration's caBundle.
package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// maxObject bounds the object (and the old object) a review decodes and validates. A request
// sent to the webhook port directly skips the API server's CRD schema, so without it an object
// could hold thousands of invalid entries, up to controller-runtime's 7 MiB body limit; the
// review's work is linear in the object (an UPDATE of two such objects took ~0.3 s of CPU at
// this bound, measured). An honest IngressProfile stays well below: the CRD's maxItems and
// maxLength keep its spec to tens of KiB, the API server caps its annotations (kubectl's
// last-applied copy is one) at 256 KiB, and managedFields add about the spec's size again.
const maxObject = 512 << 10

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
	if n := max(len(req.Object.Raw), len(req.OldObject.Raw)); n > maxObject {
		return admission.Errored(http.StatusRequestEntityTooLarge,
			fmt.Errorf("the IngressProfile is %d bytes, more than the %d this webhook reviews", n, maxObject))
	}
	p := &v1alpha1.IngressProfile{}
	if err := json.Unmarshal(req.Object.Raw, p); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the IngressProfile: %s", bound(err.Error())))
	}
	old := oldProfile(req)
	errs := profileErrors(p, defaultZone, previousScore(old))
	if old != nil {
		errs = newErrors(errs, p, profileErrors(old, defaultZone, old.Spec.Allocation.Score), old)
	}
	if len(errs) == 0 {
		return admission.Allowed("")
	}
	// As the API server words its own validation (field: Invalid value: ...: why), with its code.
	r := admission.Denied(denial(errs))
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

// previousScore is the score of the object an UPDATE replaces ("" for a CREATE).
func previousScore(old *v1alpha1.IngressProfile) string {
	if old != nil {
		return old.Spec.Allocation.Score
	}
	return ""
}

// oldProfile is the object an UPDATE replaces (nil for a CREATE or an old object that does not
// decode: then nothing is excused).
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

// newErrors are the errors of errs (found in p) that the replaced object old did not already
// have at a field left as it was: an update that leaves an unusable field alone (a label, a
// finalizer, another field fixed) is not refused for it, as Kubernetes ratchets CRD validation.
// The controller still reports the old error (Valid=False) and keeps the clusters on their last
// good settings. The field's value is compared, not only the rendered message, because several
// errors do not show their value (TooLong, Required, the caBundle's "(PEM)"): a different invalid
// value there renders the same message and must not be excused.
func newErrors(errs field.ErrorList, p *v1alpha1.IngressProfile, before field.ErrorList,
	old *v1alpha1.IngressProfile) field.ErrorList {
	if len(before) == 0 {
		return errs
	}
	oldObj, newObj := unstructured(old), unstructured(p)
	had := map[string]bool{}
	for _, e := range before {
		had[ratchetKey(e, oldObj)] = true
	}
	var out field.ErrorList
	for _, e := range errs {
		if !had[ratchetKey(e, newObj)] {
			out = append(out, e)
		}
	}
	return out
}

// ratchetKey is e's message and the JSON of the value around e's field in obj (ratchetScope):
// two errors with the same key say the same of the same values.
func ratchetKey(e *field.Error, obj map[string]any) string {
	v, ok := valueAt(obj, ratchetScope(e.Field))
	if !ok {
		return e.Error() + "\x00absent"
	}
	b, err := json.Marshal(v)
	if err != nil { // cannot happen for what ToUnstructured makes; then it excuses nothing
		return e.Error() + "\x00unmarshalable " + err.Error()
	}
	return e.Error() + "\x00" + string(b)
}

// ratchetScope is the part of the object an error at path may depend on: the list element it is
// in (spec.shards[1], for a shard's maxReplicas checked against its replicas), else the object
// holding the field (spec.allocation for spec.allocation.score). A check that reads a second
// field would otherwise be excused while the other field changes under it.
func ratchetScope(path string) string {
	if i := strings.IndexByte(path, ']'); i >= 0 {
		return path[:i+1]
	}
	if i := strings.LastIndexByte(path, '.'); i > strings.IndexByte(path, '.') {
		return path[:i]
	}
	return path
}

// unstructured is p as JSON values (map[string]any), which valueAt walks by field path. A profile
// that does not convert yields nil, where every field is absent.
func unstructured(p *v1alpha1.IngressProfile) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return nil
	}
	return m
}

// valueAt resolves a field.Path's string ("spec.shards[1].name", "a.b[key]") in obj: ok is false
// where the object has nothing there (or the path cannot be resolved, e.g. a JSON name with a dot).
func valueAt(obj map[string]any, path string) (v any, ok bool) {
	v = obj
	for path != "" {
		var seg string
		switch {
		case path[0] == '.':
			path = path[1:]
			continue
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil, false
			}
			seg, path = path[1:end], path[end+1:]
			if list, isList := v.([]any); isList {
				i, err := strconv.Atoi(seg)
				if err != nil || i < 0 || i >= len(list) {
					return nil, false
				}
				v = list[i]
				continue
			}
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			seg, path = path[:end], path[end:]
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, true
}

// denial is errs worded as the API server words its own validation errors (one error alone, else
// "[field: Invalid value: v: why, ...]" as apimachinery's aggregate), from only the errors that
// fit in maxMessage: it says how many more it left out. It does not render the rest, nor use
// aggregate.Error, which joins every message one by one (quadratic in their number), while a
// request sent to the webhook directly may hold thousands.
func denial(errs field.ErrorList) string {
	const room = maxMessage - 40 // what ", ... (N more errors)]" still needs
	var b strings.Builder
	if len(errs) > 1 {
		b.WriteByte('[')
	}
	shown := 0
	for _, e := range errs {
		msg := e.Error()
		if shown > 0 {
			if b.Len()+len(", ")+len(msg) > room {
				break
			}
			b.WriteString(", ")
		} else {
			msg = cut(msg, room-b.Len()) // a first message too long for the room: its start
		}
		b.WriteString(msg)
		shown++
	}
	if left := len(errs) - shown; left > 0 {
		fmt.Fprintf(&b, ", ... (%d more errors)", left)
	}
	if len(errs) > 1 {
		b.WriteByte(']')
	}
	return b.String()
}

// bound cuts s to maxMessage bytes on a character boundary, saying how much it left out.
func bound(s string) string { return cut(s, maxMessage) }

// cut cuts s to at most n bytes (n >= 40) on a character boundary, saying how much it left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := n - 40
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return fmt.Sprintf("%s... (%d more bytes)", s[:c], len(s)-c)
}
