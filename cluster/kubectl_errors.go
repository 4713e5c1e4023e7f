package cluster

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// kubectl's words for the errors it prints, written once: the evidence of
// a refused read (cluster) and of a refused write (probe) both use them.

// KubectlMessage is the text kubectl ends a failed command with, before
// its final newline, whatever the command: a read's evidence and a
// probe's write print an error alike. An invalid object gets its own form, naming the object
// and each field at fault; an aggregate gets a line per error; anything
// kubectl does not recognize is printed after "error: ".
func KubectlMessage(err error) string {
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
