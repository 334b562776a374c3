package awsfake

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// TestFaultsInTheServicesShape: every request fails at rate 1, each in its
// service's shape as the SDK reads it, and the SDK's retryer takes each
// for one it retries.
func TestFaultsInTheServicesShape(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Faults: 1, FaultSeed: 7, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cfg := sdkConfig(s)
	cfg.RetryMaxAttempts = 1
	for _, tc := range []struct {
		name  string
		call  func() error
		codes []string
	}{
		{"auto scaling", func() error {
			_, err := autoscaling.NewFromConfig(cfg).DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
			return err
		}, []string{"Throttling", "ServiceUnavailable"}},
		{"ec2", func() error {
			_, err := ec2.NewFromConfig(cfg).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
			return err
		}, []string{"RequestLimitExceeded", "InternalError"}},
		{"eks", func() error {
			_, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("c1")})
			return err
		}, []string{"ServiceUnavailableException", "ServerException", "ThrottlingException"}},
		{"ssm", func() error {
			_, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
			return err
		}, []string{"ThrottlingException", "InternalServerError"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 4 {
				err := tc.call()
				if code := apiCode(err); !slices.Contains(tc.codes, code) {
					t.Fatalf("err = %v (code %q), want one of %v", err, code, tc.codes)
				}
				if !retryable(err) {
					t.Errorf("the SDK's retryer would not retry %v", err)
				}
			}
		})
	}
	if s.Faults() != 16 {
		t.Errorf("%d faults counted, want 16", s.Faults())
	}
}

// retryable reports whether the SDK's standard retryer retries err.
func retryable(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// TestSetFaults: a running Server's fault rate is changed in place; at 0
// no request fails.
func TestSetFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cfg := sdkConfig(s)
	cfg.RetryMaxAttempts = 1
	client := autoscaling.NewFromConfig(cfg)
	for _, tc := range []struct {
		rate float64
		want int64 // faults counted after four calls
	}{{0, 0}, {1, 4}, {0, 4}} {
		s.SetFaults(tc.rate, 0, 5)
		for range 4 {
			_, err := client.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
			if (err != nil) != (tc.rate == 1) {
				t.Errorf("rate %v: err = %v", tc.rate, err)
			}
		}
		if s.Faults() != tc.want {
			t.Errorf("rate %v: %d faults counted, want %d", tc.rate, s.Faults(), tc.want)
		}
	}
}
