package checks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aiconform/aiconform/checks"
	"github.com/aiconform/aiconform/checks/checkstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// operatorPod is one operator's controller as its own installer makes it:
// the pod-template labels of its manifests or Helm chart (rendered with the
// release its install guide names), and the CRD its profile is found by.
type operatorPod struct {
	profile    string
	deployment string
	labels     map[string]string
	crd        schema.GroupVersionResource
	kind       string
}

// realControllers are the pod templates of the operators aiconform knows,
// as each project's manifests render them (the profiles' comments say from
// which file), and of two controllers it must claim for none: a
// kubebuilder scaffold's label alone, and Spark's webhook server beside
// its controller.
var realControllers = []operatorPod{
	{profile: "kaito", deployment: "kaito-workspace", crd: gvr("kaito.sh", "v1beta1", "workspaces"), kind: "Workspace",
		labels: map[string]string{"app.kubernetes.io/name": "workspace", "app.kubernetes.io/instance": "kaito-workspace"}},
	{profile: "kubeflow-pipelines", deployment: "ml-pipeline-scheduledworkflow", crd: gvr("kubeflow.org", "v1beta1", "scheduledworkflows"), kind: "ScheduledWorkflow",
		labels: map[string]string{"app": "ml-pipeline-scheduledworkflow", "application-crd-id": "kubeflow-pipelines"}},
	{profile: "nim-operator", deployment: "nim-operator-k8s-nim-operator", crd: gvr("apps.nvidia.com", "v1alpha1", "nimservices"), kind: "NIMService",
		labels: map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "k8s-nim-operator", "app.kubernetes.io/instance": "nim-operator"}},
	{profile: "volcano", deployment: "volcano-scheduler", crd: gvr("scheduling.volcano.sh", "v1beta1", "podgroups"), kind: "PodGroup",
		labels: map[string]string{"app": "volcano-scheduler"}},
	{profile: "coscheduling", deployment: "scheduler-plugins-controller", crd: gvr("scheduling.x-k8s.io", "v1alpha1", "podgroups"), kind: "PodGroup",
		labels: map[string]string{"app": "scheduler-plugins-controller"}},
	// No profile yet: a SparkApplication reports its state in a field, not
	// in conditions, which crs-reconciled cannot judge.
	{deployment: "analytics-spark-operator-controller",
		labels: map[string]string{"app.kubernetes.io/name": "spark-operator", "app.kubernetes.io/instance": "analytics", "app.kubernetes.io/component": "controller"}},
	{profile: "mpi-operator", deployment: "mpi-operator", crd: gvr("kubeflow.org", "v2beta1", "mpijobs"), kind: "MPIJob",
		labels: map[string]string{"app": "mpi-operator", "app.kubernetes.io/component": "mpijob", "app.kubernetes.io/name": "mpi-operator", "kustomize.component": "mpi-operator"}},
	{profile: "aibrix", deployment: "aibrix-controller-manager", crd: gvr("model.aibrix.ai", "v1alpha1", "modeladapters"), kind: "ModelAdapter",
		labels: map[string]string{"app.kubernetes.io/name": "aibrix", "app.kubernetes.io/instance": "aibrix", "app.kubernetes.io/component": "aibrix-controller-manager"}},
	{profile: "dynamo", deployment: "dynamo-platform-dynamo-operator-controller-manager", crd: gvr("nvidia.com", "v1alpha1", "dynamographdeployments"), kind: "DynamoGraphDeployment",
		labels: map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "dynamo-operator", "app.kubernetes.io/instance": "dynamo-platform"}},
	{profile: "kubeflow-training", deployment: "training-operator", crd: gvr("kubeflow.org", "v1", "pytorchjobs"), kind: "PyTorchJob",
		labels: map[string]string{"control-plane": "kubeflow-training-operator"}},
	{profile: "kserve", deployment: "kserve-controller-manager", crd: gvr("serving.kserve.io", "v1beta1", "inferenceservices"), kind: "InferenceService",
		labels: map[string]string{"control-plane": "kserve-controller-manager", "controller-tools.k8s.io": "1.0"}},
	{profile: "kuberay", deployment: "kuberay-operator", crd: gvr("ray.io", "v1", "rayclusters"), kind: "RayCluster",
		labels: map[string]string{"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator", "app.kubernetes.io/component": "kuberay-operator"}},
	{profile: "kubeflow-trainer", deployment: "kubeflow-trainer-controller-manager", crd: gvr("trainer.kubeflow.org", "v1alpha1", "trainjobs"), kind: "TrainJob",
		labels: map[string]string{"app.kubernetes.io/name": "trainer", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "kubeflow"}},
	{profile: "kueue", deployment: "kueue-controller-manager", crd: gvr("kueue.x-k8s.io", "v1beta1", "clusterqueues"), kind: "ClusterQueue",
		labels: map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "kueue", "app.kubernetes.io/component": "controller"}},
	// Not operators of a profile: no profile may claim them.
	{deployment: "jobset-controller-manager", labels: map[string]string{"control-plane": "controller-manager"}},
	{deployment: "analytics-spark-operator-webhook",
		labels: map[string]string{"app.kubernetes.io/name": "spark-operator", "app.kubernetes.io/instance": "analytics", "app.kubernetes.io/component": "webhook"}},
}

