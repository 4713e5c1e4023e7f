package networking

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/kube"
	"github.com/aiconform/aiconform/cluster"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The CRDs of the APIs that give pods further interfaces: Multus'
// NetworkAttachmentDefinition (k8snetworkplumbingwg's
// network-attachment-definition-client, artifacts/networks-crd.yaml) and
// GKE multi-networking's Network (kubernetes/cloud-provider-gcp,
// crd/config/crds/networking.gke.io_networks.yaml).
const (
	attachmentsCRD = "network-attachment-definitions.k8s.cni.cncf.io"
	gkeNetworksCRD = "networks.networking.gke.io"
)

// gkeDefaultNetworks are the Networks GKE keeps for every pod's own
// interface (cloud-provider-gcp's DefaultPodNetworkName and the older
// DefaultNetworkName): no further interface.
var gkeDefaultNetworks = []string{"default", "pod-network"}

// MultiNetwork judges whether pods can be given further network
// interfaces beside the cluster's pod network.
type MultiNetwork struct{}

// Meta implements checks.Check.
func (MultiNetwork) Meta() checks.Meta {
	return checks.Meta{
		ID: "multi-network", Title: "Pods can attach to several network interfaces",
		Requirement: "high_performance_networking",
		Description: "Looks for a mechanism that gives a pod interfaces beside its pod network, and for networks it " +
			"defines: Multus' NetworkAttachmentDefinitions (k8s.cni.cncf.io/v1), counted per namespace with " +
			"the CNI plugin each names (the type of its config, or of each plugin of a conflist); GKE " +
			"multi-networking's Networks (networking.gke.io/v1) other than the default pod network, with " +
			"their type; and the network DRA drivers of network-devices that publish devices, since such a " +
			"driver moves the device it allocates into the pod. The CRDs and ResourceSlices are the lists " +
			"other checks make; no pod is read. Passes when a mechanism has a network or device defined, " +
			"naming each; fails when none has, saying what was looked for.",
		Remediation: "Install Multus and define a NetworkAttachmentDefinition for the secondary network (SR-IOV, " +
			"macvlan, ipvlan, host-device), enable GKE multi-networking and create its Networks, or install " +
			"a DRA network driver such as DRANET, which moves an allocated interface into the pod.",
	}
}

// Run implements checks.Check.
func (MultiNetwork) Run(ctx context.Context, env *checks.Env) (checks.Result, error) {
	var r checks.Result
	data, err := loadNetworkData()
	if err != nil {
		return r, err
	}
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{cluster.CRDs}, Grep: cluster.GrepAny("NAME", attachmentsCRD, gkeNetworksCRD)}, "the CRDs of the multi-network APIs")
	crds, err := checks.List[*apiextensionsv1.CustomResourceDefinition](ctx, env, cluster.Query{Resource: cluster.CRDs})
	if err != nil {
		return r, err
	}
	var found, missing []string
	attachments, why, err := readAttachments(ctx, env, &r, kube.FindCRD(crds, attachmentsCRD))
	if err != nil {
		return r, err
	}
	if attachments != "" {
		found = append(found, attachments)
	} else {
		missing = append(missing, why)
	}
	networks, why, err := readGKENetworks(ctx, env, &r, kube.FindCRD(crds, gkeNetworksCRD))
	if err != nil {
		return r, err
	}
	if networks != "" {
		found = append(found, networks)
	} else {
		missing = append(missing, why)
	}
	pubs, served, err := networkDRA(ctx, env, data)
	if err != nil {
		return r, err
	}
	if served {
		sliceEvidence(ctx, env, &r, data)
	}
	var drivers []string
	for _, p := range pubs {
		if p.devices > 0 {
			drivers = append(drivers, fmt.Sprintf("%s publishes %s on %s, each moved into the pod that claims it", data.describe(p.driver), checks.Plural(p.devices, "device"), p.where()))
		}
	}
	if len(drivers) > 0 {
		found = append(found, strings.Join(drivers, "; "))
	} else {
		missing = append(missing, fmt.Sprintf("no network DRA driver (%s) publishes devices", strings.Join(data.drivers(), ", ")))
	}
	if len(found) == 0 {
		r.Finish(checks.Fail, "pods cannot attach further network interfaces: %s", strings.Join(missing, "; "))
		return r, nil
	}
	r.Details = append(r.Details, missing...)
	r.Finish(checks.Pass, "%s", strings.Join(found, "; "))
	return r, nil
}

