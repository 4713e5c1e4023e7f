package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestChainsFollowPages(t *testing.T) {
	get := func(url string) request { return request{Method: "GET", URL: url, Status: 200} }
	nodes := "https://h/api/v1/nodes?limit=500"
	pods := "https://h/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&limit=500"
	got, err := chains([]request{
		get(nodes),
		get(pods),
		get(nodes + "&continue=a"),
		get("https://h/version"),
		get(nodes + "&continue=b"),
		// The same LIST again is a LIST of its own.
		get(nodes),
	})
	require.NoError(t, err)
	var urls [][]string
	for _, c := range got {
		var u []string
		for _, r := range c {
			u = append(u, r.URL)
		}
		urls = append(urls, u)
	}
	assert.Equal(t, [][]string{
		{nodes, nodes + "&continue=a", nodes + "&continue=b"},
		{pods},
		{"https://h/version"},
		{nodes},
	}, urls)

	_, err = chains([]request{get(nodes + "&continue=a")})
	assert.ErrorContains(t, err, "without its first")
}

func TestContinueTokenOfProtobufPage(t *testing.T) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next-page"},
		Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}}}}
	var buf bytes.Buffer
	require.NoError(t, protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &buf))
	token, err := continueToken("application/vnd.kubernetes.protobuf", buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "next-page", token)

	buf.Reset()
	list.Continue = ""
	require.NoError(t, protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(list, &buf))
	token, err = continueToken("application/vnd.kubernetes.protobuf", buf.Bytes())
	require.NoError(t, err)
	assert.Empty(t, token, "the last page")

	_, err = continueToken("application/vnd.kubernetes.protobuf", []byte("k8s\x00\x0a\x02ab"))
	assert.Error(t, err, "an envelope without its list")
}

func TestContinueTokenOfJSONPage(t *testing.T) {
	table, err := json.Marshal(&metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta: metav1.ListMeta{Continue: "tok"}, Rows: []metav1.TableRow{{Cells: []any{"a", 1}}}})
	require.NoError(t, err)
	token, err := continueToken("application/json", table)
	require.NoError(t, err)
	assert.Equal(t, "tok", token)

	token, err = continueToken("application/json", []byte(`{"items":[{"metadata":{"continue":"not-this"}}],"metadata":{"continue":"this"}}`))
	require.NoError(t, err)
	assert.Equal(t, "this", token, "the list's own metadata, wherever it comes")

	token, err = continueToken("application/json", []byte(`{"kind":"Status","code":200}`))
	require.NoError(t, err)
	assert.Empty(t, token)
}

func TestReadRequestsOnlyReads(t *testing.T) {
	write := func(lines string) string {
		p := filepath.Join(t.TempDir(), "requests.jsonl")
		require.NoError(t, os.WriteFile(p, []byte(lines), 0o644))
		return p
	}
	reqs, err := readRequests(write(`{"method":"GET","url":"https://h/api/v1/nodes?limit=500","accept":"application/json","status":200}` + "\n"))
	require.NoError(t, err)
	assert.Equal(t, []request{{Method: "GET", URL: "https://h/api/v1/nodes?limit=500", Accept: "application/json", Status: 200}}, reqs)

	_, err = readRequests(write(`{"method":"POST","url":"https://h/api/v1/namespaces","status":201}` + "\n"))
	assert.ErrorContains(t, err, "not a read")
	_, err = readRequests(write(`{"method":"GET","url":"https://h/api/v1/pods?watch=true","status":200}` + "\n"))
	assert.ErrorContains(t, err, "not a read")
}