// newProfiles are the profiles of the operators that accepted submissions
// name.
var newProfiles = []string{"aibrix", "coscheduling", "dynamo", "kaito", "kubeflow-pipelines", "mpi-operator", "nim-operator", "volcano"}

func gvr(group, version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
}

// Every built-in profile loads, validates, and says how to find and judge
// its operator.
func TestProfileCatalog(t *testing.T) {
	ps := checkstest.BuiltinProfiles(t)
	byName := map[string]*checks.Profile{}
	for _, p := range ps {
		byName[p.Name] = p
		t.Run(p.Name, func(t *testing.T) {
			assert.Equal(t, "profiles/"+p.Name+".yaml", p.Source)
			assert.NotEmpty(t, p.Title)
			assert.NotEmpty(t, p.CRDs, "a profile is found by its CRDs: its groups may be shared")
			assert.NotEmpty(t, p.Controller.Namespace)
			assert.NotEmpty(t, p.Controller.Deployment)
			sel, err := labels.Parse(p.Controller.Selector)
			require.NoError(t, err)
			// A kubebuilder scaffold's label is every such operator's.
			reqs, _ := sel.Requirements()
			assert.False(t, len(reqs) == 1 && reqs[0].Key() == "control-plane" && reqs[0].Values().Has("controller-manager"),
				"selector %s is every kubebuilder scaffold's", p.Controller.Selector)
			switch {
			case !p.CandidateFor("robust_controller"):
				// A gang scheduler's profile judges no operator's resources.
			default:
				assert.NotEmpty(t, p.Resources, "crs-reconciled needs a kind to judge")
			}
			for _, r := range p.Resources {
				assert.Contains(t, p.CRDs, r.CRD, "a judged kind's CRD is one the profile requires")
			}
			for _, w := range p.RequiredWebhooks {
				assert.NotEmpty(t, p.Webhooks, "required webhook %s: the profile names no configuration", w)
			}
		})
	}
	for _, n := range newProfiles {
		assert.Contains(t, byName, n)
	}
	// The MPI Operator's canary runs on CPUs, and it has no webhook to
	// deny an invalid MPIJob.
	if mpi := byName["mpi-operator"]; assert.NotNil(t, mpi) && assert.NotNil(t, mpi.Probe) {
		assert.Nil(t, mpi.Probe.InvalidObject())
		canary := mpi.Probe.CanaryObject()
		require.NotNil(t, canary)
		assert.Equal(t, "kubeflow.org/v2beta1", canary.GetAPIVersion())
		assert.NotContains(t, mpi.Probe.Canary, "gpu")
	}
	// Two profiles found by one CRD would judge one operator twice.
	owner := map[string]string{}
	for _, p := range ps {
		for _, c := range p.CRDs {
			if o, ok := owner[c]; ok {
				t.Errorf("CRD %s is both %s's and %s's", c, o, p.Name)
			}
			owner[c] = p.Name
		}
	}
}

