package probe

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
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
	msg := errorMessage(withSource(verb, source, err))
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

// errorMessage is the text kubectl ends a failed command with, before its
// final newline. An invalid object gets its own form, naming the object
// and each field at fault; an aggregate gets a line per error; anything
// kubectl does not recognize is printed after "error: ".
func errorMessage(err error) string {
	if agg, ok := err.(utilerrors.Aggregate); ok && len(agg.Errors()) == 1 {
		err = agg.Errors()[0]
	}
	if se, ok := err.(*apierrors.StatusError); ok && se.Status().Reason == metav1.StatusReasonInvalid {
		return invalidMessage(se.Status())
	}
	switch e := err.(type) {
	case *meta.NoResourceMatchError:
		return noResourceMessage(e.PartialResource)
	case utilerrors.Aggregate:
		var b strings.Builder
		for _, one := range e.Errors() {
			b.WriteString(standardOrPlain(one) + "\n")
		}
		return b.String()
	}
	if msg, ok := standardMessage(err); ok {
		return msg
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	return msg
}

// invalidMessage is kubectl's report of an Invalid status. The server's
// message repeats the causes, so kubectl prints it only when the status
// has nothing better: no details at all, or neither a kind, a name nor a
// cause. One cause goes on the same line; several go one per line under
// it (after a line that keeps its trailing ": "), each printed once.
func invalidMessage(s metav1.Status) string {
	msg := "The request is invalid"
	d := s.Details
	if d == nil {
		if s.Message != "" {
			msg += ": " + s.Message
		}
		return msg
	}
	switch {
	case d.Kind != "" || d.Name != "":
		msg = fmt.Sprintf("The %s %q is invalid", d.Kind, d.Name)
	case s.Message != "" && len(d.Causes) == 0:
		msg += ": " + s.Message
	}
	var causes []string
	for _, c := range d.Causes {
		line := fmt.Sprintf("%s: %s", c.Field, c.Message)
		if !slices.Contains(causes, line) {
			causes = append(causes, line)
		}
	}
	switch len(causes) {
	case 0:
		return msg
	case 1:
		return msg + ": " + causes[0] + "\n"
	}
	var b strings.Builder
	b.WriteString(msg + ": \n")
	for _, c := range causes {
		b.WriteString("* " + c + "\n")
	}
	return b.String()
}

// noResourceMessage is how kubectl says the server does not serve a
// resource, naming as much of it as the request did.
func noResourceMessage(r schema.GroupVersionResource) string {
	switch {
	case r.Group != "" && r.Version != "":
		return fmt.Sprintf("the server doesn't have a resource type %q in group %q and version %q", r.Resource, r.Group, r.Version)
	case r.Group != "":
		return fmt.Sprintf("the server doesn't have a resource type %q in group %q", r.Resource, r.Group)
	case r.Version != "":
		return fmt.Sprintf("the server doesn't have a resource type %q in version %q", r.Resource, r.Version)
	}
	return fmt.Sprintf("the server doesn't have a resource type %q", r.Resource)
}

// standardMessage is kubectl's wording for the errors it recognizes: an
// answer from the API server, an object of the wrong type, or a server it
// could not reach. ok is false for any other error.
func standardMessage(err error) (msg string, ok bool) {
	if st, isStatus := err.(apierrors.APIStatus); isStatus {
		s := st.Status()
		switch {
		case s.Reason == metav1.StatusReasonUnauthorized:
			return fmt.Sprintf("error: You must be logged in to the server (%s)", s.Message), true
		case s.Reason != "":
			return fmt.Sprintf("Error from server (%s): %s", s.Reason, err.Error()), true
		}
		return "Error from server: " + err.Error(), true
	}
	if apierrors.IsUnexpectedObjectError(err) {
		return "Server returned an unexpected response: " + err.Error(), true
	}
	if ue, isURL := err.(*url.Error); isURL {
		if ue.Err != nil && strings.Contains(ue.Err.Error(), "connection refused") {
			host := ue.URL
			if u, perr := url.Parse(ue.URL); perr == nil {
				host = u.Host
			}
			return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", host), true
		}
		return fmt.Sprintf("Unable to connect to the server: %v", ue.Err), true
	}
	return "", false
}

// standardOrPlain is one error of several as kubectl lists them: in its
// standard wording when it has one, as the error's own text otherwise.
func standardOrPlain(err error) string {
	if msg, ok := standardMessage(err); ok {
		return msg
	}
	return err.Error()
}
