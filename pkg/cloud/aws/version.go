package aws

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodeupgrade/kubectl-nodeupgrade/pkg/cloud"
)

// createVersion makes the launch template version a Target asks for: a
// copy of its source version with only the image changed. It returns the
// new version's number. The SDK sends CreateLaunchTemplateVersion with an
// idempotency token of its own, so its retries of one call make one
// version; where they ran out, a version the call may have made all the
// same is looked for (findCopy) before the call fails, as a run killed
// after the call finds it.
func (p *Client) createVersion(ctx context.Context, g *AutoScalingGroup, t Target, ami string) (string, error) {
	out, err := p.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId:   sdkaws.String(g.LaunchTemplateID),
		SourceVersion:      sdkaws.String(t.SourceVersion),
		VersionDescription: sdkaws.String("kubectl nodeupgrade: image " + ami + " from version " + t.SourceVersion),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: sdkaws.String(ami)},
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "InvalidAMIID") {
			return "", &Error{msg: fmt.Sprintf("image %q was refused: %s: %s; check --ami", ami, ae.ErrorCode(), oneLine(ae.ErrorMessage())), err: err, input: true}
		}
		err = wrap(err, "create a version of launch template %q with AMI %q", g.LaunchTemplateID, ami)
		if t.source != nil && cloud.Transient(err) {
			if made, ferr := p.findCopy(ctx, *t.source, ami); ferr == nil && made != "" {
				return made, nil
			}
		}
		return "", err
	}
	if out.LaunchTemplateVersion == nil {
		return "", fmt.Errorf("create a version of launch template %q: empty answer", g.LaunchTemplateID)
	}
	return strconv.FormatInt(sdkaws.ToInt64(out.LaunchTemplateVersion.VersionNumber), 10), nil
}

// findCopy looks for a version of source's launch template that
// createVersion would make from source for ami: one an earlier run made
// before it was interrupted, or before a rollback. It returns the oldest
// such version's number, or "" when there is none. Only versions after the
// source are read, since a copy is always numbered after its source.
func (p *Client) findCopy(ctx context.Context, source ec2types.LaunchTemplateVersion, ami string) (string, error) {
	id, from := sdkaws.ToString(source.LaunchTemplateId), sdkaws.ToInt64(source.VersionNumber)
	pg := ec2.NewDescribeLaunchTemplateVersionsPaginator(p.ec2, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: sdkaws.String(id),
		MinVersion:       sdkaws.String(strconv.FormatInt(from, 10)),
	})
	var found int64
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return "", wrap(err, "describe the versions of launch template %q after version %d", id, from)
		}
		for _, v := range page.LaunchTemplateVersions {
			if n := sdkaws.ToInt64(v.VersionNumber); isCopy(v, source, ami) && (found == 0 || n < found) {
				found = n
			}
		}
	}
	if found == 0 {
		return "", nil
	}
	return strconv.FormatInt(found, 10), nil
}

// isCopy reports whether v is a copy of source, made after it, whose
// launch data differs from source's in the image alone, which is ami: the
// target itself, whoever made it.
func isCopy(v, source ec2types.LaunchTemplateVersion, ami string) bool {
	if sdkaws.ToString(v.LaunchTemplateId) != sdkaws.ToString(source.LaunchTemplateId) ||
		sdkaws.ToInt64(v.VersionNumber) <= sdkaws.ToInt64(source.VersionNumber) ||
		v.LaunchTemplateData == nil || sdkaws.ToString(v.LaunchTemplateData.ImageId) != ami {
		return false
	}
	var want ec2types.ResponseLaunchTemplateData
	if source.LaunchTemplateData != nil {
		want = *source.LaunchTemplateData
	}
	want.ImageId = sdkaws.String(ami)
	return reflect.DeepEqual(*v.LaunchTemplateData, want)
}
