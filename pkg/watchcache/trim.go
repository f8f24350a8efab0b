package watchcache

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TrimMeta is what a Kind's Transform keeps of an object's metadata: its identity, version,
// times, labels and the annotations named in keep. Owner references, finalizers, managedFields
// and every other annotation go: a tenant decides how large those are, and no decision reads them.
func TrimMeta(m metav1.ObjectMeta, keep []string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp, Labels: m.Labels}
	for _, k := range keep {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}
