package cluster

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// fieldMask selects the fields of a protobuf message to keep, before the
// message is decoded: what is dropped on the wire is never allocated. The
// pods of thousands of accelerator nodes are read for a few fields each,
// and decoding them whole was a fifth of a run's CPU and most of its
// garbage.
type fieldMask struct {
	// sub is indexed by field number: nil leaves the field to others,
	// dropped drops it, whole keeps it as it is, any other mask keeps it
	// filtered by that mask.
	sub []*fieldMask
	// others is what becomes of the fields sub does not name: nil drops
	// them, whole keeps them.
	others *fieldMask
	// all keeps the field as it is.
	all bool
	// keep, when set, is asked of each value of a length-delimited field
	// (an entry of a repeated message or of a map) before it is kept.
	keep func(value []byte) bool
}

// whole keeps a field as it is; dropped drops it.
var whole, dropped = &fieldMask{all: true}, &fieldMask{}

// maskField is one field of a message mask and the mask of its value.
type maskField struct {
	num  protowire.Number
	mask *fieldMask
}

// message builds the mask of a message from its kept fields.
func message(kept ...maskField) *fieldMask {
	m := &fieldMask{}
	for _, f := range kept {
		if int(f.num) >= len(m.sub) {
			m.sub = slices.Grow(m.sub, int(f.num)+1-len(m.sub))[:f.num+1]
		}
		m.sub[f.num] = f.mask
	}
	return m
}

// allBut builds the mask of a message that keeps every field but those
// named, which are dropped or filtered.
func allBut(named ...maskField) *fieldMask {
	m := message(named...)
	m.others = whole
	return m
}

// drop drops field num.
func drop(num protowire.Number) maskField { return maskField{num, dropped} }

// field keeps field num whole, or filtered by mask when one is given.
func field(num protowire.Number, mask ...*fieldMask) maskField {
	if len(mask) == 0 {
		return maskField{num, whole}
	}
	return maskField{num, mask[0]}
}

// entries is m asking keep of each entry first.
func entries(keep func([]byte) bool, m *fieldMask) *fieldMask {
	return &fieldMask{sub: m.sub, others: m.others, all: m.all, keep: keep}
}

// filter appends to dst the fields of the message src that m keeps, in
// their order, re-encoding the length of each message it filtered.
//
// dst may be src[:0]: a message is then masked in place. Each field kept
// is written no longer than it was read (the same tag, a length no longer,
// fewer bytes), so what is written never overtakes what is yet to be read;
// a page of 500 nodes masked into a buffer of its own was a fresh
// allocation of megabytes, cleared, for each page.
func (m *fieldMask) filter(dst, src []byte) ([]byte, error) {
	var err error
	perr := fields(src, func(num protowire.Number, typ protowire.Type, tagLen int, raw []byte) bool {
		sub := m.others
		if int(num) < len(m.sub) && m.sub[num] != nil {
			sub = m.sub[num]
		}
		if sub == nil || sub == dropped {
			return true
		}
		if sub.all && sub.keep == nil {
			dst = append(dst, raw...)
			return true
		}
		if typ != protowire.BytesType {
			err = fmt.Errorf("field %d: a message was expected, not wire type %d", num, typ)
			return false
		}
		value, _ := protowire.ConsumeBytes(raw[tagLen:])
		if sub.keep != nil && !sub.keep(value) {
			return true
		}
		if sub.all {
			dst = append(dst, raw...)
			return true
		}
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		mark := len(dst)
		if dst, err = sub.filter(dst, value); err != nil {
			err = fmt.Errorf("field %d: %w", num, err)
			return false
		}
		// The filtered value's length goes before it: a few bytes moved,
		// of a message a few hundred bytes long.
		var size [10]byte // the longest a varint is
		l := protowire.AppendVarint(size[:0], uint64(len(dst)-mark))
		dst = slices.Insert(dst, mark, l...)
		return true
	})
	if perr != nil {
		return dst, perr
	}
	return dst, err
}

// fields calls fn with each field of a message, its number, wire type and
// whole encoding (tag included), until fn returns false; an error says
// where the message did not parse.
func fields(msg []byte, fn func(num protowire.Number, typ protowire.Type, tagLen int, raw []byte) bool) error {
	for len(msg) > 0 {
		num, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return protowire.ParseError(l)
		}
		vl := protowire.ConsumeFieldValue(num, typ, msg[l:])
		if vl < 0 {
			return protowire.ParseError(vl)
		}
		if !fn(num, typ, l, msg[:l+vl]) {
			return nil
		}
		msg = msg[l+vl:]
	}
	return nil
}

// bytesField is the first value of field num of a message, when it is
// length-delimited (a string, bytes, a message).
func bytesField(msg []byte, num protowire.Number) (value []byte, found bool) {
	_ = fields(msg, func(n protowire.Number, typ protowire.Type, tagLen int, raw []byte) bool {
		if n != num || typ != protowire.BytesType {
			return true
		}
		value, _ = protowire.ConsumeBytes(raw[tagLen:])
		found = true
		return false
	})
	return value, found
}

// hasField says whether a message has field num.
func hasField(msg []byte, num protowire.Number) (found bool) {
	_ = fields(msg, func(n protowire.Number, _ protowire.Type, _ int, _ []byte) bool {
		found = n == num
		return !found
	})
	return found
}

// countField counts the values of field num of a message.
func countField(msg []byte, num protowire.Number) (count int) {
	_ = fields(msg, func(n protowire.Number, _ protowire.Type, _ int, _ []byte) bool {
		if n == num {
			count++
		}
		return true
	})
	return count
}
