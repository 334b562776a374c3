package motobridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeupgrade/kubectl-nodeupgrade/sim/awsfake"
)

// Tags EC2 and Auto Scaling put on the instances they launch.
const (
	groupTag           = "aws:autoscaling:groupName"
	templateIDTag      = "aws:ec2launchtemplate:id"
	templateVersionTag = "aws:ec2launchtemplate:version"
)

// Bridge mirrors the EC2 instances of an endpoint into kwok nodes: a
// running instance gets a node made by awsfake.KubeNodes (provider ID
// aws:///zone/id, zone label, node-group and EKS labels), and the node is
// deleted when the instance leaves the running state or disappears.
type Bridge struct {
	ec2                   *ec2.Client
	onLaunch, onTerminate func(context.Context, awsfake.Instance) error
	names                 map[string]string // launch template ID -> name

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	nodes   map[string]awsfake.Instance // instances that have a node, by ID
	lastErr error
}

// MirrorOptions configure Mirror.
type MirrorOptions struct {
	// Nodes say what node an instance becomes, as for awsfake.
	Nodes awsfake.NodeOptions
	// Interval between two looks at the instances; default 200ms.
	Interval time.Duration
}

// Mirror starts mirroring the instances of the endpoint cfg points at into
// nodes of c, until Close.
func Mirror(cfg aws.Config, c kubernetes.Interface, o MirrorOptions) *Bridge {
	if o.Interval == 0 {
		o.Interval = 200 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bridge{
		ec2:    ec2.NewFromConfig(cfg),
		names:  map[string]string{},
		cancel: cancel,
		done:   make(chan struct{}),
		nodes:  map[string]awsfake.Instance{},
	}
	b.onLaunch, b.onTerminate = awsfake.KubeNodes(c, o.Nodes)
	go func() {
		defer close(b.done)
		tick := time.NewTicker(o.Interval)
		defer tick.Stop()
		for {
			err := b.sync(ctx)
			b.mu.Lock()
			b.lastErr = err
			b.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return b
}

// Err is the error of the last look at the instances, if it failed.
func (b *Bridge) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastErr
}

// Close stops mirroring and deletes the nodes the bridge made, so that a
// later endpoint reusing an instance's private DNS name starts clean.
func (b *Bridge) Close(ctx context.Context) error {
	b.cancel()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for id, in := range b.nodes {
		if err := b.onTerminate(ctx, in); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(b.nodes, id)
	}
	return errors.Join(errs...)
}

// sync makes the nodes match the running instances.
func (b *Bridge) sync(ctx context.Context) error {
	running, err := b.running(ctx)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for id, in := range b.nodes {
		if _, ok := running[id]; ok {
			continue
		}
		if err := b.onTerminate(ctx, in); err != nil {
			errs = append(errs, fmt.Errorf("delete the node of instance %s: %w", id, err))
			continue
		}
		delete(b.nodes, id)
	}
	for id, in := range running {
		if _, ok := b.nodes[id]; ok {
			continue
		}
		// Retried at the next look when it fails.
		if err := b.onLaunch(ctx, in); err != nil {
			errs = append(errs, fmt.Errorf("create the node of instance %s: %w", id, err))
			continue
		}
		b.nodes[id] = in
	}
	return errors.Join(errs...)
}

// running describes the pending and running instances as awsfake
// describes its own.
func (b *Bridge) running(ctx context.Context) (map[string]awsfake.Instance, error) {
	out := map[string]awsfake.Instance{}
	pg := ec2.NewDescribeInstancesPaginator(b.ec2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}},
	})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, e := range r.Instances {
				in, err := b.instance(ctx, e)
				if err != nil {
					return nil, err
				}
				out[in.ID] = in
			}
		}
	}
	return out, nil
}

func (b *Bridge) instance(ctx context.Context, e ec2types.Instance) (awsfake.Instance, error) {
	tags := map[string]string{}
	for _, t := range e.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	in := awsfake.Instance{
		ID:                    aws.ToString(e.InstanceId),
		Group:                 tags[groupTag],
		ImageID:               aws.ToString(e.ImageId),
		InstanceType:          string(e.InstanceType),
		LaunchTemplateID:      tags[templateIDTag],
		LaunchTemplateVersion: tags[templateVersionTag],
		PrivateIP:             aws.ToString(e.PrivateIpAddress),
		PrivateDNS:            aws.ToString(e.PrivateDnsName),
		LaunchTime:            aws.ToTime(e.LaunchTime),
	}
	if e.Placement != nil {
		in.Zone = aws.ToString(e.Placement.AvailabilityZone)
	}
	if e.State != nil {
		in.State = string(e.State.Name)
	}
	if in.LaunchTemplateID != "" {
		name, err := b.templateName(ctx, in.LaunchTemplateID)
		if err != nil {
			return awsfake.Instance{}, err
		}
		in.LaunchTemplateName = name
	}
	return in, nil
}

// templateName looks a launch template's name up once: it stands for the
// user data that sets the node-group label (see awsfake.NodeOptions).
func (b *Bridge) templateName(ctx context.Context, id string) (string, error) {
	if name, ok := b.names[id]; ok {
		return name, nil
	}
	out, err := b.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}})
	if err != nil {
		return "", fmt.Errorf("describe launch template %s: %w", id, err)
	}
	if len(out.LaunchTemplates) != 1 {
		return "", fmt.Errorf("launch template %s: %d found", id, len(out.LaunchTemplates))
	}
	b.names[id] = aws.ToString(out.LaunchTemplates[0].LaunchTemplateName)
	return b.names[id], nil
}