// Each profile's selector picks its own controller's pod template, and no
// other operator's.
func TestProfileSelectorsAreDisjoint(t *testing.T) {
	ps := checkstest.BuiltinProfiles(t)
	known := map[string]bool{}
	for _, c := range realControllers {
		known[c.profile] = true
	}
	for _, n := range append([]string{"kserve", "kubeflow-trainer", "kubeflow-training", "kuberay", "kueue"}, newProfiles...) {
		require.True(t, known[n], "no real pod template for profile %s in realControllers", n)
	}
	// A profile without a pod template here still must claim none of
	// these.
	for _, p := range ps {
		sel, err := labels.Parse(p.Controller.Selector)
		require.NoError(t, err)
		for _, c := range realControllers {
			assert.Equal(t, c.profile == p.Name, sel.Matches(labels.Set(c.labels)),
				"profile %s's selector %s on %s's pod template %v", p.Name, p.Controller.Selector, c.deployment, c.labels)
		}
	}
}

// The operators' controllers are found by their real labels in namespaces
// their profiles do not name, all on one cluster, each by its own profile
// alone.
func TestLocateOperatorsAnywhere(t *testing.T) {
	w := &checkstest.World{}
	want := map[string]string{}
	for _, c := range realControllers {
		ns := "ops-" + c.profile
		if c.profile == "" {
			ns = "ops-other"
		}
		w.Deployments = append(w.Deployments, checkstest.AvailableDeployment(ns, c.deployment, c.labels, "example/controller:v1"))
		if c.profile != "" {
			w.CRDs = append(w.CRDs, checkstest.ServedCRD(c.crd, c.kind))
			want[c.profile] = ns + "/" + c.deployment
		}
	}
	ps := checkstest.BuiltinProfiles(t)
	dets, err := checks.Detect(context.Background(), w.Serve().Cache(), ps)
	require.NoError(t, err)
	require.Len(t, dets, len(ps), "one install of each operator")
	for _, d := range dets {
		t.Run(d.Profile.Name, func(t *testing.T) {
			if want[d.Profile.Name] == "" {
				// Not installed here: none of these is its controller.
				assert.Nil(t, d.Install)
				return
			}
			assert.True(t, d.Found, "found by its CRDs: %v", d.CRDs)
			require.NotNil(t, d.Install, "controller not found: %s", checks.Searched(d.Profile))
			assert.Equal(t, want[d.Profile.Name], d.Install.Namespace+"/"+d.Install.Deployment)
			assert.NotEqual(t, d.Profile.Controller.Namespace, d.Install.Namespace, "the test must put it where the hint does not")
			assert.Equal(t, []string{"its pod template's labels " + d.Profile.Controller.Selector}, d.Install.FoundBy)
			assert.Empty(t, d.Install.Others, "another Deployment claimed beside the controller")
		})
	}
}

