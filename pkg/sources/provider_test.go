package sources

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// seed is a fake seed holding objs, with every provider's types.
func seed(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	all := Registry{NewClusterAPI(nil, logr.Discard()), NewKubermatic(nil, logr.Discard()), NewKubeconfigSecrets(nil)}
	if err := all.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// getCase: what a provider's Get finds under key in a seed holding objs (nil: nothing).
type getCase struct {
	name string
	objs []client.Object
	key  types.NamespacedName
	want *Source
}

func testGet(t *testing.T, p Provider, cases []getCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run("Get: "+tc.name, func(t *testing.T) {
			src, found, err := p.Get(context.Background(), seed(t, tc.objs...), tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if found != (tc.want != nil) || found && !reflect.DeepEqual(src, *tc.want) {
				t.Fatalf("found %v: %+v, want %+v", found, src, tc.want)
			}
		})
	}
}

// kubeconfigCase: where a provider says the kubeconfig of namespace/name is in a seed holding
// objs, or why there is none to use yet (the Unengageable's reason and message).
type kubeconfigCase struct {
	name            string
	objs            []client.Object
	namespace, src  string
	want            types.NamespacedName
	reason, message string
}

func testKubeconfigSecret(t *testing.T, p Provider, cases []kubeconfigCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run("KubeconfigSecret: "+tc.name, func(t *testing.T) {
			got, err := p.KubeconfigSecret(context.Background(), seed(t, tc.objs...), tc.namespace, tc.src)
			var u *Unengageable
			switch {
			case tc.reason == "" && err != nil:
				t.Fatal(err)
			case tc.reason != "" && !errors.As(err, &u):
				t.Fatalf("got %v, %v; want %s: %s", got, err, tc.reason, tc.message)
			case tc.reason != "" && (u.Reason != tc.reason || u.Message != tc.message):
				t.Fatalf("got %s: %s; want %s: %s", u.Reason, u.Message, tc.reason, tc.message)
			case got != tc.want:
				t.Fatalf("Secret %v, want %v", got, tc.want)
			}
		})
	}
}

// keyCase: the ClusterIngress key an event on obj is about (ok false: none).
type keyCase struct {
	name string
	obj  client.Object
	want types.NamespacedName
	ok   bool
}

func testKey(t *testing.T, p Provider, cases []keyCase) {
	t.Helper()
	w := p.Watch()
	for _, tc := range cases {
		t.Run("Key: "+tc.name, func(t *testing.T) {
			if got, ok := w.Key(tc.obj); ok != tc.ok || got != tc.want {
				t.Fatalf("key %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