// readAttachments counts the NetworkAttachmentDefinitions of the cluster's
// own, per namespace and CNI plugin; found is "" with why when there is
// none to count.
func readAttachments(ctx context.Context, env *checks.Env, r *checks.Result, crd *apiextensionsv1.CustomResourceDefinition) (found, why string, err error) {
	if crd == nil {
		return "", "no NetworkAttachmentDefinition CRD (" + attachmentsCRD + "): Multus is not installed", nil
	}
	res := kube.CRDResource(crd)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}, AllNamespaces: true}, "the secondary networks Multus attaches pods to")
	objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
	if err != nil {
		return "", "", err
	}
	perNamespace := map[string][]string{} // namespace -> CNI plugins, one per attachment
	types := map[string]int{}
	count := 0
	for _, o := range objs {
		if _, ok := checks.ProbeRun(o.GetLabels(), o.GetNamespace()); ok {
			continue
		}
		count++
		t := strings.Join(cniTypes(str(o.Object, "spec", "config")), "+")
		perNamespace[o.GetNamespace()] = append(perNamespace[o.GetNamespace()], t)
		types[t]++
	}
	if count == 0 {
		return "", "the NetworkAttachmentDefinition CRD is installed, but no NetworkAttachmentDefinition is defined", nil
	}
	for _, ns := range checks.SortedKeys(perNamespace) {
		ts := perNamespace[ns]
		slices.Sort(ts)
		r.Details = append(r.Details, fmt.Sprintf("namespace %s: %s (%s)", ns, checks.Plural(len(ts), "NetworkAttachmentDefinition"), strings.Join(slices.Compact(ts), ", ")))
	}
	var byType []string
	for _, t := range checks.SortedKeys(types) {
		byType = append(byType, fmt.Sprintf("%s (%d)", t, types[t]))
	}
	return fmt.Sprintf("Multus: %s in %s, CNI plugins %s", checks.Plural(count, "NetworkAttachmentDefinition"), checks.Plural(len(perNamespace), "namespace"), strings.Join(byType, ", ")), "", nil
}

// cniTypes are the CNI plugins a NetworkAttachmentDefinition's config
// names: its type, or those of a conflist's plugins. The config itself may
// hold addresses and credentials of the network, and is never shown.
func cniTypes(config string) []string {
	if strings.TrimSpace(config) == "" {
		return []string{"config on the nodes"}
	}
	var c struct {
		Type    string `json:"type"`
		Plugins []struct {
			Type string `json:"type"`
		} `json:"plugins"`
	}
	if json.Unmarshal([]byte(config), &c) != nil {
		return []string{"unreadable config"}
	}
	if c.Type != "" {
		return []string{c.Type}
	}
	var out []string
	for _, p := range c.Plugins {
		if p.Type != "" {
			out = append(out, p.Type)
		}
	}
	if len(out) == 0 {
		return []string{"no plugin type"}
	}
	return out
}

// readGKENetworks names the GKE Networks beside the default pod network;
// found is "" with why when there is none.
func readGKENetworks(ctx context.Context, env *checks.Env, r *checks.Result, crd *apiextensionsv1.CustomResourceDefinition) (found, why string, err error) {
	if crd == nil {
		return "", "no GKE Network CRD (" + gkeNetworksCRD + ")", nil
	}
	res := kube.CRDResource(crd)
	r.AddEvidence(ctx, env, cluster.Get{Resources: []cluster.Resource{res}}, "GKE multi-networking's networks")
	objs, err := checks.List[*unstructured.Unstructured](ctx, env, cluster.Query{Resource: res})
	if err != nil {
		return "", "", err
	}
	var named []string
	for _, o := range objs {
		if slices.Contains(gkeDefaultNetworks, o.GetName()) {
			continue
		}
		named = append(named, fmt.Sprintf("%s (%s)", o.GetName(), str(o.Object, "spec", "type")))
	}
	slices.Sort(named)
	if len(named) == 0 {
		return "", "no GKE Network beside the default pod network", nil
	}
	return fmt.Sprintf("GKE multi-networking: %s beside the default, %s", checks.Plural(len(named), "Network"), checks.CapLines(named, 4, ", ")), "", nil
}
