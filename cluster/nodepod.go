package cluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// NodePod is what the checks that judge the pods of every accelerator node
// read of each pod (Cache.NodePods): who it is and who owns it, whether it
// runs, what extended resources it asks for, and its ways to a device
// around them. It is a type of its own, not a *corev1.Pod with most fields
// empty, so that a check cannot read a field the cache never kept: such a
// read does not compile. A check that needs another field adds it here,
// keeps it in nodePodMask and slimPod, and decodes it in decodeNodePod.
type NodePod struct {
	Namespace, Name string
	Owners          []PodOwner
	Phase           corev1.PodPhase
	// Ready is true when the pod's Ready condition is True; Unknown is
	// not Ready.
	Ready bool
	IP    string
	// HostPaths are its hostPath volumes.
	HostPaths                  []HostPathVolume
	InitContainers, Containers []NodeContainer
	// CDI are its annotations that name CDI devices
	// (CDIAnnotationPrefix), by key.
	CDI []Annotation
}

// PodOwner is an owner reference of a pod.
type PodOwner struct {
	Kind string
	UID  types.UID
}

// HostPathVolume is a volume of the node's filesystem.
type HostPathVolume struct {
	Name, Path string
}

// Annotation is one annotation of an object.
type Annotation struct {
	Key, Value string
}

// NodeContainer is what NodePod keeps of a container.
type NodeContainer struct {
	Name string
	// Requests and Limits are its extended resources (nvidia.com/gpu,
	// a NIC's rdma/...), none of Kubernetes' own.
	Requests, Limits Amounts
	// Claims is how many of the pod's resource claims it uses.
	Claims     int
	Privileged bool
	// Devices are its *_VISIBLE_DEVICES variables with a value of their
	// own (VisibleDevicesSuffix).
	Devices []EnvVar
	// Mounts are the names of the volumes it mounts.
	Mounts []string
}

// EnvVar is a variable of a container with a literal value.
type EnvVar struct {
	Name, Value string
}

// Amounts are the amounts of a resource list, in the list's order.
type Amounts []Amount

// Amount is a resource and how much of it.
type Amount struct {
	Name     corev1.ResourceName
	Quantity resource.Quantity
}

// Get is the amount of name, if the list has it.
func (a Amounts) Get(name corev1.ResourceName) (resource.Quantity, bool) {
	for _, x := range a {
		if x.Name == name {
			return x.Quantity, true
		}
	}
	return resource.Quantity{}, false
}

// NodePodsQuery is the LIST of the pods bound to node, as `kubectl
// describe node` reads them: a spec.nodeName field selector, never a
// cluster-wide pod LIST.
func NodePodsQuery(node string) Query {
	return Query{Resource: Pods, FieldSelector: NodeFieldSelector + node}
}

// NodePods returns the pods bound to node (NodePodsQuery), read once per
// run. The cache keeps the list packed; each call decodes what a NodePod
// holds straight from the packed encodings into pods of its own, their
// strings sharing the encodings' bytes. Decoding whole pods
// (corev1.Pod.Unmarshal) for each of the three checks that read every
// accelerator node's pods was 7% of check all's CPU samples on bench/live's
// cluster, besides what the collector then spent on them; this is 3.6%.
func (c *Cache) NodePods(ctx context.Context, node string) ([]*NodePod, time.Time, error) {
	q := NodePodsQuery(node)
	l, at, err := c.listed(ctx, q)
	if err != nil {
		return nil, at, err
	}
	if l.packed != nil {
		pods, err := l.packed.nodePods()
		if err != nil {
			return nil, at, fmt.Errorf("list %s: %w", q, err)
		}
		return pods, at, nil
	}
	out := make([]*NodePod, len(l.objs))
	for i, o := range l.objs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return nil, at, fmt.Errorf("list %s: got %T, want a Pod", q, o)
		}
		out[i] = nodePodOf(p)
	}
	return out, at, nil
}

