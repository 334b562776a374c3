package aws

import (
	"context"
	"errors"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// endpointSettings are what point the SDK at an endpoint (docs/providers/aws.md).
const endpointSettings = "--region, AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_AUTO_SCALING, AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL_EKS), a proxy (HTTPS_PROXY) and the network to AWS"

const markUnreachableID = "NodeupgradeMarkUnreachable"

// markUnreachable has each attempt of a call that reached no endpoint (the
// SDK's RequestSendError: its HTTP client got no answer) carry a
// cloud.UnreachableError naming the endpoint's host. It sits last in the
// Deserialize step, next to the HTTP client; the retryer before it still
// sees the SDK's error through Unwrap.
func markUnreachable(stack *middleware.Stack) error {
	if _, ok := stack.Deserialize.Get(markUnreachableID); ok {
		return nil // a config made from the provider's carries it already
	}
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc(markUnreachableID,
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			var send *smithyhttp.RequestSendError
			if req, ok := in.Request.(*smithyhttp.Request); ok && errors.As(err, &send) {
				err = &cloud.UnreachableError{Cloud: "AWS", Endpoint: req.URL.Host, Settings: endpointSettings, Err: err}
			}
			return out, md, err
		}), middleware.After)
}
