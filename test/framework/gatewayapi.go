package framework

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/shardgate/shardgate/pkg/gatewayapi"
)

// InstallGatewayAPI creates the pinned release's standard CRDs in cp, as a cluster owner who
// installed Gateway API before Shardgate came would, and waits until they are established.
func InstallGatewayAPI(ctx context.Context, cp *ControlPlane) error {
	files, err := gatewayapi.CRDFiles.ReadDir("crds")
	if err != nil {
		return err
	}
	var crds []string
	for _, f := range files {
		b, err := gatewayapi.CRDFiles.ReadFile("crds/" + f.Name())
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		if crd.Kind != "CustomResourceDefinition" || !strings.HasSuffix(crd.Name, ".gateway.networking.k8s.io") {
			continue // the release's admission policy
		}
		if err := cp.Client.Create(ctx, crd); err != nil {
			return fmt.Errorf("create %s: %w", crd.Name, err)
		}
		crds = append(crds, crd.Name)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, name := range crds {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			established := false
			for _, c := range crd.Status.Conditions {
				established = established || c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
}
