package cistatus

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func TestReady(t *testing.T) {
	cond := func(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	good := []metav1.Condition{
		cond(v1alpha1.ConditionSourceAvailable, metav1.ConditionTrue, v1alpha1.ReasonSourcePresent),
		cond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable),
		cond(v1alpha1.ConditionShardsAvailable, metav1.ConditionTrue, v1alpha1.ReasonShardsAvailable),
		cond(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonPublished),
	}
	if r := Ready(good); r.Status != metav1.ConditionTrue {
		t.Fatalf("all good: %+v", r)
	}
	for i, bad := range []metav1.Condition{
		cond(v1alpha1.ConditionSourceAvailable, metav1.ConditionFalse, v1alpha1.ReasonSourceMissing),
		cond(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable),
		cond(v1alpha1.ConditionShardsAvailable, metav1.ConditionFalse, v1alpha1.ReasonNoRouterReady),
		cond(v1alpha1.ConditionDNSPublished, metav1.ConditionTrue, v1alpha1.ReasonKeptLastTargets),
	} {
		conds := append([]metav1.Condition(nil), good...)
		conds[i] = bad
		if r := Ready(conds); r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, bad.Reason) {
			t.Errorf("%s %s: Ready %+v", bad.Type, bad.Reason, r)
		}
	}
	if r := Ready(nil); r.Status != metav1.ConditionFalse {
		t.Error("no conditions yet: Ready must be False")
	}
	// With TLS on, the certificate counts; with TLS off the condition is absent and does not.
	withCert := append(append([]metav1.Condition(nil), good...), cond(v1alpha1.ConditionCertificateReady, metav1.ConditionFalse, v1alpha1.ReasonChallengeFailed))
	if r := Ready(withCert); r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, v1alpha1.ReasonChallengeFailed) {
		t.Errorf("failing certificate: Ready %+v", r)
	}
	withCert[len(withCert)-1] = cond(v1alpha1.ConditionCertificateReady, metav1.ConditionTrue, v1alpha1.ReasonCertificateIssued)
	if r := Ready(withCert); r.Status != metav1.ConditionTrue {
		t.Errorf("issued certificate: Ready %+v", r)
	}
	// Every condition left out of Ready really is: a failing one does not make Ready False.
	for _, typ := range []string{v1alpha1.ConditionRoutesProtected, v1alpha1.ConditionGatewayAPIAvailable, v1alpha1.ConditionRoutedIPsAssigned,
		v1alpha1.ConditionRoutesServing} {
		if r := Ready(append(append([]metav1.Condition(nil), good...), cond(typ, metav1.ConditionFalse, "Failing"))); r.Status != metav1.ConditionTrue {
			t.Errorf("%s False: Ready %+v", typ, r)
		}
	}
}
