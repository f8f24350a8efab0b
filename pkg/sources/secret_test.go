package sources

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func kubeconfigSecret(namespace string, labels, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "edge", Labels: labels,
		Annotations: annotations}}
}

func TestFromSecret(t *testing.T) {
	labelled := map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}
	tests := []struct {
		name string
		s    *corev1.Secret
		want Source
	}{
		{"its own kubeconfig, always initialized", kubeconfigSecret("ns", labelled, nil), Source{
			Kind: v1alpha1.SourceKindSecret, Namespace: "ns", Name: "edge", Labels: labelled, ClusterID: "edge",
			KubeconfigSecret: "edge", Initialized: true}},
		{"cluster ID annotated", kubeconfigSecret("ns", nil, map[string]string{v1alpha1.ClusterIDAnnotation: "prod-2"}),
			Source{Kind: v1alpha1.SourceKindSecret, Namespace: "ns", Name: "edge", ClusterID: "prod-2", KubeconfigSecret: "edge",
				Initialized: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromSecret(tt.s); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("%+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestKubeconfigSecretsProvider(t *testing.T) {
	p := NewKubeconfigSecrets([]string{"ns"})
	if p.Kind() != v1alpha1.SourceKindSecret || !p.KubeconfigWatched() || !Available(p) {
		t.Fatalf("kind %s, kubeconfig watched %v, available %v", p.Kind(), p.KubeconfigWatched(), Available(p))
	}
	if NewKubeconfigSecrets(nil).Watch() != nil {
		t.Fatal("no namespaces listed, yet Secrets are watched (everywhere)")
	}
	labelled := kubeconfigSecret("ns", map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}, nil)
	key := client.ObjectKeyFromObject(labelled)
	src := FromSecret(labelled)
	testGet(t, p, []getCase{
		{"none", nil, key, nil},
		{"labelled", []client.Object{labelled}, key, &src},
		{"unlabelled", []client.Object{kubeconfigSecret("ns", nil, nil)}, key, nil},
		{"in a namespace not listed", []client.Object{kubeconfigSecret("other", labelled.Labels, nil)},
			types.NamespacedName{Namespace: "other", Name: "edge"}, nil},
	})
	testKubeconfigSecret(t, p, []kubeconfigCase{
		{"itself", nil, "ns", "edge", key, "", ""},
		{"in a namespace not listed", nil, "other", "edge", types.NamespacedName{}, v1alpha1.ReasonKubeconfigMissing,
			"namespace other is not one the controller reads kubeconfig Secrets from (--kubeconfig-secret-namespaces)"},
	})
	testKey(t, p, []keyCase{{"its own key", labelled, key, true}})

	// Only labelled Secrets' events pass: an update is judged by the Secret after it.
	w := p.Watch()
	for _, tc := range []struct {
		name string
		s    *corev1.Secret
		want bool
	}{{"labelled", labelled, true}, {"unlabelled", kubeconfigSecret("ns", nil, nil), false}} {
		for _, pr := range w.Predicates {
			created := pr.Create(event.CreateEvent{Object: tc.s})
			updated := pr.Update(event.UpdateEvent{ObjectOld: labelled, ObjectNew: tc.s})
			if created != tc.want || updated != tc.want {
				t.Errorf("%s: create passed %v, update %v; want %v", tc.name, created, updated, tc.want)
			}
		}
	}
}
