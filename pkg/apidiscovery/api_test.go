package apidiscovery

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// flakyDiscovery answers ServerResourcesForGroupVersion from a script: an error, "not served",
// or the Cluster kind.
type flakyDiscovery struct {
	discovery.DiscoveryInterface
	calls  atomic.Int32
	script []string
}

func (f *flakyDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	i := int(f.calls.Add(1)) - 1
	step := f.script[min(i, len(f.script)-1)]
	switch step {
	case "error":
		return nil, errors.New("connection reset by peer")
	case "notfound":
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "cluster.x-k8s.io"}, "v1beta2")
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "clusters", Kind: "Cluster"}}}, nil
}

// TestDiscovery: a failed discovery is "not known yet", never "not installed", and an API
// installed later is picked up without a restart.
func TestDiscovery(t *testing.T) {
	d := &flakyDiscovery{DiscoveryInterface: &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}},
		script: []string{"error", "notfound", "error", "found"}}
	c := &API{GroupVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "Cluster API", Discovery: d, Interval: 5 * time.Millisecond, Log: logr.Discard()}
	found := make(chan struct{})
	c.OnFound(func() { close(found) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case <-found:
	case <-ctx.Done():
		t.Fatal("Cluster API never found")
	}
	if !c.Available() || d.calls.Load() != 4 {
		t.Fatalf("available %v after %d calls, want true after 4", c.Available(), d.calls.Load())
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	late := false
	c.OnFound(func() { late = true })
	if !late {
		t.Fatal("a callback registered after discovery did not run")
	}
}
