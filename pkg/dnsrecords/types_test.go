package dnsrecords_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/shardgate/shardgate/pkg/dnsrecords"
	"github.com/shardgate/shardgate/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestTypeMatchesRealCRD writes every field of our DNSEndpoint type through a real API server
// that serves external-dns' own CRD. The CRD prunes unknown fields, so a field whose name or
// shape differs from external-dns' comes back changed.
func TestTypeMatchesRealCRD(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	tools, err := framework.LocateTools("crds/external-dns")
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cp := framework.StartControlPlane(t, "seed", framework.ControlPlaneOptions{Scheme: s, CRDDirs: []string{tools.Path("crds/external-dns")}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := &DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c1"},
		Spec: DNSEndpointSpec{Endpoints: []Endpoint{{
			DNSName: "*.c1.example.test", Targets: []string{"192.0.2.1", "192.0.2.2"}, RecordType: RecordTypeA,
			SetIdentifier: "id", RecordTTL: 60, Labels: map[string]string{"owner": "x"},
			ProviderSpecific: []ProviderSpecificProperty{{Name: "n", Value: "v"}},
		}}},
	}
	if err := cp.Client.Create(ctx, want.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	got := &DNSEndpoint{}
	if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "c1"}, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Spec, want.Spec) {
		t.Fatalf("round trip through the real CRD changed the spec:\n got %+v\nwant %+v", got.Spec, want.Spec)
	}
	// Status is a subresource written by external-dns; ours must fit it too.
	got.Status.ObservedGeneration = got.Generation
	if err := cp.Client.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	again := &DNSEndpoint{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(got), again); err != nil || again.Status.ObservedGeneration != got.Generation {
		t.Fatalf("status round trip: %v %+v", err, again.Status)
	}
}
