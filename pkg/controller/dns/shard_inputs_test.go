package dns

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// A Traefik router that turned ready 2 s ago is not published yet (it answers its ping before
// its routes are loaded): shardInputs leaves its node out and says to look again in 3 s.
func TestShardInputsWaitForTheRoutersSettle(t *testing.T) {
	now := time.Now().Truncate(time.Second) // a stored condition time has whole seconds
	shard := v1alpha1.ShardSpec{Name: "default", Flavour: v1alpha1.FlavourTraefik, Publishing: v1alpha1.PublishHostNetwork}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: names.Namespace, Name: "router-default-1",
		Labels: map[string]string{v1alpha1.ShardLabel: "default", v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Second))}}}}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}
	rd := fake.NewClientBuilder().WithObjects(pod).Build()
	ins, _, recheck, err := shardInputs(context.Background(), rd, "c1.z.test", []v1alpha1.ShardSpec{shard}, nodes, nil, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins[0].Nodes) != 0 || recheck != 3*time.Second {
		t.Errorf("settling router: published %d nodes, recheck %s; want none, 3s", len(ins[0].Nodes), recheck)
	}
	ins, _, recheck, err = shardInputs(context.Background(), rd, "c1.z.test", []v1alpha1.ShardSpec{shard}, nodes, nil, nil,
		now.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(ins[0].Nodes) != 1 || recheck != 0 {
		t.Errorf("settled router: published %d nodes, recheck %s; want n1, none", len(ins[0].Nodes), recheck)
	}
}
