package cloud

// UnreachableError is a call to a cloud's API that got no answer from its
// endpoint: the name was not found, the connection was refused, reset or
// timed out, or the certificate did not verify. Providers mark the network
// failures of their calls with it where the call is sent, so that a command
// tells a cloud's endpoint from the Kubernetes API server, whose failures
// are the same net and url errors, by this type and not by their text.
type UnreachableError struct {
	// Cloud names the cloud's API: "AWS", "Google Cloud".
	Cloud string
	// Endpoint is the host (and port) the call went to.
	Endpoint string
	// Settings are what point the provider at the endpoint and let it
	// through, for the operator to check (flags, environment variables).
	Settings string
	Err      error
}

// Error is the network failure's own: the provider's message around it
// stays as it was.
func (e *UnreachableError) Error() string { return e.Err.Error() }
func (e *UnreachableError) Unwrap() error { return e.Err }