// nodePods decodes a packed list of pods into NodePods, each its own
// allocation: the checks keep a few pods of each node (an exporter's, one
// that reaches a device), and a node's pods made as one array were all
// kept with them, 4 MB at the end of bench/live's run.
func (pk *packedList) nodePods() ([]*NodePod, error) {
	out := make([]*NodePod, len(pk.objs))
	for i, data := range pk.objs {
		out[i] = new(NodePod)
		if err := decodeNodePod(data, out[i]); err != nil {
			return nil, fmt.Errorf("pod %d of %d: %w", i+1, len(pk.objs), err)
		}
	}
	return out, nil
}

// nodePodOf keeps of a pod what a NodePod holds, as decodeNodePod keeps
// of its encoding.
func nodePodOf(p *corev1.Pod) *NodePod {
	np := &NodePod{Namespace: p.Namespace, Name: p.Name, Phase: p.Status.Phase, IP: p.Status.PodIP}
	for _, o := range p.OwnerReferences {
		np.Owners = append(np.Owners, PodOwner{Kind: o.Kind, UID: o.UID})
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			np.Ready = c.Status == corev1.ConditionTrue
			break
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.HostPath != nil {
			np.HostPaths = append(np.HostPaths, HostPathVolume{Name: v.Name, Path: v.HostPath.Path})
		}
	}
	np.InitContainers = nodeContainersOf(p.Spec.InitContainers)
	np.Containers = nodeContainersOf(p.Spec.Containers)
	for k, v := range p.Annotations {
		if strings.HasPrefix(k, CDIAnnotationPrefix) {
			np.CDI = append(np.CDI, Annotation{Key: k, Value: v})
		}
	}
	sortAnnotations(np.CDI)
	return np
}

func nodeContainersOf(cs []corev1.Container) []NodeContainer {
	if len(cs) == 0 {
		return nil
	}
	out := make([]NodeContainer, len(cs))
	for i, c := range cs {
		k := NodeContainer{Name: c.Name, Requests: amountsOf(c.Resources.Requests), Limits: amountsOf(c.Resources.Limits),
			Claims: len(c.Resources.Claims)}
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil {
			k.Privileged = *sc.Privileged
		}
		for _, e := range c.Env {
			if strings.HasSuffix(e.Name, VisibleDevicesSuffix) && e.ValueFrom == nil {
				k.Devices = append(k.Devices, EnvVar{Name: e.Name, Value: e.Value})
			}
		}
		for _, m := range c.VolumeMounts {
			k.Mounts = append(k.Mounts, m.Name)
		}
		out[i] = k
	}
	return out
}

// amountsOf keeps the extended resources of a list, by name, as the wire
// orders a map.
func amountsOf(l corev1.ResourceList) Amounts {
	var out Amounts
	for name, q := range l {
		if isExtended(name) {
			out = append(out, Amount{Name: name, Quantity: q})
		}
	}
	slices.SortFunc(out, func(a, b Amount) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortAnnotations(a []Annotation) {
	slices.SortFunc(a, func(x, y Annotation) int { return cmp.Compare(x.Key, y.Key) })
}

// The decoding of a packed pod: the field numbers are those nodePodMask
// keeps (k8s.io/api/core/v1/generated.proto). Each field is read as
// corev1.Pod.Unmarshal reads it: the last value of a field that is not
// repeated wins.

// decodeNodePod decodes a pod's encoding, masked by nodePodMask, into np.
// Its strings are data's bytes, not copies: a packed list is never written
// once made, and lives as long as the run's cache.
func decodeNodePod(data []byte, np *NodePod) error {
	readySeen := false
	err := each(data, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 1: // metadata
			return each(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1:
					np.Name = str(v)
				case 3:
					np.Namespace = str(v)
				case 12: // annotations
					k, val, err := mapEntry(v)
					if err == nil && strings.HasPrefix(k, CDIAnnotationPrefix) {
						np.CDI = append(np.CDI, Annotation{Key: k, Value: str(val)})
					}
					return err
				case 13: // ownerReferences
					var o PodOwner
					err := each(v, func(num protowire.Number, v []byte, _ uint64) error {
						switch num {
						case 1:
							o.Kind = str(v)
						case 4:
							o.UID = types.UID(str(v))
						}
						return nil
					})
					np.Owners = append(np.Owners, o)
					return err
				}
				return nil
			})
		case 2: // spec
			return each(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1: // volumes
					return decodeHostPath(v, np)
				case 2:
					c, err := decodeContainer(v)
					np.Containers = append(np.Containers, c)
					return err
				case 20:
					c, err := decodeContainer(v)
					np.InitContainers = append(np.InitContainers, c)
					return err
				}
				return nil
			})
		case 3: // status
			return each(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1:
					np.Phase = corev1.PodPhase(str(v))
				case 2: // conditions: the first Ready one, as nodePodOf
					t, _ := bytesField(v, 1)
					if string(t) == string(corev1.PodReady) && !readySeen {
						s, _ := bytesField(v, 2)
						np.Ready, readySeen = string(s) == string(corev1.ConditionTrue), true
					}
				case 6:
					np.IP = str(v)
				}
				return nil
			})
		}
		return nil
	})
	sortAnnotations(np.CDI)
	return err
}

