package aws

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ltVersion is one launch template version as DescribeLaunchTemplateVersions
// lists it.
type ltVersion struct {
	template     string
	number       int
	image, itype string
}

func (v ltVersion) xml() string {
	data := "<imageId>" + v.image + "</imageId>"
	if v.itype != "" {
		data += "<instanceType>" + v.itype + "</instanceType>"
	}
	return fmt.Sprintf("<item><launchTemplateId>%s</launchTemplateId><versionNumber>%d</versionNumber><launchTemplateData>%s</launchTemplateData></item>", v.template, v.number, data)
}

// versionsAfter answers DescribeLaunchTemplateVersions: version 2 of lt-1
// (ami-new, what the group launches) when asked for versions by number,
// and the listed versions when asked for those after MinVersion.
func versionsAfter(listed ...ltVersion) func(url.Values) reply {
	return func(v url.Values) reply {
		if !v.Has("MinVersion") {
			return reply{200, ltv2XML}
		}
		var items strings.Builder
		for _, l := range listed {
			items.WriteString(l.xml())
		}
		return reply{200, `<DescribeLaunchTemplateVersionsResponse ` + ec2NS + `><launchTemplateVersionSet>` + items.String() + `</launchTemplateVersionSet></DescribeLaunchTemplateVersionsResponse>`}
	}
}

// TestSetTargetAfterAnInterruption: a run that made its version and was
// killed before it pointed the group at it leaves the version behind; the
// re-run points the group at that version instead of making another.
func TestSetTargetAfterAnInterruption(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listed []ltVersion // the versions after the group's version 2
		ltErr  bool        // listing them fails
		want   string
		// wantCreate says a version is made (createdXML: version 3).
		wantCreate bool
		wantErr    string
	}{
		{name: "never interrupted: no version after the current one", want: "3", wantCreate: true},
		{name: "killed after creating the version, before pointing the group",
			listed: []ltVersion{{"lt-1", 3, "ami-next", ""}}, want: "3"},
		{name: "killed twice, each after creating a version: the first is used",
			listed: []ltVersion{{"lt-1", 4, "ami-next", ""}, {"lt-1", 3, "ami-next", ""}}, want: "3"},
		{name: "a later version with another image is not the target",
			listed: []ltVersion{{"lt-1", 3, "ami-other", ""}}, want: "3", wantCreate: true},
		{name: "a later version with the image and another change is not the target",
			listed: []ltVersion{{"lt-1", 3, "ami-next", "m5.large"}}, want: "3", wantCreate: true},
		{name: "the listing fails", ltErr: true,
			wantErr: `cannot describe the versions of launch template "lt-1" after version 2: UnauthorizedOperation: You are not authorized to perform this operation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := baseReplies()
			r["DescribeLaunchTemplateVersions"] = versionsAfter(tc.listed...)
			if tc.ltErr {
				list := r["DescribeLaunchTemplateVersions"]
				r["DescribeLaunchTemplateVersions"] = func(v url.Values) reply {
					if v.Has("MinVersion") {
						return ec2Error("UnauthorizedOperation", "You are not authorized to perform this operation.")
					}
					return list(v)
				}
			}
			p, f := newTestProvider(t, r, Options{})
			g, err := p.Group(context.Background(), "ng1")
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.SetTarget(context.Background(), g, "ami-next", "")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
				}
				if slices.Contains(f.actions(), "CreateLaunchTemplateVersion") {
					t.Error("a version was made though the earlier ones could not be read")
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
			if created := slices.Contains(f.actions(), "CreateLaunchTemplateVersion"); created != tc.wantCreate {
				t.Errorf("CreateLaunchTemplateVersion called: %v, want %v", created, tc.wantCreate)
			}
			if l := f.lastWith("DescribeLaunchTemplateVersions", "MinVersion"); l.Get("MinVersion") != "2" || l.Get("LaunchTemplateId") != "lt-1" {
				t.Errorf("versions looked up with %v, want those of lt-1 after version 2", l)
			}
			if u := f.last("UpdateAutoScalingGroup"); u.Get("LaunchTemplate.Version") != tc.want {
				t.Errorf("group pointed at %q, want %q", u.Get("LaunchTemplate.Version"), tc.want)
			}
		})
	}
}

func TestIsCopy(t *testing.T) {
	source := ec2types.LaunchTemplateVersion{
		LaunchTemplateId: sdkaws.String("lt-1"), VersionNumber: sdkaws.Int64(2),
		LaunchTemplateData: &ec2types.ResponseLaunchTemplateData{ImageId: sdkaws.String("ami-old"), InstanceType: "m5.large", UserData: sdkaws.String("c2g=")},
	}
	version := func(template string, n int64, data *ec2types.ResponseLaunchTemplateData) ec2types.LaunchTemplateVersion {
		return ec2types.LaunchTemplateVersion{LaunchTemplateId: sdkaws.String(template), VersionNumber: sdkaws.Int64(n), LaunchTemplateData: data}
	}
	copied := func(image string) *ec2types.ResponseLaunchTemplateData {
		d := *source.LaunchTemplateData
		d.ImageId = sdkaws.String(image)
		return &d
	}
	for _, tc := range []struct {
		name string
		v    ec2types.LaunchTemplateVersion
		want bool
	}{
		{name: "a copy with only the image changed", v: version("lt-1", 3, copied("ami-new")), want: true},
		{name: "another image", v: version("lt-1", 3, copied("ami-other"))},
		{name: "the user data changed too", v: version("lt-1", 3, func() *ec2types.ResponseLaunchTemplateData {
			d := copied("ami-new")
			d.UserData = sdkaws.String("b3RoZXI=")
			return d
		}())},
		{name: "only the image, none of the rest (not a copy)", v: version("lt-1", 3, &ec2types.ResponseLaunchTemplateData{ImageId: sdkaws.String("ami-new")})},
		{name: "numbered before its source", v: version("lt-1", 1, copied("ami-new"))},
		{name: "the source itself", v: version("lt-1", 2, copied("ami-new"))},
		{name: "another template", v: version("lt-2", 3, copied("ami-new"))},
		{name: "no launch data", v: version("lt-1", 3, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isCopy(tc.v, source, "ami-new"); got != tc.want {
				t.Errorf("isCopy = %v, want %v", got, tc.want)
			}
		})
	}
}
