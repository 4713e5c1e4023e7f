// Package cluster reads a Kubernetes cluster for the checks: from a live API
// server or from a recording of one, each query answered once per run and
// shared by every check, together with the server's own Table rendering of
// what was read, so evidence shows what kubectl prints.
//
// What a List keeps. Every object loses its managed fields and kubectl's
// last-applied annotation (trimMeta). Then, unless the query asks for its
// objects whole (Query.Whole, as a user's declarative check does):
//   - trim (trimKind) drops of a node's status all but capacity,
//     allocatable, phase and its Ready condition; of a CRD its versions'
//     schemas and its conversion webhook's client config; of a
//     ResourceSlice its devices' capacities;
//   - slimPod keeps of the pods of a node (a spec.nodeName= query) what the
//     accelerator checks read, and drops the rest of spec and status; the
//     checks read them as NodePods, a type that holds only what they read;
//   - slimWorkload drops the pod template's spec of the Deployments and
//     StatefulSets listed across the cluster, which the checks read as
//     Workloads: a type that holds only what they read of them.
//
// settle applies them as a live list arrives, the protobuf masks of
// masks.go drop the same fields before they are decoded, and a recording
// holds what they kept. A check that read a dropped field would see it
// empty: TestChecksOnFakeCluster (checks/builtin) runs every check again on
// whole objects (Cache.WholeObjects) and fails the one that judges
// otherwise.
package cluster
