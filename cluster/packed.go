package cluster

import (
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// packedList is a LIST's answer as the cache keeps it between reads when
// the objects are large and few checks read them: each object's protobuf
// encoding, as the page it came in was masked. A decoded object is mostly the
// empty fields of its type (about 1.6 KB for a pod however little is kept
// of it, and as much for a Deployment whose template is dropped), and a
// run keeps every answer until it ends: packed, the pods of every
// accelerator node take a fifth of that. The checks read them as types of
// their own made from the encodings (NodePod, Workload); a List of them
// decodes them afresh each time.
type packedList struct {
	newObject func() packable
	// objs are the objects' encodings, those of a page in one
	// allocation: a single slab for the whole list, grown page after
	// page, was copied at each growth, and each new copy faulted in.
	objs [][]byte
}

// packable is an object of a built-in kind, which encodes and decodes
// itself in protobuf.
type packable interface {
	runtime.Object
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
	Unmarshal([]byte) error
}

// packedKind makes the objects of q when the cache keeps its answer packed:
// the pods of a node, read by the three requirements that judge the pods of
// every accelerator node, and the Deployments and StatefulSets of the whole
// cluster, which the checks read as Workloads made once. Nil for any other
// query, whose objects are read by many checks and kept decoded.
func packedKind(q Query) func() packable {
	switch {
	case q.Whole:
		return nil
	case q.nodePods():
		return func() packable { return &corev1.Pod{} }
	case q.acrossCluster() && q.Resource.GVR == Deployments.GVR:
		return func() packable { return &appsv1.Deployment{} }
	case q.acrossCluster() && q.Resource.GVR == StatefulSets.GVR:
		return func() packable { return &appsv1.StatefulSet{} }
	}
	return nil
}

// add copies the encoding of one object to the end of page, and appends
// the copy to pk. A page made with room for all its objects is never
// moved; were it, the objects already added would keep the old one.
func (pk *packedList) add(page *[]byte, obj []byte) {
	start := len(*page)
	*page = append(*page, obj...)
	pk.objs = append(pk.objs, (*page)[start:len(*page):len(*page)])
}

// pack packs objs, which must all be of the type newObject makes.
func pack(objs []runtime.Object, newObject func() packable) (*packedList, error) {
	want := reflect.TypeOf(newObject())
	size := 0
	for _, o := range objs {
		p, ok := o.(packable)
		if !ok || reflect.TypeOf(o) != want {
			return nil, fmt.Errorf("a list of %s holds a %T", want, o)
		}
		size += p.Size()
	}
	pk := &packedList{newObject: newObject, objs: make([][]byte, len(objs))}
	slab := make([]byte, size)
	start := 0
	for i, o := range objs {
		p := o.(packable)
		end := start + p.Size()
		if _, err := p.MarshalToSizedBuffer(slab[start:end]); err != nil {
			return nil, fmt.Errorf("pack object %d of %d: %w", i+1, len(objs), err)
		}
		pk.objs[i], start = slab[start:end:end], end
	}
	return pk, nil
}

// unpack decodes the objects, each into its own allocation, so that a
// check keeping one does not keep the others.
func (pk *packedList) unpack() ([]runtime.Object, error) {
	if pk == nil || len(pk.objs) == 0 {
		return nil, nil
	}
	out := make([]runtime.Object, len(pk.objs))
	for i, data := range pk.objs {
		o := pk.newObject()
		if err := o.Unmarshal(data); err != nil {
			return nil, fmt.Errorf("unpack %T %d of %d: %w", o, i+1, len(pk.objs), err)
		}
		out[i] = o
	}
	return out, nil
}
