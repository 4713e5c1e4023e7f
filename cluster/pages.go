package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"reflect"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// A LIST of a built-in kind is read here rather than by its typed client:
// each page is read into a buffer kept for the next page, its objects are
// masked on the wire (maskFor) and then decoded by their own generated
// code. On a 2,000-node cluster the typed clients' way (a body grown as it
// is read, copied out of its envelope, every object decoded whole and then
// trimmed) was two fifths of a run's CPU and most of its garbage.

// protobufAccept asks for protobuf, which every built-in kind speaks.
const protobufAccept = "application/vnd.kubernetes.protobuf, application/json"

// protobufPrefix starts every body the API server sends in protobuf.
var protobufPrefix = []byte{'k', '8', 's', 0}

// maxPooledBuffer bounds the buffers kept for the next page: the pages of
// a node's pods, hundreds of them, are up to a few hundred KiB each (125
// KiB for bench/live's nodes of 25 pods); a page of 500
// Deployments or nodes, a few MiB, is read once, and its buffer kept for
// the rest of the run was a fifth of the heap at a run's peak.
const maxPooledBuffer = 256 << 10

// buffers keeps up to a few dozen buffers for the next pages, each a page
// as it is read and then its objects, masked in place. Unlike a
// sync.Pool, which the collector empties, it keeps them for the whole run:
// a buffer grown afresh for each of 500 pages was cleared and faulted in
// each time, a tenth of a run's CPU.
var buffers = make(chan *bytes.Buffer, 32)

func getBuffer() *bytes.Buffer {
	select {
	case b := <-buffers:
		b.Reset()
		return b
	default:
		return new(bytes.Buffer)
	}
}

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	select {
	case buffers <- b:
	default:
	}
}

// large keeps one buffer for the next page too large for the others (500
// nodes, Deployments or ResourceSlices: 0.5-2 MiB). Such pages are read
// one after another, and each allocated afresh was cleared and faulted in
// again; one kept is at most maxLargeBuffer held for the rest of the run.
var large = make(chan []byte, 1)

const maxLargeBuffer = 2 << 20

// getLarge is a buffer of size bytes, the one kept if it is large enough.
func getLarge(size int) []byte {
	select {
	case b := <-large:
		if cap(b) >= size {
			return b[:size]
		}
	default:
	}
	return make([]byte, size)
}

func putLarge(b []byte) {
	if cap(b) > maxLargeBuffer {
		return
	}
	select {
	case large <- b:
	default:
	}
}

// typedList is the list of a built-in kind, which decodes itself from
// protobuf.
type typedList interface {
	runtime.Object
	Unmarshal([]byte) error
}

// newTypedList is an empty list of q's kind, or nil for a kind the scheme
// does not know (a custom resource, an aggregated API's), which the
// dynamic client reads.
func newTypedList(q Query) typedList {
	obj, err := scheme.New(q.Resource.GVR.GroupVersion().WithKind(q.Resource.Kind + "List"))
	if err != nil {
		return nil
	}
	list, _ := obj.(typedList)
	return list
}

// path is the API path of q's resource, in its namespace if it has one.
func (q Query) path() string {
	p := "/apis/" + q.Resource.GVR.Group
	if q.Resource.GVR.Group == "" {
		p = "/api"
	}
	p = path.Join(p, q.Resource.GVR.Version)
	if q.Resource.Namespaced && q.Namespace != "" {
		p = path.Join(p, "namespaces", q.Namespace)
	}
	return path.Join(p, q.Resource.GVR.Resource)
}

// pageReader reads pages of LISTs of built-in kinds.
type pageReader struct {
	client rest.Interface
}

