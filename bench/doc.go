// Package bench measures `aiconform check all` on a cluster of production
// size: a synthetic 2,000-node, 50,000-pod cluster with KServe and KubeRay
// installed, served from memory by a Source that counts every query, so the
// benchmarks report time, memory and LISTs per run. bench/live writes the
// same cluster into a real API server and times aiconform against kubectl.
package bench
