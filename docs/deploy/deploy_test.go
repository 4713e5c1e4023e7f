// Package deploy_test keeps the in-cluster manifests of docs/deploy sound:
// they decode, the Job and the CronJob run the same pod, and the
// ServiceAccount they name is bound to the read-only role and nothing
// more. The e2e runs job.yaml itself on the rig's real node.
package deploy_test

import (
	"bufio"
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// objects decodes every document of a manifest file.
func objects(t *testing.T, path string) []runtime.Object {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []runtime.Object
	dec := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := dec.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		require.NoError(t, err, "%s", path)
		out = append(out, obj)
	}
	return out
}

func TestManifests(t *testing.T) {
	var (
		ns      *corev1.Namespace
		sa      *corev1.ServiceAccount
		binding *rbacv1.ClusterRoleBinding
		job     *batchv1.Job
		cron    *batchv1.CronJob
		reader  *rbacv1.ClusterRole
	)
	for _, path := range []string{"serviceaccount.yaml", "job.yaml", "cronjob.yaml", "../rbac/aiconform-reader.yaml"} {
		for _, obj := range objects(t, path) {
			switch o := obj.(type) {
			case *corev1.Namespace:
				ns = o
			case *corev1.ServiceAccount:
				sa = o
			case *rbacv1.ClusterRoleBinding:
				binding = o
			case *batchv1.Job:
				job = o
			case *batchv1.CronJob:
				cron = o
			case *rbacv1.ClusterRole:
				reader = o
			default:
				t.Errorf("%s: unexpected %T", path, obj)
			}
		}
	}
	require.NotNil(t, ns)
	require.NotNil(t, sa)
	require.NotNil(t, binding)
	require.NotNil(t, job)
	require.NotNil(t, cron)
	require.NotNil(t, reader)

	assert.Equal(t, ns.Name, sa.Namespace)
	assert.Equal(t, ns.Name, job.Namespace)
	assert.Equal(t, ns.Name, cron.Namespace)
	// Bound to the read-only role only.
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name}, binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}, binding.Subjects)

	// One pod for both: the CronJob's Job is job.yaml's.
	assert.Equal(t, job.Spec, cron.Spec.JobTemplate.Spec)

	pod := job.Spec.Template.Spec
	assert.Equal(t, sa.Name, pod.ServiceAccountName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, []string{"check", "all", "--output", "json"}, c.Args)
	require.NotNil(t, pod.SecurityContext)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
	// A MUST not met (exit 1) ends the Job at once; nothing else does.
	require.NotNil(t, job.Spec.PodFailurePolicy)
	require.Len(t, job.Spec.PodFailurePolicy.Rules, 1)
	rule := job.Spec.PodFailurePolicy.Rules[0]
	assert.Equal(t, batchv1.PodFailurePolicyActionFailJob, rule.Action)
	require.NotNil(t, rule.OnExitCodes)
	assert.Equal(t, c.Name, *rule.OnExitCodes.ContainerName)
	assert.Equal(t, []int32{1}, rule.OnExitCodes.Values)
}

// The read-only role reads every built-in profile's custom resources: a
// profile added without its groups here would be judged Error (Forbidden)
// wherever aiconform runs as this role.
func TestReaderReadsEveryProfile(t *testing.T) {
	var reader *rbacv1.ClusterRole
	for _, obj := range objects(t, "../rbac/aiconform-reader.yaml") {
		if r, ok := obj.(*rbacv1.ClusterRole); ok {
			reader = r
		}
	}
	require.NotNil(t, reader)
	readable := map[string]bool{}
	for _, r := range reader.Rules {
		if slices.Contains(r.Resources, "*") && slices.Contains(r.Verbs, "list") {
			for _, g := range r.APIGroups {
				readable[g] = true
			}
		}
	}
	profiles, err := checks.BuiltinProfiles()
	require.NoError(t, err)
	for _, p := range profiles {
		for _, g := range p.Groups {
			assert.True(t, readable[g], "profile %s: the reader cannot list the resources of %s", p.Name, g)
		}
	}
}
