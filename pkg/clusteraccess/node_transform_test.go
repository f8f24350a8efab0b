package clusteraccess

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// realisticNode is a node as a kubelet reports it: 50 images, all conditions, annotations,
// managedFields.
func realisticNode(i int) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("worker-%04d", i), UID: "0b5d3c1e-8f7a-4c3b-9d2e-1a2b3c4d5e6f", ResourceVersion: "123456",
			Labels: map[string]string{
				"kubernetes.io/hostname": fmt.Sprintf("worker-%04d", i), "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": "m5.xlarge", "topology.kubernetes.io/zone": "eu-west-1a", "topology.kubernetes.io/region": "eu-west-1",
				"node-role.kubernetes.io/worker": "",
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsV1: fieldsV1(managedFieldsJSON())}},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}, ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0"},
		Status: corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.17"}, {Type: corev1.NodeExternalIP, Address: "203.0.113.17"}, {Type: corev1.NodeHostName, Address: "worker"}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: "ec2a1b2c3d4e5f60718293a4b5c6d7e8", SystemUUID: "ec2a1b2c-3d4e-5f60-7182-93a4b5c6d7e8", BootID: "5f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
				KernelVersion: "6.1.0-18-cloud-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.13",
				KubeletVersion: "v1.37.1", OperatingSystem: "linux", Architecture: "amd64"},
		},
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse,
			Reason: "KubeletHasSufficient" + string(c), Message: "kubelet has sufficient resources available for this condition",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	}
	n.Status.Conditions[3].Status = corev1.ConditionTrue
	for j := range 50 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("registry.example.com/team-%d/service-%d@sha256:%064d", j, j, j),
				fmt.Sprintf("registry.example.com/team-%d/service-%d:v1.%d.0", j, j, j),
			},
			SizeBytes: int64(10_000_000 + j),
		})
	}
	return n
}

func TestTrimNodeKeepsWhatDecisionsNeed(t *testing.T) {
	n := realisticNode(1)
	n.Spec.Unschedulable = true
	n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}
	out, err := TrimNode(n)
	if err != nil {
		t.Fatal(err)
	}
	tn := out.(*corev1.Node)
	if tn.Name != n.Name || len(tn.Labels) != len(n.Labels) || !tn.Spec.Unschedulable || len(tn.Spec.Taints) != 1 ||
		len(tn.Status.Addresses) != 2 || readyStatus(tn) != corev1.ConditionTrue {
		t.Fatalf("lost a field decisions need: %+v", tn)
	}
	if len(tn.Status.Images) != 0 || len(tn.ManagedFields) != 0 || len(tn.Annotations) != 0 || len(tn.Status.Conditions) != 1 || tn.Status.NodeInfo.MachineID != "" {
		t.Fatalf("kept fields nobody reads: %+v", tn)
	}
	if other, _ := TrimNode("not a node"); other != "not a node" {
		t.Fatal("non-nodes must pass through")
	}
}

func TestNodeChange(t *testing.T) {
	base, _ := TrimNode(realisticNode(1))
	a := base.(*corev1.Node)
	heartbeat := realisticNode(1)
	heartbeat.Status.Conditions[3].LastHeartbeatTime = metav1.Now()
	hb, _ := TrimNode(heartbeat)
	if got := nodeChange(a, hb.(*corev1.Node)); got != 0 {
		t.Fatalf("a heartbeat counts as a change: %b", got)
	}
	for name, tc := range map[string]struct {
		mutate func(*corev1.Node)
		want   Change
	}{
		"ready":     {func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, ChangeNodes},
		"cordon":    {func(n *corev1.Node) { n.Spec.Unschedulable = true }, ChangeNodes},
		"taint":     {func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}} }, ChangeNodes},
		"address":   {func(n *corev1.Node) { n.Status.Addresses = n.Status.Addresses[:1] }, ChangeNodes},
		"deleting":  {func(n *corev1.Node) { now := metav1.Now(); n.DeletionTimestamp = &now }, ChangeNodes},
		"labels":    {func(n *corev1.Node) { n.Labels = map[string]string{"x": "y"} }, ChangeNodes | ChangeNodeLabels},
		"one label": {func(n *corev1.Node) { n.Labels["topology.kubernetes.io/zone"] = "elsewhere" }, ChangeNodes | ChangeNodeLabels},
	} {
		b := a.DeepCopy()
		tc.mutate(b)
		if got := nodeChange(a, b); got != tc.want {
			t.Errorf("%s: change %b, want %b", name, got, tc.want)
		}
	}
	tainted := a.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v1", Effect: corev1.TaintEffectNoSchedule}}
	retainted := tainted.DeepCopy()
	retainted.Spec.Taints[0].Value = "v2"
	if got := nodeChange(tainted, retainted); got != ChangeNodes {
		t.Errorf("a taint's new value: change %b, want %b", got, ChangeNodes)
	}
}

// managedFieldsJSON is ~2 KiB of field-set JSON, the size a kubelet's entry has.
func managedFieldsJSON() []byte {
	b := []byte(`{"f:status":{`)
	for i := range 60 {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, fmt.Sprintf(`"f:field-%02d":{".":{},"f:x":{}}`, i)...)
	}
	return append(b, "}}"...)
}

func fieldsV1(raw []byte) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	f.SetRawBytes(raw)
	return f
}
