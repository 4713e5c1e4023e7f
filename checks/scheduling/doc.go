// Package scheduling holds the checks of the checklist's scheduling and
// orchestration category: gang_scheduling, judged on the solution a
// profile describes (Kueue's queues and workloads, and a probe gang).
package scheduling
