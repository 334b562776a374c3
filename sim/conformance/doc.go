// Package conformance runs the provider conformance suite
// (pkg/cloud/conformance) over the providers whose fakes are in this
// module: each test stands a fake up on a fake clientset and hands the
// suite a Harness.
package conformance
