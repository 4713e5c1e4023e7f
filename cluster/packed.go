package cluster

import (
	"fmt"
	"sync"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// packedPods are the pods of one node as the cache keeps them between
// reads: each pod's protobuf encoding, one after another in one slab. A
// decoded pod is mostly the empty fields of corev1.Pod and its containers
// (about 1.6 KB a pod however little is kept of it), and a run keeps the
// pods of every accelerator node until it ends: packed, they take a fifth
// of that. A read decodes them, unless another read's decoding is still
// held by its check: the checks that read the pods of every node run side
// by side and ask for each node's at about the same time.
type packedPods struct {
	slab []byte
	// ends are where each pod's encoding ends in slab.
	ends []int

	mu sync.Mutex
	// held is the first object of the last decoding, until no check
	// holds it.
	held weak.Pointer[runtime.Object]
}

// add appends the encoding of one pod.
func (pk *packedPods) add(pod []byte) {
	pk.slab = append(pk.slab, pod...)
	pk.ends = append(pk.ends, len(pk.slab))
}

// packPods packs objs, all of which must be pods.
func packPods(objs []runtime.Object) (*packedPods, error) {
	size := 0
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("a list of pods holds a %T", o)
		}
		size += p.Size()
	}
	pk := &packedPods{slab: make([]byte, size), ends: make([]int, len(objs))}
	start := 0
	for i, o := range objs {
		p := o.(*corev1.Pod)
		end := start + p.Size()
		if _, err := p.MarshalToSizedBuffer(pk.slab[start:end]); err != nil {
			return nil, fmt.Errorf("pack pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		pk.ends[i], start = end, end
	}
	return pk, nil
}

// unpack decodes the pods, each into its own allocation, so that a check
// keeping one pod does not keep its node's others.
func (pk *packedPods) unpack() ([]runtime.Object, error) {
	if pk == nil || len(pk.ends) == 0 {
		return nil, nil
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if first := pk.held.Value(); first != nil {
		return unsafe.Slice(first, len(pk.ends)), nil
	}
	out := make([]runtime.Object, len(pk.ends))
	start := 0
	for i, end := range pk.ends {
		p := &corev1.Pod{}
		if err := p.Unmarshal(pk.slab[start:end]); err != nil {
			return nil, fmt.Errorf("unpack pod %d of %d: %w", i+1, len(pk.ends), err)
		}
		out[i], start = p, end
	}
	pk.held = weak.Make(&out[0])
	return out, nil
}
