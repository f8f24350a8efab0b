package render_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestRouterSettleStaysOutOfThePodTemplate: a Traefik router answers its readiness before its
// routes are loaded, so its Deployment counts a new router available only 5 s after it turns ready
// (a rollout replaces the next one only then, when DNS publishes it), while the probe itself keeps
// successThreshold 1: a pod template change replaces every router of every cluster at the upgrade
// that brings it. HAProxy's readiness waits for its caches; it needs no settle.
func TestRouterSettleStaysOutOfThePodTemplate(t *testing.T) {
	objs := twoFlavours(t, v1alpha1.ShardSpec{Name: "default"}, v1alpha1.ShardSpec{Name: "heavy", Flavour: v1alpha1.FlavourHAProxy})
	for name, want := range map[string]int32{"router-default": 5, "router-heavy": 0} {
		d := as[appsv1.Deployment](t, objs, "Deployment", name)
		if d.Spec.MinReadySeconds != want {
			t.Errorf("%s: minReadySeconds %d, want %d", name, d.Spec.MinReadySeconds, want)
		}
		if p := d.Spec.Template.Spec.Containers[0].ReadinessProbe; p == nil || p.SuccessThreshold > 1 {
			t.Errorf("%s: readiness %+v: the settle is in the pod template", name, p)
		}
	}
}
