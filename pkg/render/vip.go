package render

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/vip"
)

// VIPAgentImage is the default image of the VIP agent's and keepalived's containers: Debian's
// keepalived and shardgate-vip-agent (Dockerfile.vip-agent). 0.2.0 runs them in two containers
// (`shardgate-vip-agent keepalived` in keepalived's); a new tag for that, so no node runs a
// cached image of the other contract under the same name.
const VIPAgentImage = "ghcr.io/shardgate/vip-agent:0.2.0"

// vipClusterRole lets VIP agents read their configuration and report their node (ConfigMaps and
// Leases in shardgate-system, granted there only by a RoleBinding).
const vipClusterRole = "shardgate-router-vip"

// The VIP agent's and keepalived's containers and their directories: each writes its own and
// reads the other's, mounted read-only (pkg/vip/agent). The agent's is /run/keepalived, where the
// health file keepalived tracks has always been: pods of the one-container image (0.1.0) read the
// same ConfigMap during a rollout, and a tracked file whose directory they lack would be dropped,
// and with it their routers' health.
const (
	vipAgentName     = "vip-agent"
	vipAgentUser     = 65532 // the agent runs as nobody in particular: it needs no file of the image's
	keepalivedName   = "keepalived"
	vipAgentDir      = "/run/keepalived"
	vipAgentVolume   = "vip-agent-run"
	vipSupervisorDir = "/run/keepalived-supervisor"
	vipSupervisorVol = "keepalived-run"
	vipAgentBinary   = "/usr/local/bin/shardgate-vip-agent"
	defaultAdvertInt = 200 * time.Millisecond
)

// VIPInput is a VIP shard's allocated VIPs (from status) and the nodes its routers run on now.
type VIPInput struct {
	Instances []vip.Instance
	Nodes     []vip.Node
}

// VIPConfigName is the ConfigMap holding a VIP shard's keepalived configuration and VIP list.
func VIPConfigName(shard string) string { return names.RouterName(shard) + "-vip" }

// vipObjects are a VIP shard's ConfigMap (keepalived.conf for every node of the shard, and the
// VIPs the agent reports on) and the RoleBinding that lets its routers write Leases in
// shardgate-system. Until VIPs are allocated and a router runs, the configuration says so and
// the agent waits.
func vipObjects(s v1alpha1.ShardSpec, in *VIPInput, labels map[string]string) ([]Object, error) {
	conf := "# waiting for VIPs to be allocated and a router to run\n"
	var list strings.Builder
	if in != nil && len(in.Instances) > 0 && len(in.Nodes) > 0 {
		var err error
		conf, err = vip.KeepalivedConfig(vip.KeepalivedInput{Shard: s.Name, Instances: in.Instances, Nodes: in.Nodes,
			Multicast: s.VIP != nil && s.VIP.VRRP == v1alpha1.VRRPMulticast, AdvertInterval: advertInterval(s),
			HealthFile: vipAgentDir + "/router-health", AliveFile: vipSupervisorDir + "/agent-alive"})
		if err != nil {
			return nil, err
		}
		for _, i := range in.Instances {
			fmt.Fprintf(&list, "%s %d\n", i.VIP, i.RouterID)
		}
	}
	name := names.RouterName(s.Name)
	return []Object{
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), &corev1.ConfigMap{ObjectMeta: objectMeta(VIPConfigName(s.Name), names.Namespace, labels),
			Data: map[string]string{"keepalived.conf": conf, "vips": list.String()}}},
		{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), vipRole()},
		{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), &rbacv1.RoleBinding{
			ObjectMeta: objectMeta(name+"-vip", names.Namespace, labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: vipClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: names.Namespace}},
		}},
	}, nil
}

func advertInterval(s v1alpha1.ShardSpec) time.Duration {
	if s.VIP != nil && s.VIP.AdvertInterval != nil {
		return s.VIP.AdvertInterval.Duration
	}
	return defaultAdvertInt
}

// vipRole: the agent gets and watches its shard's ConfigMap (list and watch with a name field
// selector) and gets, creates and renews its node's report Lease and reads its peers'. One role
// serves every VIP shard, so it cannot name each shard's ConfigMap: bound in shardgate-system
// only, it reads that namespace's ConfigMaps, which hold no secret (keepalived's and the routers'
// configuration, the cluster's CA certificate).
func vipRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta(vipClusterRole, "", managedLabels("")),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		},
	}
}

