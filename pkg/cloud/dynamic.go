package cloud

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DynamicFor makes a dynamic client, for the custom resources a provider
// reads (Karpenter's NodePools, the VPC CNI's ENIConfigs), over the typed
// client's connection: the kubeconfig's server with its path (Rancher's
// /k8s/clusters/<id>, an API gateway's prefix), the transport that holds
// the credentials, TLS and proxy, the timeout and the rate limiter of
// --qps and --burst. what names what it is for, in its error.
func DynamicFor(client kubernetes.Interface, what string) (dynamic.Interface, error) {
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return nil, fmt.Errorf("cannot read %s: the client has no connection to the API server", what)
	}
	cfg := &rest.Config{Host: serverOf(rc), Transport: rc.Client.Transport, Timeout: rc.Client.Timeout, RateLimiter: rc.GetRateLimiter()}
	if cfg.RateLimiter == nil {
		cfg.QPS = -1 // the typed client has no limit (a negative --qps): nor has this one
	}
	return dynamic.NewForConfig(cfg)
}

// serverOf is the server the client was made for, path included: an
// absolute path of "/" is the server's own path, the base the client
// puts /api/v1 after.
func serverOf(rc *rest.RESTClient) string {
	u := rc.Get().AbsPath("/").URL()
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}).String()
}
