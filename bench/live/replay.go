package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/client-go/rest"

	"github.com/aiconform/aiconform/bench"
	"github.com/aiconform/aiconform/cluster"
)

// The second floor: every request check all makes, made again with nothing
// done with the answers. Its wall time and kube-apiserver's CPU are what
// check all costs before aiconform decodes, judges or prints anything: the
// part of its time set by what the checks read, not by how they read it.

// request is one request of a check all run, as recorded.
type request struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	Accept string `json:"accept,omitempty"`
	// Status is what the server answered; a replay expects the same.
	Status int `json:"status"`
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recordCheckAll runs check all once in this process against $KUBECONFIG
// and writes the requests it made, in the order it made them, to file, a
// JSON object a line (-record-requests).
func recordCheckAll(ctx context.Context, file string) error {
	var (
		mu   sync.Mutex
		reqs []request
	)
	flags := cluster.NewFlags()
	flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				rec := request{Method: r.Method, URL: r.URL.String(), Accept: r.Header.Get("Accept")}
				if resp != nil {
					rec.Status = resp.StatusCode
				}
				mu.Lock()
				reqs = append(reqs, rec)
				mu.Unlock()
				return resp, err
			})
		})
		return c
	}
	live, err := cluster.NewLive(flags, time.Now)
	if err != nil {
		return err
	}
	r, err := bench.CheckAll(ctx, live)
	if err != nil {
		return err
	}
	if err := unmetBeyondProbes(r.Report); err != nil {
		return err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, req := range reqs {
		if err := enc.Encode(req); err != nil {
			return err
		}
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}

// readRequests reads what recordCheckAll wrote. Only reads can be made
// again: check all without --probe makes nothing else, and watches none.
func readRequests(file string) ([]request, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var reqs []request
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if r.Method != http.MethodGet || u.Query().Get("watch") == "true" {
			return nil, fmt.Errorf("%s: check all made %s %s, which is not a read to make again", file, r.Method, u.Path)
		}
		reqs = append(reqs, r)
	}
	return reqs, sc.Err()
}

// chain is one LIST's pages, or one other request: each page but the first
// is asked for with the continue token the page before it gives in the
// replay (the recorded one may have expired since).
type chain []request

// chains groups reqs into chains, in the order their first requests were
// made.
func chains(reqs []request) ([]chain, error) {
	var out []chain
	open := map[string]int{} // a chain's URL without its token: its index
	for _, r := range reqs {
		u, err := url.Parse(r.URL)
		if err != nil {
			return nil, err
		}
		q := u.Query()
		token := q.Get("continue")
		q.Del("continue")
		u.RawQuery = q.Encode()
		key := u.String()
		if i, ok := open[key]; ok && token != "" {
			out[i] = append(out[i], r)
			continue
		}
		if token != "" {
			return nil, fmt.Errorf("a page of %s without its first", u.Path)
		}
		open[key] = len(out)
		out = append(out, chain{r})
	}
	return out, nil
}

// replayWorkers is how many chains a replay makes at a time: more than
// check all has in flight (four checks, each reading eight nodes' pods at
// a time), so that the floor is what the reads cost at best. On a held
// cluster, six rounds of each: 8 took about a fifth longer than 16 or 32.
const replayWorkers = 32

// replayRequests makes the requests recorded in file again against
// $KUBECONFIG, in a process of its own so that its CPU and memory are the
// reads' alone (-replay-requests), and prints how many bytes it read.
func replayRequests(ctx context.Context, file string) error {
	reqs, err := readRequests(file)
	if err != nil {
		return err
	}
	cs, err := chains(reqs)
	if err != nil {
		return err
	}
	cfg, err := cluster.NewFlags().ToRESTConfig()
	if err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	n, err := readAll(ctx, cs, replayWorkers, func(ctx context.Context, c chain) (int64, error) {
		return replayChain(ctx, client, c)
	})
	if err != nil {
		return err
	}
	_, err = fmt.Println(n)
	return err
}

// readAll calls read for each of items, workers at a time, until one
// fails, and gives the bytes they read.
func readAll[T any](ctx context.Context, items []T, workers int, read func(context.Context, T) (int64, error)) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan T, len(items))
	for _, it := range items {
		next <- it
	}
	close(next)
	var (
		total    atomic.Int64
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	for range workers {
		wg.Go(func() {
			for it := range next {
				n, err := read(ctx, it)
				total.Add(n)
				if err != nil {
					failOnce.Do(func() { failed = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return total.Load(), failed
}

// replayChain makes the requests of c in turn.
func replayChain(ctx context.Context, client *http.Client, c chain) (int64, error) {
	var (
		total int64
		token string
		body  bytes.Buffer
	)
	for i, r := range c {
		u, err := url.Parse(r.URL)
		if err != nil {
			return total, err
		}
		if i > 0 {
			if token == "" {
				return total, fmt.Errorf("%s: %d pages recorded, %d now", u.Path, len(c), i)
			}
			q := u.Query()
			q.Set("continue", token)
			u.RawQuery = q.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), nil)
		if err != nil {
			return total, err
		}
		if r.Accept != "" {
			req.Header.Set("Accept", r.Accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			return total, err
		}
		body.Reset()
		var n int64
		if i+1 < len(c) {
			n, err = body.ReadFrom(resp.Body)
		} else {
			n, err = io.Copy(io.Discard, resp.Body)
		}
		_ = resp.Body.Close()
		total += n
		if err != nil {
			return total, fmt.Errorf("%s: %w", u.Path, err)
		}
		if resp.StatusCode != r.Status {
			return total, fmt.Errorf("%s: answered %d, %d when recorded", u.Path, resp.StatusCode, r.Status)
		}
		if i+1 < len(c) {
			if token, err = continueToken(resp.Header.Get("Content-Type"), body.Bytes()); err != nil {
				return total, fmt.Errorf("%s: %w", u.Path, err)
			}
		}
	}
	return total, nil
}

// continueToken is the continue token of a list's page, in protobuf (the
// envelope's raw list, its ListMeta, its continue: fields 2, 1 and 3) or in
// JSON (metadata.continue, which comes before the items).
func continueToken(contentType string, body []byte) (string, error) {
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		raw, ok := messageField(bytes.TrimPrefix(body, []byte("k8s\x00")), 2)
		if !ok {
			return "", errors.New("no list in the envelope")
		}
		meta, _ := messageField(raw, 1)
		token, _ := messageField(meta, 3)
		return string(token), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return "", err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", err
		}
		if key == "metadata" {
			var meta struct {
				Continue string `json:"continue"`
			}
			err := dec.Decode(&meta)
			return meta.Continue, err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}

// messageField is the first length-delimited field num of a protobuf
// message.
func messageField(msg []byte, num protowire.Number) ([]byte, bool) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeField(msg)
		if l < 0 {
			return nil, false
		}
		if n == num && typ == protowire.BytesType {
			_, _, tagLen := protowire.ConsumeTag(msg)
			v, _ := protowire.ConsumeBytes(msg[tagLen:l])
			return v, true
		}
		msg = msg[l:]
	}
	return nil, false
}