// vipContainers are the VIP agent and keepalived, each in a container of its own sharing the run
// directory (pkg/vip/agent): the agent reads its ConfigMap and writes Leases with the router's
// token and no capability, and asks routerURL (the flavour's readiness) whether its node's router
// serves; keepalived adds and removes the VIPs on the node's interface and sends
// VRRP adverts and gratuitous ARP with NET_ADMIN and NET_RAW, as root (a non-root process never
// gets an added capability on a real kubelet), and no token (security item 23). Both drop every
// other capability, never escalate and have a read-only root file system.
func vipContainers(s v1alpha1.ShardSpec, routerURL string, routerSettle time.Duration) []corev1.Container {
	image := VIPAgentImage
	if s.VIP != nil && s.VIP.Image != "" {
		image = s.VIP.Image
	}
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	node := []corev1.EnvVar{env("NODE_NAME", "spec.nodeName"), env("NODE_IP", "status.hostIP")}
	dirs := func(own string) []corev1.VolumeMount {
		return []corev1.VolumeMount{{Name: vipAgentVolume, MountPath: vipAgentDir, ReadOnly: own != vipAgentVolume},
			{Name: vipSupervisorVol, MountPath: vipSupervisorDir, ReadOnly: own != vipSupervisorVol}}
	}
	locked := func(sc *corev1.SecurityContext) *corev1.SecurityContext {
		sc.AllowPrivilegeEscalation, sc.ReadOnlyRootFilesystem = ptr.To(false), ptr.To(true)
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		return sc
	}
	return []corev1.Container{{
		Name: vipAgentName, Image: image, ImagePullPolicy: s.ImagePullPolicy,
		Command: []string{vipAgentBinary},
		// The agent reads the ConfigMap through the API, not a mounted volume: the kubelet
		// refreshes a volume a minute or more after a change, and a node joining must not start
		// before the others run the configuration naming it.
		Args: []string{"--shard=" + s.Name, "--node-name=$(NODE_NAME)", "--node-ip=$(NODE_IP)", "--namespace=$(POD_NAMESPACE)",
			"--configmap=" + VIPConfigName(s.Name), "--agent-dir=" + vipAgentDir, "--run-dir=" + vipSupervisorDir,
			"--router-url=" + routerURL},
		Env: append(node, env("POD_NAMESPACE", "metadata.namespace"),
			// The router's readiness settle (Flavour.Readiness): keepalived's priority brings a VIP
			// home as soon as the agent says its router serves, which must not be before its routes
			// are loaded. An environment variable, which an older agent image ignores.
			corev1.EnvVar{Name: "ROUTER_SETTLE", Value: routerSettle.String()}),
		VolumeMounts: dirs(vipAgentVolume),
		SecurityContext: locked(&corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](vipAgentUser), RunAsGroup: ptr.To[int64](vipAgentUser),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}),
	}, {
		Name: keepalivedName, Image: image, ImagePullPolicy: s.ImagePullPolicy,
		Command: []string{vipAgentBinary},
		Args: []string{"keepalived", "--node-name=$(NODE_NAME)", "--node-ip=$(NODE_IP)", "--run-dir=" + vipSupervisorDir,
			"--agent-dir=" + vipAgentDir},
		Env: node, VolumeMounts: dirs(vipSupervisorVol),
		SecurityContext: locked(&corev1.SecurityContext{
			RunAsNonRoot: ptr.To(false), RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}},
		}),
	}}
}

// keepalivedVolumes are the two directories, in memory and bounded: each holds at most a
// configuration (a ConfigMap's 1 MiB), its copy while it is replaced, and a few small files.
func keepalivedVolumes() []corev1.Volume {
	dir := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("4Mi"))}}}
	}
	return []corev1.Volume{dir(vipAgentVolume), dir(vipSupervisorVol)}
}

// VIPInputFor turns a shard's allocated VIPs and its routers' nodes into a VIPInput (entries that
// do not parse are left out: status is Shardgate's own, so none should).
func VIPInputFor(vips []v1alpha1.VIPAddress, nodes map[string]string) *VIPInput {
	in := &VIPInput{}
	for _, a := range vips {
		if addr, err := netip.ParseAddr(a.Address); err == nil {
			in.Instances = append(in.Instances, vip.Instance{VIP: addr, RouterID: int(a.RouterID), Home: a.Home})
		}
	}
	for n, ip := range nodes {
		if addr, err := netip.ParseAddr(ip); err == nil {
			in.Nodes = append(in.Nodes, vip.Node{Name: n, Address: addr})
		}
	}
	return in
}
