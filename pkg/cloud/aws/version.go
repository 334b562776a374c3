package aws

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// createVersion makes the launch template version a Target asks for: a
// copy of its source version with only the image changed. It returns the
// new version's number.
func (p *Provider) createVersion(ctx context.Context, g *Group, t Target, ami string) (string, error) {
	out, err := p.ec2.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId:   sdkaws.String(g.LaunchTemplateID),
		SourceVersion:      sdkaws.String(t.SourceVersion),
		VersionDescription: sdkaws.String("kubectl nodeupgrade: image " + ami),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: sdkaws.String(ami)},
	})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "InvalidAMIID") {
			return "", &Error{msg: fmt.Sprintf("image %q was refused: %s: %s; check --ami", ami, ae.ErrorCode(), oneLine(ae.ErrorMessage())), err: err, input: true}
		}
		return "", wrap(err, "create a version of launch template %q with AMI %q", g.LaunchTemplateID, ami)
	}
	if out.LaunchTemplateVersion == nil {
		return "", fmt.Errorf("create a version of launch template %q: empty answer", g.LaunchTemplateID)
	}
	return strconv.FormatInt(sdkaws.ToInt64(out.LaunchTemplateVersion.VersionNumber), 10), nil
}
