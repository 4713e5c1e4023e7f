package probe

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/aiconform/aiconform/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// The commands and outputs here are what kubectl shows for the same
// writes, so that a probe's evidence reads, and re-runs, like the rest.

// CreateCommand is `kubectl create` of obj from a here-document, as a
// shell runs it: -n for the run's namespace, --dry-run=server for a dry
// run, -o yaml to show what the server made of it.
func CreateCommand(namespace string, obj *unstructured.Unstructured, dryRun, showYAML bool) (string, error) {
	body, err := yaml.Marshal(obj.Object)
	if err != nil {
		return "", err
	}
	args := []string{"kubectl", "create"}
	if dryRun {
		args = append(args, "--dry-run=server")
	}
	if namespace != "" {
		args = append(args, "-n", namespace)
	}
	if showYAML {
		args = append(args, "-o", "yaml")
	}
	args = append(args, "-f", "-", "<<'EOF'")
	return strings.Join(args, " ") + "\n" + string(body) + "EOF", nil
}

// CreatedText is what kubectl create prints for an object it created:
// `inferenceservice.serving.kserve.io/sklearn-iris created`.
func CreatedText(obj *unstructured.Unstructured, dryRun bool) (string, error) {
	op := "created"
	if dryRun {
		op += " (server dry run)"
	}
	var buf bytes.Buffer
	p := &printers.NamePrinter{Operation: op}
	if err := p.PrintObj(obj, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// YAMLText is what `-o yaml` prints for obj: kubectl leaves managedFields
// out unless asked for them.
func YAMLText(obj *unstructured.Unstructured) (string, error) {
	var buf bytes.Buffer
	p := &printers.OmitManagedFieldsPrinter{Delegate: &printers.YAMLPrinter{}}
	if err := p.PrintObj(obj, &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// DeleteCommand is `kubectl delete` of one object.
func DeleteCommand(namespace string, m *meta.RESTMapping, name string) string {
	args := []string{"kubectl", "delete", resourceString(m.Resource), name}
	if namespace != "" && m.Scope.Name() == meta.RESTScopeNameNamespace {
		args = append(args, "-n", namespace)
	}
	return strings.Join(args, " ")
}

// DeletedText is what kubectl delete prints for one object:
// `inferenceservice.serving.kserve.io "name" deleted from ns namespace`,
// or without the namespace for a cluster-scoped one.
func DeletedText(m *meta.RESTMapping, namespace, name string) string {
	op := "deleted"
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		op += " from " + namespace + " namespace"
	}
	return fmt.Sprintf("%s %q %s\n", KindString(m.GroupVersionKind), name, op)
}

// PatchCommand is `kubectl patch --type merge` of one object.
func PatchCommand(namespace string, m *meta.RESTMapping, name string, patch []byte) string {
	args := []string{"kubectl", "patch", resourceString(m.Resource), name}
	if namespace != "" && m.Scope.Name() == meta.RESTScopeNameNamespace {
		args = append(args, "-n", namespace)
	}
	return strings.Join(append(args, "--type", "merge", "-p", "'"+string(patch)+"'"), " ")
}

// PatchedText is what kubectl patch prints for an object it changed:
// `horizontalpodautoscaler.autoscaling/name patched`.
func PatchedText(m *meta.RESTMapping, name string) string {
	return KindString(m.GroupVersionKind) + "/" + name + " patched\n"
}

// RawCommand is `kubectl get --raw` of an API path, quoted for the shell
// when it has a query.
func RawCommand(uri string) string {
	if strings.ContainsAny(uri, "?&=") {
		uri = "'" + uri + "'"
	}
	return "kubectl get --raw " + uri
}

// KindString is how kubectl delete names a kind in what it prints: the
// lower-case kind, then the group.
func KindString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return strings.ToLower(gvk.Kind)
	}
	return strings.ToLower(gvk.Kind) + "." + gvk.Group
}

// resourceString is a resource as kubectl's arguments name it:
// plural.group, or the bare plural for the core group.
func resourceString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

// ErrorText is what kubectl prints on standard error when a write fails:
// kubectl's own formatting of the API status, with the source it was
// reading named ("STDIN" for `-f -`; empty for a write by name). kubectl
// looks at the error it was given, not at what it wraps, and so does
// ErrorText: pass the client's error as it came. No error prints nothing.
func ErrorText(verb, source string, err error) string {
	if err == nil {
		return ""
	}
	msg := cluster.KubectlMessage(withSource(verb, source, err))
	if msg != "" && !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return msg
}

// withSource names the file a failed write read its object from, as
// kubectl does for objects read with -f (create names it, a patch or
// delete by name does not). For an API status the words go inside the
// status's message, so the line still starts with the server's reason:
// `Error from server (Forbidden): error when creating "STDIN": ...`.
func withSource(verb, source string, err error) error {
	if source == "" {
		return err
	}
	if st, ok := err.(apierrors.APIStatus); ok {
		s := st.Status()
		s.Message = fmt.Sprintf("error when %s %q: %v", verb, source, s.Message)
		return &apierrors.StatusError{ErrStatus: s}
	}
	return fmt.Errorf("error when %s %q: %v", verb, source, err)
}