// page reads one page of q into list.
func (r pageReader) page(ctx context.Context, q Query, list typedList, opts metav1.ListOptions) error {
	body, err := r.client.Get().AbsPath(q.path()).SetHeader("Accept", protobufAccept).
		VersionedParams(&opts, clientgoscheme.ParameterCodec).Stream(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	return readList(body, list, maskFor(q))
}

// decodeList is readList of a page already read.
func decodeList(body []byte, list typedList, mask *fieldMask) error {
	return readList(bytes.NewReader(body), list, mask)
}

// maxObjects bounds the size a protobuf envelope may claim for its objects
// before they are read: a corrupt length is an error, not an allocation.
const maxObjects = 1 << 31

// readList reads a page into list, masking its items on the wire when it
// is in protobuf; a JSON page is decoded whole.
func readList(r io.Reader, list typedList, mask *fieldMask) error {
	kind := kindOf(list)
	return readPage(r, kind, mask, func(masked []byte) error {
		presize(list, countField(masked, 2))
		if err := list.Unmarshal(masked); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		return nil
	}, func(body []byte) error {
		if _, _, err := codecs.UniversalDeserializer().Decode(body, nil, list); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		// As from protobuf: a typed list does not say its kind.
		list.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		return nil
	})
}

// readPage reads a page of a list of kind. A protobuf page's envelope
// (runtime.Unknown) says how long the list is before it comes, so it is
// read into a buffer of that size, not one grown as it arrives (on a
// large page the growing was most of what reading it cost); onProto gets
// the list masked. A JSON page, from a server that would not answer in
// protobuf, goes to onJSON whole. Neither may keep what it is given.
func readPage(r io.Reader, kind string, mask *fieldMask, onProto, onJSON func([]byte) error) error {
	br := bufio.NewReader(r)
	if prefix, err := br.Peek(len(protobufPrefix)); err != nil || !bytes.Equal(prefix, protobufPrefix) {
		buf := getBuffer()
		defer putBuffer(buf)
		if _, err := buf.ReadFrom(br); err != nil {
			return fmt.Errorf("read %s: %w", kind, err)
		}
		return onJSON(buf.Bytes())
	}
	_, _ = br.Discard(len(protobufPrefix))
	buf := getBuffer()
	defer putBuffer(buf)
	var answered, raw []byte
	gotRaw := false
	for !gotRaw {
		num, size, err := readField(br)
		if err != nil {
			return fmt.Errorf("decode %s: the envelope: %w", kind, err)
		}
		if size > maxObjects {
			return fmt.Errorf("decode %s: the envelope claims %d bytes of objects", kind, size)
		}
		var value []byte
		if num == 2 && size > maxPooledBuffer {
			value = getLarge(int(size))
			defer putLarge(value)
		} else {
			buf.Grow(int(size))
			value = buf.AvailableBuffer()[:size]
		}
		if _, err := io.ReadFull(br, value); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		switch num {
		case 1: // runtime.Unknown's typeMeta
			answered, _ = bytesField(value, 2)
			answered = bytes.Clone(answered)
		case 2: // runtime.Unknown's raw: the list
			raw, gotRaw = value, true
		}
	}
	if string(answered) != kind {
		return fmt.Errorf("decode %s: the server answered a %q", kind, answered)
	}
	// Masked in place: the page's bytes are read once, here.
	masked, err := mask.filter(raw[:0], raw)
	if err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return onProto(masked)
}

// packPage reads one page of q into pk and gives its continue token. In
// protobuf each object is kept as the mask left it, never decoded: the
// masks of what packedKind packs keep what settle keeps, so that it is the
// settled object's encoding. A JSON page is decoded, settled and packed.
func (r pageReader) packPage(ctx context.Context, q Query, opts metav1.ListOptions, pk *packedList) (string, error) {
	body, err := r.client.Get().AbsPath(q.path()).SetHeader("Accept", protobufAccept).
		VersionedParams(&opts, clientgoscheme.ParameterCodec).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = body.Close() }()
	return readPacked(body, q, pk)
}

// readPacked is packPage's reading of a page.
func readPacked(r io.Reader, q Query, pk *packedList) (cont string, err error) {
	list := newTypedList(q)
	if list == nil {
		return "", fmt.Errorf("%s is not a built-in kind", q)
	}
	kind := kindOf(list)
	err = readPage(r, kind, maskFor(q), func(masked []byte) error {
		// Room for the page's objects at once: a slab grown as they came
		// was half empty on average, for the whole run.
		page := make([]byte, 0, len(masked))
		var perr error
		if ferr := fields(masked, func(num protowire.Number, typ protowire.Type, tagLen int, raw []byte) bool {
			value, n := protowire.ConsumeBytes(raw[tagLen:])
			switch {
			case typ != protowire.BytesType || n < 0:
				perr = fmt.Errorf("decode %s: field %d is not a message", kind, num)
				return false
			case num == 1: // metadata
				c, _ := bytesField(value, 3) // continue
				cont = string(c)
			case num == 2: // items
				pk.add(&page, value)
			}
			return true
		}); ferr != nil {
			return fmt.Errorf("decode %s: %w", kind, ferr)
		}
		return perr
	}, func(body []byte) error {
		if _, _, err := codecs.UniversalDeserializer().Decode(body, nil, list); err != nil {
			return fmt.Errorf("decode %s: %w", kind, err)
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			settle(q, o)
			p, ok := o.(packable)
			if !ok {
				return fmt.Errorf("pack %T: not a built-in kind", o)
			}
			data := make([]byte, p.Size())
			if _, err := p.MarshalToSizedBuffer(data); err != nil {
				return fmt.Errorf("pack %T: %w", o, err)
			}
			pk.objs = append(pk.objs, data)
			return nil
		}); err != nil {
			return err
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			return err
		}
		cont = lm.GetContinue()
		return nil
	})
	return cont, err
}

// presize makes room in a list for n items: its generated decoder appends
// them one at a time, and the slices of large structs it grew were a fifth
// of the pods' memory, and copied at each growth.
func presize(list runtime.Object, n int) {
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	if items.Kind() == reflect.Slice && items.Cap() < n {
		items.Set(reflect.MakeSlice(items.Type(), 0, n))
	}
}

// readField reads the tag and length of a length-delimited field, the
// only kind an envelope has.
func readField(br *bufio.Reader) (protowire.Number, uint64, error) {
	tag, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(tag)
	if typ != protowire.BytesType {
		return 0, 0, fmt.Errorf("field %d has wire type %d", num, typ)
	}
	size, err := binary.ReadUvarint(br)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return num, size, err
}

// kindOf is the kind of a typed list, which a typed object does not say
// of itself.
func kindOf(list runtime.Object) string {
	gvks, _, err := scheme.ObjectKinds(list)
	if err != nil || len(gvks) == 0 {
		return fmt.Sprintf("%T", list)
	}
	return gvks[0].Kind
}
