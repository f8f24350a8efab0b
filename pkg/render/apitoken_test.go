package render

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// TestAPITokenOnlyWhereNeeded: a router pod automounts no token; the token volume goes only into
// the containers that call the API, and every container of every router pod is decided here, so a
// new container fails this test until someone decides whether it needs the router's token.
func TestAPITokenOnlyWhereNeeded(t *testing.T) {
	vipShard := v1alpha1.ShardSpec{Name: "edge", Publishing: v1alpha1.PublishVIP,
		VIP: &v1alpha1.VIPSettings{Pool: []string{"192.0.2.0/28"}, Count: 1}}
	// Traefik watches Ingresses, Services and Secrets; the VIP agent reads its ConfigMap and
	// writes Leases. keepalived, which parses VRRP packets from the whole L2 domain, calls no API
	// and holds no token (on 9e302f1 it ran in the agent's container with the token: item 23).
	// The load reporter renews its pod's Lease.
	needs := map[string]bool{"traefik": true, "vip-agent": true, "keepalived": false, "load-reporter": true}
	for _, tc := range []struct {
		shard v1alpha1.ShardSpec
		tls   bool
		want  []string // the pod's containers, in order
	}{
		{v1alpha1.ShardSpec{Name: "default"}, false, []string{"traefik"}},
		{v1alpha1.ShardSpec{Name: "np", Publishing: v1alpha1.PublishNodePort}, true, []string{"traefik"}},
		{v1alpha1.ShardSpec{Name: "lb", Publishing: v1alpha1.PublishLoadBalancer, Replicas: ptr.To[int32](3)}, false,
			[]string{"traefik"}},
		{v1alpha1.ShardSpec{Name: "rip", Publishing: v1alpha1.PublishRoutedIP}, false, []string{"traefik"}},
		{vipShard, false, []string{"traefik", "vip-agent", "keepalived"}},
		{vipShard, true, []string{"traefik", "vip-agent", "keepalived"}},
		{v1alpha1.ShardSpec{Name: "busy", Load: &v1alpha1.ShardLoadSpec{}}, true, []string{"traefik", "load-reporter"}},
	} {
		t.Run(fmt.Sprintf("%s/tls=%v", tc.shard.Name, tc.tls), func(t *testing.T) {
			pod := routerPod(t, tc.shard, tc.tls)
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
				t.Errorf("automountServiceAccountToken: %v, want false", pod.AutomountServiceAccountToken)
			}
			if pod.ServiceAccountName != "router-"+tc.shard.Name {
				t.Errorf("serviceAccountName: %q", pod.ServiceAccountName)
			}
			checkTokenVolume(t, pod.Volumes)
			var got []string
			for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
				got = append(got, c.Name)
				need, decided := needs[c.Name]
				if !decided {
					t.Errorf("container %s: decide whether it needs an API token", c.Name)
				}
				if has := mountsToken(t, c); has != need {
					t.Errorf("container %s mounts a token: %v, want %v", c.Name, has, need)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("containers %v, want %v", got, tc.want)
			}
		})
	}
}

func routerPod(t *testing.T, s v1alpha1.ShardSpec, tls bool) corev1.PodSpec {
	t.Helper()
	s = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{s})[0]
	in := RenderInput{Domain: s.Name + ".c1.example.test", Shard: s, DNSTTL: 60}
	if tls {
		in.TLS = &TLSInput{}
	}
	objs, err := RenderShard(Traefik{}, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			return as[appsv1.Deployment](t, o).Spec.Template.Spec
		}
	}
	t.Fatal("no Deployment rendered")
	return corev1.PodSpec{}
}

// mountsToken: whether c mounts the token volume, which must then be read-only at the path
// in-cluster clients read; nothing else may be mounted there.
func mountsToken(t *testing.T, c corev1.Container) bool {
	t.Helper()
	has := false
	for _, m := range c.VolumeMounts {
		if m.MountPath == apiTokenMountPath && m.Name != apiTokenVolume {
			t.Errorf("container %s mounts %s at the token path", c.Name, m.Name)
		}
		if m.Name != apiTokenVolume {
			continue
		}
		has = true
		if m.MountPath != apiTokenMountPath || !m.ReadOnly || m.SubPath != "" {
			t.Errorf("container %s mounts the token as %+v", c.Name, m)
		}
	}
	return has
}

// checkTokenVolume: the token volume has the automounted layout (token, ca.crt, namespace) with a
// token of the pod's ServiceAccount that expires within an hour.
func checkTokenVolume(t *testing.T, vols []corev1.Volume) {
	t.Helper()
	for _, v := range vols {
		if v.Name != apiTokenVolume {
			continue
		}
		p := v.Projected
		if p == nil || len(p.Sources) != 3 {
			t.Fatalf("token volume: %+v", v)
		}
		tok, ca, ns := p.Sources[0].ServiceAccountToken, p.Sources[1].ConfigMap, p.Sources[2].DownwardAPI
		if tok == nil || tok.Path != "token" || tok.Audience != "" ||
			tok.ExpirationSeconds == nil || *tok.ExpirationSeconds > 3600 {
			t.Errorf("token: %+v", tok)
		}
		if ca == nil || ca.Name != "kube-root-ca.crt" ||
			len(ca.Items) != 1 || ca.Items[0].Key != "ca.crt" || ca.Items[0].Path != "ca.crt" {
			t.Errorf("CA: %+v", ca)
		}
		if ns == nil || len(ns.Items) != 1 || ns.Items[0].Path != "namespace" || ns.Items[0].FieldRef == nil ||
			ns.Items[0].FieldRef.FieldPath != "metadata.namespace" {
			t.Errorf("namespace: %+v", ns)
		}
		return
	}
	t.Errorf("no volume %s", apiTokenVolume)
}
