// Command aiconform-check-node-labels is an example aiconform plugin, the
// worked example of docs/extending.md: it judges that every node (or every
// node a selector picks) carries a label, optionally with a given value.
//
//	aiconform-check-node-labels [-selector SELECTOR] KEY[=VALUE]
//
// It reads aiconform's request on stdin, lists the nodes with the
// kubeconfig and context the request names, and prints its answer on
// stdout: pass, fail (with each node missing the label in details), or
// skip when no node is selected. Its one evidence block is `kubectl get
// nodes -L KEY` as kubectl itself prints it when kubectl is on PATH; when
// it is not, the block is the API request the plugin made and its own
// summary of the answer, and says so, rather than imitate kubectl's output.
//
// It uses only the standard library and client-go, and defines the request
// and answer itself, so that it reads as the contract a plugin in any
// language follows.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// apiVersion is the contract this plugin speaks.
const apiVersion = "aiconform.io/plugin/v1"

// request is the part of aiconform's request this plugin reads.
type request struct {
	APIVersion string    `json:"apiVersion"`
	Kubeconfig string    `json:"kubeconfig"`
	Context    string    `json:"context"`
	Deadline   time.Time `json:"deadline"`
}

// answer is a check result in the report's shape.
type answer struct {
	APIVersion string     `json:"apiVersion"`
	Status     string     `json:"status"`
	Reason     string     `json:"reason"`
	Details    []string   `json:"details,omitempty"`
	Evidence   []evidence `json:"evidence,omitempty"`
}

type evidence struct {
	Command    string `json:"command"`
	Output     string `json:"output"`
	CapturedAt string `json:"capturedAt"`
	Note       string `json:"note,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, time.Now))
}

// run is the plugin; its exit code is 0 whenever it printed an answer, a
// failing verdict included: a non-zero exit tells aiconform the plugin
// itself broke, which it reports as an error with what stderr says.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	fs := flag.NewFlagSet("aiconform-check-node-labels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	selector := fs.String("selector", "", "a label selector of the nodes to judge (default: every node)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || strings.HasPrefix(fs.Arg(0), "=") {
		fmt.Fprintln(stderr, "usage: aiconform-check-node-labels [-selector SELECTOR] KEY[=VALUE]")
		return 2
	}
	key, value, wantValue := strings.Cut(fs.Arg(0), "=")

	var req request
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		fmt.Fprintf(stderr, "read the request: %v\n", err)
		return 2
	}
	if req.APIVersion != apiVersion {
		fmt.Fprintf(stderr, "request apiVersion %q: this plugin speaks %s\n", req.APIVersion, apiVersion)
		return 2
	}
	ctx := context.Background()
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}

	nodes, err := listNodes(ctx, req, *selector)
	if err != nil {
		// Could not judge: an error verdict with the reason, not a crash.
		return emit(stdout, stderr, answer{APIVersion: apiVersion, Status: "error", Reason: fmt.Sprintf("list nodes: %v", err)})
	}
	a := judge(nodes, key, value, wantValue, *selector)
	a.Evidence = []evidence{show(ctx, req, key, *selector, nodes, now)}
	return emit(stdout, stderr, a)
}

// node is what the plugin keeps of a node.
type node struct {
	name   string
	labels map[string]string
}

// listNodes reads every node the selector picks, page by page, so that a
// large cluster is not one answer of the API server.
func listNodes(ctx context.Context, req request, selector string) ([]node, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = req.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: req.Context}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var out []node
	opts := metav1.ListOptions{LabelSelector: selector, Limit: 500}
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, n := range list.Items {
			out = append(out, node{name: n.Name, labels: n.Labels})
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// judge is the verdict: every selected node carries the label.
func judge(nodes []node, key, value string, wantValue bool, selector string) answer {
	want := key
	if wantValue {
		want = key + "=" + value
	}
	a := answer{APIVersion: apiVersion}
	if len(nodes) == 0 {
		a.Status, a.Reason = "skip", "no node to judge"
		if selector != "" {
			a.Reason = fmt.Sprintf("no node matches %s", selector)
		}
		return a
	}
	for _, n := range nodes {
		got, ok := n.labels[key]
		switch {
		case !ok:
			a.Details = append(a.Details, fmt.Sprintf("node %s has no label %s", n.name, key))
		case wantValue && got != value:
			a.Details = append(a.Details, fmt.Sprintf("node %s has %s=%s, not %s", n.name, key, got, value))
		}
	}
	if len(a.Details) > 0 {
		a.Status, a.Reason = "fail", fmt.Sprintf("%d of %d nodes do not carry %s", len(a.Details), len(nodes), want)
		return a
	}
	a.Status, a.Reason = "pass", fmt.Sprintf("all %d nodes carry %s", len(nodes), want)
	return a
}

// show is the evidence block: kubectl's own output when kubectl is on
// PATH, else the request the plugin made and its summary, saying which.
func show(ctx context.Context, req request, key, selector string, nodes []node, now func() time.Time) evidence {
	args := []string{"get", "nodes", "-L", key}
	if selector != "" {
		args = append(args, "-l", selector)
	}
	printed := "kubectl " + strings.Join(args, " ")
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		if req.Kubeconfig != "" {
			args = append(args, "--kubeconfig", req.Kubeconfig)
		}
		if req.Context != "" {
			args = append(args, "--context", req.Context)
		}
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(ctx, kubectl, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		at := now().UTC().Format(time.RFC3339)
		if err == nil {
			return evidence{Command: printed, Output: out.String(), CapturedAt: at}
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			// What kubectl printed when it failed is still what it prints.
			return evidence{Command: printed, Output: out.String() + errOut.String(), CapturedAt: at,
				Note: fmt.Sprintf("kubectl exited with code %d; the verdict is from the plugin's own read", ee.ExitCode())}
		}
	}
	path := "GET /api/v1/nodes"
	if selector != "" {
		path += "?labelSelector=" + selector
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	fmt.Fprintf(tw, "NODE\t%s\n", strings.ToUpper(key))
	for _, n := range nodes {
		v, ok := n.labels[key]
		if !ok {
			v = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\n", n.name, v)
	}
	_ = tw.Flush()
	return evidence{Command: path, Output: b.String(), CapturedAt: now().UTC().Format(time.RFC3339),
		Note: fmt.Sprintf("kubectl is not on PATH: the plugin's own summary of the API's answer, not a command's output; `%s` shows the same nodes", printed)}
}

// emit writes the answer; failing to is the one failure left to the
// exit code.
func emit(stdout, stderr io.Writer, a answer) int {
	if err := json.NewEncoder(stdout).Encode(a); err != nil {
		fmt.Fprintf(stderr, "write the answer: %v\n", err)
		return 1
	}
	return 0
}
