package cistatus

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func cond(typ string, s metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: "m", LastTransitionTime: metav1.NewTime(at)}
}

func TestCompose(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	reachable := cond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable, t0)
	published := cond(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished, t0)
	certOK := cond(v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued, t0)
	certBad := cond(v1alpha1.ConditionCertificateReady, metav1.ConditionFalse, v1alpha1.ReasonChallengeFailed, now)
	foreign := cond("SomeoneElses", metav1.ConditionTrue, "Theirs", t0)
	readyAt := func(s metav1.ConditionStatus, at time.Time) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: s, LastTransitionTime: metav1.NewTime(at)}
	}
	base := v1alpha1.ClusterIngressStatus{Domain: "old.test", Routes: 3, Certificate: &v1alpha1.CertificateStatus{Name: "c"},
		Conditions: []metav1.Condition{foreign, reachable, published, certOK, readyAt(metav1.ConditionTrue, t0)}}

	for _, tc := range []struct {
		name  string
		parts map[Owner]*v1alpha1.ClusterIngressStatus
		check func(t *testing.T, got v1alpha1.ClusterIngressStatus)
	}{
		{name: "no part: the object's status, Ready kept with its time", check: func(t *testing.T, got v1alpha1.ClusterIngressStatus) {
			r := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionReady)
			if got.Domain != "old.test" || got.Routes != 3 || r.Status != metav1.ConditionTrue || !r.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("got %+v", got)
			}
		}},
		{name: "a part replaces its owner's fields and conditions only", parts: map[Owner]*v1alpha1.ClusterIngressStatus{
			Certificates: {Certificate: &v1alpha1.CertificateStatus{Name: "new"}, Conditions: []metav1.Condition{certBad}},
		}, check: func(t *testing.T, got v1alpha1.ClusterIngressStatus) {
			c := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionCertificateReady)
			r := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionReady)
			if got.Certificate.Name != "new" || c.Status != metav1.ConditionFalse || got.Domain != "old.test" || got.Routes != 3 ||
				meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionDNSPublished) == nil {
				t.Errorf("got %+v", got)
			}
			if r.Status != metav1.ConditionFalse || !r.LastTransitionTime.Time.Equal(now) {
				t.Errorf("Ready: %+v", r)
			}
		}},
		{name: "a part without its condition or field removes them", parts: map[Owner]*v1alpha1.ClusterIngressStatus{
			Certificates: {},
		}, check: func(t *testing.T, got v1alpha1.ClusterIngressStatus) {
			if got.Certificate != nil || meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionCertificateReady) != nil {
				t.Errorf("got %+v", got)
			}
		}},
		{name: "a field another owner's part carries is not taken", parts: map[Owner]*v1alpha1.ClusterIngressStatus{
			Allocation: {Routes: 7, Domain: "stolen.test", Conditions: []metav1.Condition{certBad}},
		}, check: func(t *testing.T, got v1alpha1.ClusterIngressStatus) {
			c := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionCertificateReady)
			if got.Routes != 7 || got.Domain != "old.test" || c.Status != metav1.ConditionTrue {
				t.Errorf("got %+v", got)
			}
		}},
		{name: "conditions no owner declares are kept, Ready last", check: func(t *testing.T, got v1alpha1.ClusterIngressStatus) {
			if meta.FindStatusCondition(got.Conditions, "SomeoneElses") == nil || got.Conditions[len(got.Conditions)-1].Type != v1alpha1.ConditionReady {
				t.Errorf("conditions %+v", got.Conditions)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Compose(base.DeepCopy(), tc.parts, 4, now))
		})
	}
}

// TestComposeNormalizes: a composed status compares equal to what the API server gives back
// (times in whole seconds), or the writer would write the same status again and again.
func TestComposeNormalizes(t *testing.T) {
	at := time.Date(2026, 11, 26, 8, 0, 0, 123456789, time.UTC)
	got := Compose(&v1alpha1.ClusterIngressStatus{}, map[Owner]*v1alpha1.ClusterIngressStatus{
		DNS: {LastPublishedTime: &metav1.Time{Time: at}},
	}, 1, at)
	if got.LastPublishedTime.Nanosecond() != 0 || got.Conditions[0].LastTransitionTime.Nanosecond() != 0 {
		t.Errorf("not normalized: %+v", got)
	}
}

// TestOwnershipIsExclusive: every status field and condition type has exactly one owner (a field
// nobody owns would be left as it is forever; one with two owners would flap between them).
func TestOwnershipIsExclusive(t *testing.T) {
	st := reflect.TypeOf(v1alpha1.ClusterIngressStatus{})
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Name == "Conditions" {
			continue
		}
		src := &v1alpha1.ClusterIngressStatus{}
		fv := reflect.ValueOf(src).Elem().Field(i)
		switch fv.Kind() {
		case reflect.String:
			fv.SetString("x")
		case reflect.Int32, reflect.Int64:
			fv.SetInt(1)
		case reflect.Slice:
			fv.Set(reflect.MakeSlice(fv.Type(), 1, 1))
		case reflect.Pointer:
			fv.Set(reflect.New(fv.Type().Elem()))
		default:
			t.Fatalf("field %s: kind %s not covered by this test", f.Name, fv.Kind())
		}
		var owners []Owner
		for _, o := range order {
			dst := &v1alpha1.ClusterIngressStatus{}
			if w := owned[o].fields; w != nil {
				w(dst, src)
			}
			if !reflect.ValueOf(dst).Elem().Field(i).IsZero() {
				owners = append(owners, o)
			}
		}
		if len(owners) != 1 {
			t.Errorf("status.%s is owned by %v, want exactly one owner", f.Name, owners)
		}
	}
	seen := map[string]Owner{}
	for _, o := range order {
		for _, c := range owned[o].conditions {
			if prev, ok := seen[c]; ok {
				t.Errorf("condition %s owned by %s and %s", c, prev, o)
			}
			seen[c] = o
		}
	}
	if len(order) != len(owned) {
		t.Errorf("order lists %d owners, %d declared", len(order), len(owned))
	}
}
