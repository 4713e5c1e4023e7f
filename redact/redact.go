// Package redact replaces what identifies a cluster's infrastructure in a
// report (node names, IP addresses, URL hosts, cloud account ids) with keyed
// pseudonyms, so that a report can be attached to a public pull request.
package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"sort"
	"strings"

	"github.com/aiconform/aiconform/report"
)

// Redactor turns identifying values into pseudonyms: an HMAC-SHA256 of the
// value under its key, so that one value always gets one pseudonym, in every
// file of a run and in every run with the same key, and references between
// evidence blocks still line up.
type Redactor struct {
	key []byte
}

// New returns a Redactor keyed by key. An empty key is replaced by 32 random
// bytes that are never exposed: pseudonyms are then stable within the run
// only.
func New(key []byte) *Redactor {
	if len(key) == 0 {
		key = make([]byte, 32)
		// crypto/rand.Read never returns an error; it crashes the program
		// rather than hand out weak bytes.
		_, _ = rand.Read(key)
	}
	return &Redactor{key: bytes.Clone(key)}
}

// Report rewrites every string of r in place and sets r.Run.Redacted. It
// first collects the identifying values of the whole report (node names from
// kubectl tables, IP addresses, URL hosts, cloud ids), then replaces every
// occurrence of each, longest first, so that a value inside another (a node
// name inside a provider id) is replaced the same way everywhere. The digest
// is cleared: the caller seals the report again, so that it covers what is
// published.
func (x *Redactor) Report(r *report.Report) {
	if r == nil {
		return
	}
	found := findings{}
	found.nodes(r)
	walker{text: func(s string) string { found.scan(s); return s }}.walk(reflect.ValueOf(r).Elem())
	rp := x.replacer(found)
	walker{text: rp.replace, output: rp.output}.walk(reflect.ValueOf(r).Elem())
	r.Run.Redacted = true
	r.Digest = ""
}

// kind is what a value is. The pseudonym says it, and when one text was found
// as two kinds (a node named by its IP), the kind declared first wins.
type kind int

const (
	kindNode kind = iota
	kindInstance
	kindAccount
	kindUser
	kindIPv4
	kindIPv6
	kindHost
)

var kindNames = [...]string{"node", "instance", "account", "user", "ipv4", "ipv6", "host"}

// pseudonym formats a kind and hex digits of the value's HMAC. IPs are not
// given addresses from a documentation range: 198.51.100.0/24 has 254, and
// with about 20 addresses in a report two would more likely than not share
// one, making two pods look like one.
func (k kind) pseudonym(digits string) string {
	switch k {
	case kindNode:
		return "node-" + digits
	case kindInstance:
		return "instance-" + digits
	case kindAccount:
		return "account-" + digits
	case kindUser:
		return "user-" + digits
	case kindIPv4:
		return "ip-" + digits
	case kindIPv6:
		return "ip6-" + digits
	default:
		return "host-" + digits + ".example"
	}
}

// findings maps each identifying text, as written in the report, to its kind.
type findings map[string]kind

func (f findings) add(text string, k kind) {
	if text == "" {
		return
	}
	if old, ok := f[text]; ok && old <= k {
		return
	}
	f[text] = k
}

// canonical is the form a value is hashed in, so that two spellings of one
// address or host get one pseudonym.
func canonical(text string, k kind) string {
	switch k {
	case kindIPv4, kindIPv6:
		if a, ok := parseIP(text); ok {
			return a.String()
		}
	case kindHost, kindAccount:
		return strings.ToLower(text)
	}
	return text
}

// digits is the first n hex digits of the HMAC of a value of kind k.
func (x *Redactor) digits(k kind, value string, n int) string {
	mac := hmac.New(sha256.New, x.key)
	mac.Write([]byte(kindNames[k]))
	mac.Write([]byte{0})
	mac.Write([]byte(value))
	return hex.EncodeToString(mac.Sum(nil))[:n]
}

// replacer computes every finding's pseudonym. Pseudonyms have 8 hex digits;
// two different values of one kind that would share one both get 16 instead,
// so that a pseudonym never stands for two values.
func (x *Redactor) replacer(found findings) *replacer {
	type value struct {
		k     kind
		canon string
	}
	short := map[string]map[value]bool{}
	for text, k := range found {
		v := value{k, canonical(text, k)}
		p := k.pseudonym(x.digits(k, v.canon, 8))
		if short[p] == nil {
			short[p] = map[value]bool{}
		}
		short[p][v] = true
	}
	rp := &replacer{with: map[string]string{}}
	lengths := map[int]bool{}
	for text, k := range found {
		canon := canonical(text, k)
		p := k.pseudonym(x.digits(k, canon, 8))
		if len(short[p]) > 1 {
			p = k.pseudonym(x.digits(k, canon, 16))
		}
		rp.with[text] = p
		lengths[len(text)] = true
		rp.first[text[0]] = true
	}
	for n := range lengths {
		rp.lengths = append(rp.lengths, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(rp.lengths)))
	return rp
}

// replacer replaces findings in one pass, so that a pseudonym is never
// rewritten again.
type replacer struct {
	with map[string]string
	// lengths of the findings, longest first: where two start at the same
	// place, the longer one wins.
	lengths []int
	// first marks the bytes a finding starts with.
	first [256]bool
}

// replace replaces every finding in s that does not split a word: a match
// must not have a letter or digit both just outside and just inside either
// end, so node-1 is not found in node-10, nor 10.0.0.1 in 110.0.0.1.
func (rp *replacer) replace(s string) string {
	if len(rp.with) == 0 {
		return s
	}
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); {
		if !rp.first[s[i]] || (i > 0 && isAlnum(s[i-1]) && isAlnum(s[i])) {
			i++
			continue
		}
		matched := 0
		for _, n := range rp.lengths {
			j := i + n
			if j > len(s) {
				continue
			}
			if _, ok := rp.with[s[i:j]]; ok && (j == len(s) || !(isAlnum(s[j-1]) && isAlnum(s[j]))) {
				matched = n
				break
			}
		}
		if matched == 0 {
			i++
			continue
		}
		b.WriteString(s[done:i])
		b.WriteString(rp.with[s[i:i+matched]])
		i += matched
		done = i
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

var evidenceType = reflect.TypeFor[report.Evidence]()

// walker visits every string of a value, reflectively, so that a field added
// to the report later is redacted without anyone remembering to. An
// evidence's output goes to output, when set, which keeps kubectl's columns
// aligned.
type walker struct {
	text   func(string) string
	output func(string) string
}

func (w walker) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(w.text(v.String()))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			w.walk(v.Elem())
		}
	case reflect.Interface:
		if !v.IsNil() && v.CanSet() {
			e := reflect.New(v.Elem().Type()).Elem()
			e.Set(v.Elem())
			w.walk(e)
			v.Set(e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			f := v.Field(i)
			if v.Type() == evidenceType && v.Type().Field(i).Name == "Output" && w.output != nil && f.CanSet() {
				f.SetString(w.output(f.String()))
				continue
			}
			w.walk(f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.walk(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			w.walk(k)
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			w.walk(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}