// decodeHostPath adds a volume to np's if it is a hostPath one.
func decodeHostPath(v []byte, np *NodePod) error {
	var name, path string
	hostPath := false
	err := each(v, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 1:
			name = str(v)
		case 2: // volumeSource
			return each(v, func(num protowire.Number, v []byte, _ uint64) error {
				if num == 1 { // hostPath
					hostPath = true
					p, _ := bytesField(v, 1)
					path = str(p)
				}
				return nil
			})
		}
		return nil
	})
	if hostPath {
		np.HostPaths = append(np.HostPaths, HostPathVolume{Name: name, Path: path})
	}
	return err
}

func decodeContainer(v []byte) (NodeContainer, error) {
	var c NodeContainer
	err := each(v, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 1:
			c.Name = str(v)
		case 7: // env
			var e EnvVar
			valueFrom := false
			if err := each(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1:
					e.Name = str(v)
				case 2:
					e.Value = str(v)
				case 3:
					valueFrom = true
				}
				return nil
			}); err != nil {
				return err
			}
			if strings.HasSuffix(e.Name, VisibleDevicesSuffix) && !valueFrom {
				c.Devices = append(c.Devices, e)
			}
		case 8: // resources
			return each(v, func(num protowire.Number, v []byte, _ uint64) error {
				switch num {
				case 1:
					return addAmount(&c.Limits, v)
				case 2:
					return addAmount(&c.Requests, v)
				case 3:
					c.Claims++
				}
				return nil
			})
		case 9: // volumeMounts
			name, _ := bytesField(v, 1)
			c.Mounts = append(c.Mounts, str(name))
		case 15: // securityContext
			return each(v, func(num protowire.Number, _ []byte, x uint64) error {
				if num == 2 {
					c.Privileged = x != 0
				}
				return nil
			})
		}
		return nil
	})
	return c, err
}

// addAmount adds a resource list's entry to a, when it is an extended
// resource.
func addAmount(a *Amounts, entry []byte) error {
	name, value, err := mapEntry(entry)
	if err != nil || !isExtended(corev1.ResourceName(name)) {
		return err
	}
	s, _ := bytesField(value, 1) // Quantity's string
	q, err := resource.ParseQuantity(str(s))
	if err != nil {
		return fmt.Errorf("resource %s: %w", name, err)
	}
	*a = append(*a, Amount{Name: corev1.ResourceName(name), Quantity: q})
	return nil
}

// mapEntry is the key and value of a map's entry, the value as its bytes
// (a string, or a message's encoding).
func mapEntry(entry []byte) (key string, value []byte, err error) {
	err = each(entry, func(num protowire.Number, v []byte, _ uint64) error {
		switch num {
		case 1:
			key = str(v)
		case 2:
			value = v
		}
		return nil
	})
	return key, value, err
}

// each calls fn with each field of msg: a length-delimited one's bytes, a
// varint's value. Other wire types are passed over, as the generated
// decoders pass over fields they do not know.
func each(msg []byte, fn func(num protowire.Number, v []byte, x uint64) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(msg)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ == protowire.BytesType || typ == protowire.VarintType {
			if err := fn(num, v, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// str is b as a string, without a copy (see decodeNodePod).
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
