package cistatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestForgetUnlessPostedSince(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	other := types.NamespacedName{Namespace: "ns", Name: "d"}
	cond := metav1.Condition{Type: "SourceAvailable", Status: metav1.ConditionTrue, Reason: "Present"}
	posted := func(b *Board) bool { _, ok := b.Posted(key, cond.Type); return ok }

	for _, tc := range []struct {
		name string
		// sinceMark posts after the mark (before ForgetUnlessPostedSince).
		sinceMark func(b *Board)
		kept      bool
	}{
		{name: "nothing posted since the mark: forgotten", sinceMark: func(*Board) {}},
		{name: "only another key posted since: forgotten", sinceMark: func(b *Board) { b.Post(other, cond) }},
		{name: "the same condition posted again since: kept", sinceMark: func(b *Board) { b.Post(key, cond) }, kept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBoard()
			b.Post(key, cond)
			mark := b.Mark()
			tc.sinceMark(b)
			b.ForgetUnlessPostedSince(key, mark)
			if posted(b) != tc.kept {
				t.Fatalf("posted after ForgetUnlessPostedSince: %v, want %v", posted(b), tc.kept)
			}
			if !tc.kept {
				// Forgotten entirely: a later post is new again and wakes the writer.
				drain(b)
				b.Post(key, cond)
				if len(b.wake) != 1 {
					t.Fatalf("a post after forgetting woke the writer %d times, want 1", len(b.wake))
				}
			}
		})
	}
}

func drain(b *Board) {
	for len(b.wake) > 0 {
		<-b.wake
	}
}
