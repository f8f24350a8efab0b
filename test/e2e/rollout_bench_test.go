package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// BenchmarkProfileRollout prints the time from an IngressProfile change (a new router image for
// all three shards) to every shard's Deployment carrying it in all of 10 user clusters.
func BenchmarkProfileRollout(b *testing.B) {
	const clusters, rounds = 10, 5
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	for range b.N {
		env := framework.StartEnvironment(b, framework.EnvironmentOptions{UserClusters: clusters})
		shards := []v1alpha1.ShardSpec{{Name: "default"}, {Name: "edge"}, {Name: "internal", Publishing: v1alpha1.PublishNodePort}}
		p := &v1alpha1.IngressProfile{ObjectMeta: metav1.ObjectMeta{Name: "rollout"}, Spec: v1alpha1.IngressProfileSpec{Shards: shards}}
		if err := env.Seed.Client.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		for i, u := range env.Users {
			kc, err := u.Kubeconfig("shardgate", "system:masters")
			if err != nil {
				b.Fatal(err)
			}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("u%d", i),
				Labels: map[string]string{v1alpha1.KubeconfigSecretLabel: "true"}}, Data: map[string][]byte{"value": kc}}
			if err := env.Seed.Client.Create(ctx, s); err != nil {
				b.Fatal(err)
			}
			// NodePort publishing needs no router pod for DNS: one node gives every cluster a domain.
			createReadyNode(ctx, b, u, "n1", fmt.Sprintf("127.0.%d.1", 100+i))
		}
		framework.StartController(b, env.Seed, "--dns-zone=bench.test")
		waitImage(ctx, b, env.Users, shards, render.TraefikImage)

		var took []time.Duration
		for r := range rounds {
			image := fmt.Sprintf("registry.example/traefik:round-%d", r)
			start := time.Now()
			if err := env.Seed.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				b.Fatal(err)
			}
			for i := range p.Spec.Shards {
				p.Spec.Shards[i].Image = image
			}
			if err := env.Seed.Client.Update(ctx, p); err != nil {
				b.Fatal(err)
			}
			waitImage(ctx, b, env.Users, shards, image)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		b.ReportMetric(took[len(took)/2].Seconds(), "p50-s")
		b.ReportMetric(took[len(took)-1].Seconds(), "max-s")
		fmt.Printf("profile rollout: %d clusters x %d shards: profile change -> all Deployments updated p50 %s max %s (%d rounds)\n",
			clusters, len(shards), took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), rounds)
	}
}

// waitImage polls every user cluster until all shards' Deployments run image.
func waitImage(ctx context.Context, b *testing.B, users []*framework.ControlPlane, shards []v1alpha1.ShardSpec, image string) {
	deadline := time.Now().Add(2 * time.Minute)
	for _, u := range users {
		for _, s := range shards {
			for {
				d := &appsv1.Deployment{}
				err := u.Client.Get(ctx, client.ObjectKey{Namespace: names.Namespace, Name: names.RouterName(s.Name)}, d)
				if err == nil && d.Spec.Template.Spec.Containers[0].Image == image {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%s: shard %s never got image %s (err %v)", u.Name, s.Name, image, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
}