// An install whose pod template has only the kubebuilder scaffold's label
// (AIBrix's and the NIM Operator's config/ manifests) is found by the
// Lease its pod holds, and by no other profile; the KubeRay that AIBrix's
// config/dependency puts in the same namespace stays KubeRay's.
func TestLocateScaffoldInstallByLease(t *testing.T) {
	for _, tc := range []struct{ profile, deployment, lease string }{
		{"aibrix", "aibrix-controller-manager", "aibrix-controller-manager"},
		{"nim-operator", "k8s-nim-operator-controller-manager", "a0715c6e.nvidia.com"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			scaffold := map[string]string{"control-plane": "controller-manager"}
			ns := "platform"
			pod := tc.deployment + "-6d9f8-x2b7q"
			kuberay := map[string]string{"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator",
				"app.kubernetes.io/component": "kuberay-operator"}
			w := &checkstest.World{
				Deployments: []*appsv1.Deployment{
					checkstest.AvailableDeployment(ns, tc.deployment, scaffold, "example/manager:v1"),
					checkstest.AvailableDeployment(ns, "aibrix-kuberay-operator", kuberay, "quay.io/kuberay/operator:v1.2.1"),
				},
				Pods: []*corev1.Pod{checkstest.ReadyPod(ns, pod, scaffold, "cpu-node-1")},
				Lease: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.lease},
					Spec: coordinationv1.LeaseSpec{HolderIdentity: checkstest.Ptr(pod + "_4f1c2a9e-8d7b-4c3e-9a61-0b5e2d7f8c14")}},
			}
			var crds []*apiextensionsv1.CustomResourceDefinition
			for _, c := range realControllers {
				if c.profile == tc.profile || c.profile == "kueue" || c.profile == "kuberay" {
					crds = append(crds, checkstest.ServedCRD(c.crd, c.kind))
				}
			}
			w.CRDs = crds
			f := w.Serve()
			// The fake clientset ignores field selectors; the API server
			// answers a Lease read by name with that Lease alone.
			f.Kube.PrependReactor("list", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sel := a.(k8stesting.ListAction).GetListRestrictions().Fields
				obj, err := f.Kube.Tracker().List(coordinationv1.SchemeGroupVersion.WithResource("leases"), coordinationv1.SchemeGroupVersion.WithKind("Lease"), a.GetNamespace())
				if err != nil || sel == nil || sel.Empty() {
					return true, obj, err
				}
				list := obj.(*coordinationv1.LeaseList)
				var kept []coordinationv1.Lease
				for _, l := range list.Items {
					if sel.Matches(fields.Set{"metadata.name": l.Name, "metadata.namespace": l.Namespace}) {
						kept = append(kept, l)
					}
				}
				list.Items = kept
				return true, list, nil
			})
			dets, err := checks.Detect(context.Background(), f.Cache(), checkstest.BuiltinProfiles(t))
			require.NoError(t, err)
			for _, d := range dets {
				if !d.Found {
					continue
				}
				switch d.Profile.Name {
				case tc.profile:
				case "kuberay":
					require.NotNil(t, d.Install)
					assert.Equal(t, ns+"/aibrix-kuberay-operator", d.Install.Namespace+"/"+d.Install.Deployment)
					assert.Empty(t, d.Install.Others)
					continue
				default:
					// Kueue's selector names kueue beside the scaffold's label.
					assert.Nil(t, d.Install, "%s claimed %s's controller", d.Profile.Name, tc.profile)
					continue
				}
				require.NotNil(t, d.Install)
				assert.Equal(t, ns+"/"+tc.deployment, d.Install.Namespace+"/"+d.Install.Deployment)
				assert.Empty(t, d.Install.Others, "KubeRay's controller claimed beside %s's", tc.profile)
				assert.Equal(t, []string{fmt.Sprintf("its pod %s holds Lease %s/%s", pod, ns, tc.lease)}, d.Install.FoundBy)
			}
		})
	}
}

// The Training Operator's mpijobs.kubeflow.org serves v1, the MPI
// Operator's v2beta1: one CRD name, two operators. A cluster serving the
// v1 CRD has the Training Operator's MPIJob, not the MPI Operator.
func TestMPIOperatorFoundByItsVersion(t *testing.T) {
	ps := checkstest.BuiltinProfiles(t)
	for _, version := range []string{"v1", "v2beta1"} {
		w := &checkstest.World{CRDs: []*apiextensionsv1.CustomResourceDefinition{checkstest.ServedCRD(gvr("kubeflow.org", version, "mpijobs"), "MPIJob")}}
		dets, err := checks.Detect(context.Background(), w.Serve().Cache(), ps)
		require.NoError(t, err)
		for _, d := range dets {
			if d.Profile.Name == "mpi-operator" {
				assert.Equal(t, version == "v2beta1", d.Found, "mpijobs serving %s", version)
			}
		}
	}
	_, err := checks.ParseProfiles("p.yaml", []byte("name: p\ntitle: P\ngroups: [g.io]\ncrds: [as.g.io]\nserved: {bs.g.io: v1}\ncontroller: {selector: app=p}\n"))
	assert.ErrorContains(t, err, `served: "bs.g.io" must be one of the profile's crds`)
}
