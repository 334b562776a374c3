package awsfake

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// TestLostRepliesAreCarriedOutOnce: a call whose every answer is lost is
// carried out by the first attempt, and the SDK's retries, which send the
// same idempotency token, change nothing more; the token's next call, once
// answers get through, gets the first attempt's answer.
func TestLostRepliesAreCarriedOutOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _ := eksScene(t, ctx)
	lt := s.CreateLaunchTemplate("web", "ami-1", "")
	if _, err := s.ManagedNodeGroup(ctx, ManagedNodeGroupSpec{Cluster: "c1", Name: "ng1", Zones: zones[:1], Min: 0, Desired: 0, Max: 2, Version: "1.30"}); err != nil {
		t.Fatal(err)
	}
	cfg := sdkConfig(s)
	cfg.RetryMaxAttempts = 3
	ec2api, eksapi := ec2.NewFromConfig(cfg), eks.NewFromConfig(cfg)
	for _, tc := range []struct {
		name  string
		call  func() (string, error) // the call's result: a version, an update id
		count func() int             // what was made: versions, updates
	}{
		{"CreateLaunchTemplateVersion", func() (string, error) {
			out, err := ec2api.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(lt),
				ClientToken: aws.String("tok-lt"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-2")}})
			if err != nil {
				return "", err
			}
			return fmt.Sprint(aws.ToString(out.LaunchTemplateVersion.LaunchTemplateId), "/", aws.ToInt64(out.LaunchTemplateVersion.VersionNumber)), nil
		}, func() int { l, _ := s.LaunchTemplate(lt); return len(l.Versions) }},
		{"UpdateNodegroupConfig", func() (string, error) {
			out, err := eksapi.UpdateNodegroupConfig(ctx, &eks.UpdateNodegroupConfigInput{ClusterName: aws.String("c1"), NodegroupName: aws.String("ng1"),
				ClientRequestToken: aws.String("tok-cfg"), UpdateConfig: &ekstypes.NodegroupUpdateConfig{MaxUnavailable: aws.Int32(2)}})
			if err != nil {
				return "", err
			}
			return aws.ToString(out.Update.Id), nil
		}, func() int { return len(s.EKSUpdates("c1", "ng1")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.count()
			s.SetFaults(0, 1, 3)
			lost := s.LostReplies()
			if _, err := tc.call(); err == nil {
				t.Fatal("an answer got through every lost reply")
			}
			if n := s.LostReplies() - lost; n != 3 {
				t.Errorf("%d replies lost, want the SDK's 3 attempts", n)
			}
			s.SetFaults(0, 0, 0)
			if got := tc.count(); got != before+1 {
				t.Fatalf("%d made by three attempts with one token, want 1", got-before)
			}
			first, err := tc.call()
			if err != nil || first == "" || tc.count() != before+1 {
				t.Errorf("the token's next call: %q, %v, %d made; want the first answer and nothing more", first, err, tc.count()-before)
			}
		})
	}
}

// TestLoseAnswer: the next call of the name given is carried out and its
// answer lost, once; other calls are answered.
func TestLoseAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, lt, api := templateScene(t, ctx)
	s.LoseAnswer("CreateLaunchTemplateVersion")
	create := func() error {
		_, err := api.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(lt),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-2")}})
		return err
	}
	if _, err := api.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateId: aws.String(lt)}); err != nil {
		t.Fatalf("another call lost: %v", err)
	}
	if err := create(); err == nil {
		t.Fatal("the answer got through")
	}
	if err := create(); err != nil {
		t.Fatalf("the second answer lost too: %v", err)
	}
	if l, _ := s.LaunchTemplate(lt); len(l.Versions) != 3 || !slices.Equal(s.LostCalls(), []string{"CreateLaunchTemplateVersion"}) {
		t.Errorf("%d versions, lost %v; want 3 (both calls carried out, without a token of their own) and one lost", len(l.Versions), s.LostCalls())
	}
}

// TestSlowAnswer: the next call of the name given is carried out at once
// and answered only later: a client that gives up first never hears it,
// though the call took effect; the next call is answered at once.
func TestSlowAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, lt, api := templateScene(t, ctx)
	s.SlowAnswer("CreateLaunchTemplateVersion", time.Minute)
	create := func(ctx context.Context) error {
		_, err := api.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{LaunchTemplateId: aws.String(lt),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-2")}})
		return err
	}
	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if err := create(short); err == nil {
		t.Fatal("the slow answer was heard before the client gave up")
	}
	if l, _ := s.LaunchTemplate(lt); len(l.Versions) != 2 {
		t.Errorf("%d versions, want 2: the call unheard is carried out", len(l.Versions))
	}
	if err := create(ctx); err != nil {
		t.Fatalf("the next answer held back too: %v", err)
	}
}

// templateScene is a Server with one launch template, and an EC2 client
// that tries each call once.
func templateScene(t *testing.T, ctx context.Context) (*Server, string, *ec2.Client) {
	s, _ := eksScene(t, ctx)
	lt := s.CreateLaunchTemplate("web", "ami-1", "")
	cfg := sdkConfig(s)
	cfg.RetryMaxAttempts = 1
	return s, lt, ec2.NewFromConfig(cfg)
}
