package aks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	armcs "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/containerservice/armcontainerservice/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// poolAPIVersion is the API version the pool is read and written at: the
// SDK's model (armcontainerservice/v6, 2025-02-01) lacks maxUnavailable
// and undrainableNodeBehavior of AgentPoolUpgradeSettings, which the
// stable 2025-05-01 has (azure-rest-api-specs,
// specification/containerservice/resource-manager/Microsoft.ContainerService/aks/stable/2025-05-01).
// The pool's document is kept as read and sent back with only what the
// run changes, so no field of the newer version is lost on a write.
const poolAPIVersion = "2025-05-01"

// upgradeExtra are the pool's upgrade settings the SDK's model lacks
// ("" unset).
type upgradeExtra struct {
	MaxUnavailable          string `json:"maxUnavailable,omitempty"`
	UndrainableNodeBehavior string `json:"undrainableNodeBehavior,omitempty"`
}

// rawPool is the pool as AKS answered it at poolAPIVersion.
type rawPool struct {
	doc   map[string]any
	extra upgradeExtra
}

// poolDoc reads and writes one pool's document at poolAPIVersion through
// the clients' pipeline: apart from AgentPool, whose methods are the
// provider's.
type poolDoc struct {
	c    *clients
	id   clusterID
	name string
	// what names the pool in errors.
	what string
}

func (a *AgentPool) doc() poolDoc { return poolDoc{c: a.c, id: a.id, name: a.name, what: a.String()} }

// url is the pool's ARM URL at poolAPIVersion.
func (d poolDoc) url() string {
	return fmt.Sprintf("%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerService/managedClusters/%s/agentPools/%s?api-version=%s",
		strings.TrimSuffix(endpoint(), "/"), url.PathEscape(d.id.subscription), url.PathEscape(d.id.group), url.PathEscape(d.id.name), url.PathEscape(d.name), poolAPIVersion)
}

// get reads the pool at poolAPIVersion: the SDK's model of it, and its
// document with the fields the model lacks. A 404 is returned as ARM's
// error.
func (d poolDoc) get(ctx context.Context) (armcs.AgentPool, rawPool, error) {
	var out armcs.AgentPool
	body, err := d.send(ctx, http.MethodGet, nil, "")
	if err != nil {
		return out, rawPool{}, err
	}
	raw, err := decodePool(body, &out)
	if err != nil {
		return out, raw, fmt.Errorf("cannot read %s: %w", d.what, err)
	}
	return out, raw, nil
}

// decodePool reads a pool's document into the model and rawPool.
func decodePool(body []byte, model *armcs.AgentPool) (rawPool, error) {
	var raw rawPool
	if err := model.UnmarshalJSON(body); err != nil {
		return raw, err
	}
	if err := json.Unmarshal(body, &raw.doc); err != nil {
		return raw, err
	}
	var props struct {
		Properties struct {
			UpgradeSettings upgradeExtra `json:"upgradeSettings"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &props); err != nil {
		return raw, err
	}
	raw.extra = props.Properties.UpgradeSettings
	return raw, nil
}

// put sends the pool's document as read (read), with change applied to
// its properties, at poolAPIVersion: AKS's PUT of the pool, whose
// answer's Azure-AsyncOperation opCapture reads.
func (d poolDoc) put(ctx context.Context, read rawPool, change func(props map[string]any)) error {
	doc := cloneDoc(read.doc)
	props, _ := doc["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		doc["properties"] = props
	}
	etag, _ := props["eTag"].(string)
	change(props)
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	_, err = d.send(ctx, http.MethodPut, body, etag)
	return err
}

// changedMeanwhile reports AKS's refusal of a write whose If-Match no
// longer names the pool's eTag (412 PreconditionFailed): another client
// wrote the pool since it was read; read it again and decide again.
func changedMeanwhile(err error) bool {
	_, status := code(err)
	return status == http.StatusPreconditionFailed
}

// send sends method to the pool's URL through the client's pipeline (its
// retries, credential and opCapture) and returns the answer's body. A
// write carries If-Match with the eTag the pool was read with
// (armcontainerservice AgentPoolsClientBeginCreateOrUpdateOptions.IfMatch:
// "The request should only proceed if an entity matches this string"),
// so that it never overwrites another client's write made since.
func (d poolDoc) send(ctx context.Context, method string, body []byte, ifMatch string) ([]byte, error) {
	req, err := runtime.NewRequest(ctx, method, d.url())
	if err != nil {
		return nil, err
	}
	if ifMatch != "" {
		req.Raw().Header.Set("If-Match", ifMatch)
	}
	if body != nil {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/json"); err != nil {
			return nil, err
		}
	}
	resp, err := d.c.pipeline.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if !runtime.HasStatusCode(resp, http.StatusOK, http.StatusCreated, http.StatusAccepted) {
		return nil, runtime.NewResponseError(resp)
	}
	return io.ReadAll(resp.Body)
}

// cloneDoc is a deep copy of a JSON document.
func cloneDoc(doc map[string]any) map[string]any {
	b, _ := json.Marshal(doc)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// QuarantineLabel is the label AKS puts on a node it could not drain
// under undrainableNodeBehavior Cordon, with the value quarantineValue
// (https://learn.microsoft.com/en-us/azure/aks/upgrade-aks-cluster#set-node-drain-behavior:
// blocked nodes are "cordoned and labeled
// kubernetes.azure.com/upgrade-status:Quarantined").
const (
	QuarantineLabel = "kubernetes.azure.com/upgrade-status"
	quarantineValue = "Quarantined"
)

// quarantined are the pool's nodes AKS left quarantined, read from the
// cluster; none where the pool's undrainableNodeBehavior is not Cordon,
// as then a Canceled end is an abort's.
func (a *AgentPool) quarantined(ctx context.Context) []string {
	if a.kube == nil || a.raw.extra.UndrainableNodeBehavior != undrainableCordon {
		return nil
	}
	sel := AgentPoolLabel + "=" + a.name + "," + QuarantineLabel + "=" + quarantineValue
	list, err := a.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	return out
}

// quarantineError is AKS's Canceled end under Cordon, naming the nodes
// it left quarantined: a drain AKS gave up on, not a user's cancel.
func quarantineError(nodes []string) cloud.UpdateError {
	return cloud.UpdateError{Code: cloud.CodePodEviction, Nodes: nodes,
		Message: fmt.Sprintf("AKS could not drain %s within the drain timeout and, under undrainableNodeBehavior Cordon, left them cordoned and labelled %s=%s, ending its upgrade Canceled",
			strings.Join(nodes, ", "), QuarantineLabel, quarantineValue)}
}
