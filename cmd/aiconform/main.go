// Command aiconform audits a Kubernetes cluster against AI-operator
// conformance requirements and writes the evidence.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func main() {
	collectWithinLimit()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(Run(os.Args[0], os.Args[1:], streams))
}
