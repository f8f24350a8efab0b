package canary

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	canarycheck "github.com/shardgate/shardgate/pkg/canary"
	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// reconcilerFor is a canary reconciler over a fake seed holding ci, its user cluster engaged,
// every canary name resolving to addr and every request answered 200 (tests set Get otherwise).
func reconcilerFor(t *testing.T, ci *v1alpha1.ClusterIngress, refused canarycheck.Refused, addr string) (*Reconciler, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	seed := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(ci).WithObjects(ci).Build()
	access := clusteraccess.NewFake()
	controllertest.UserCluster(access, client.ObjectKeyFromObject(ci))
	r := &Reconciler{Client: seed, Access: access, Board: cistatus.NewBoard(seed), Interval: time.Minute,
		Limiter: rate.NewLimiter(rate.Inf, 1), Refused: refused,
		Resolve: func(context.Context, string) ([]string, error) { return []string{addr}, nil },
		Get:     func(context.Context, string, string) (int, string, error) { return 200, "OK", nil }}
	return r, seed
}
