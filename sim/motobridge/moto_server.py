"""Serves moto's Auto Scaling and EC2 on a loopback port, corrected where
moto 5.2.1 contradicts AWS's documentation on calls kubectl-nodeupgrade
makes, so that a conformance run tests the plugin and not moto's gaps.

Usage: python3 moto_server.py [--as-installed]

Prints "port N" on stdout once it listens on 127.0.0.1:N (a free port), and
exits when its stdin closes, so a test that dies cannot leave it behind.
With --as-installed, moto is served unpatched (to show the deviations).

The corrections, each against AWS's documentation:
  a) Auto Scaling keeps the same number of instances in every enabled zone;
     moto launches all instances of one capacity change in one random zone.
     Here each instance goes to the group's zone with the fewest InService
     instances.
  b) A group launches the launch template version it names ($Latest,
     $Default or a number); moto launches the template's default version
     (its aws:ec2launchtemplate:version tag and the group's
     Instances[].LaunchTemplate say so, though the image is the right one).
     Here the launch uses the group's version, and Instances[].LaunchTemplate
     reports the version as the group named it at launch.
  c) CreateLaunchTemplateVersion with SourceVersion inherits the source's
     launch parameters, overwritten by the ones given; moto keeps only the
     ones given.
  d) TerminateInstanceInAutoScalingGroup of an instance no group manages is
     a ValidationError ("Instance Id not found"); moto fails with HTTP 500.
  e) ModifyLaunchTemplate takes the new default version in the query
     parameter SetDefaultVersion (the SDKs send it so); moto reads
     DefaultVersion, finds none and fails. Here SetDefaultVersion is read.
  f) iam:SimulatePrincipalPolicy is not implemented (NotImplementedError,
     HTTP 500). Here it is answered as IAM answers a caller whose policies
     do not allow it: 403 AccessDenied ("User: ... is not authorized to
     perform: iam:SimulatePrincipalPolicy"), so the plugin's permission
     probe takes the path of a caller who may not simulate.
  g) ec2:DescribeCapacityReservations is not implemented (NotImplementedError,
     HTTP 500). Here it is answered as EC2 answers an account that has no
     capacity reservations: an empty CapacityReservations list.
"""

import contextlib
import copy
import logging
import os
import sys
import threading

from moto.autoscaling import models as asg_models
from moto.autoscaling.exceptions import ValidationError
from moto.core.exceptions import AccessDeniedError
from moto.core.responses import ActionResult
from moto.ec2.responses import EC2Response
from moto.iam.responses import IamResponse
from moto.ec2.responses.launch_templates import LaunchTemplates
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server


def _require(owner, name):
    """Fails at start, not mid-test, if moto's internals moved."""
    if not hasattr(owner, name):
        raise SystemExit(f"moto_server.py: {owner.__name__}.{name} not found; moto changed, review the patches")
    return getattr(owner, name)


def _zone_counts(group):
    counts = {zone: 0 for zone in group.availability_zones}
    for state in group.instance_states:
        zone = str(state.availability_zone)  # a Placement, printed as its zone
        if state.lifecycle_state == "InService" and zone in counts:
            counts[zone] += 1
    return counts


def _subnets_by_zone(group):
    if not group.vpc_zone_identifier:
        return {}
    ids = group.vpc_zone_identifier.split(",")
    subnets = group.autoscaling_backend.ec2_backend.describe_subnets(subnet_ids=ids)
    by_zone = {}
    for subnet in subnets:
        by_zone.setdefault(subnet.availability_zone, subnet.id)
    return by_zone


@contextlib.contextmanager
def _pinned_version(group):
    """Makes the group's launches use the version the group names (b):
    moto passes the template without a version to EC2, which then takes
    the default one."""
    ec2 = group.autoscaling_backend.ec2_backend
    template = group.ec2_launch_template
    if template is None:
        yield
        return
    number = str(template.get_version(group.launch_template_version).number)
    run_instances = ec2.run_instances

    def run_pinned(*args, **kwargs):
        if kwargs.get("launch_template"):
            kwargs["launch_template"] = dict(kwargs["launch_template"], Version=number)
        return run_instances(*args, **kwargs)

    ec2.run_instances = run_pinned
    try:
        yield
    finally:
        del ec2.run_instances  # the instance attribute shadowed the method


def patch():
    group_cls = asg_models.FakeAutoScalingGroup
    launch = _require(group_cls, "replace_autoscaling_group_instances")

    def replace_instances(self, count_needed, propagated_tags):
        # (a) one launch per instance, each into the emptiest zone; the
        # zones list is narrowed only for the call, which picks from it.
        # moto puts every instance in the first subnet, so with subnets
        # the list is narrowed to the zone's one as well.
        zones, subnets = self.availability_zones, self.vpc_zone_identifier
        subnet_of = _subnets_by_zone(self)
        for _ in range(count_needed):
            counts = _zone_counts(self)
            zone = min(zones, key=lambda z: counts[z])
            before = len(self.instance_states)
            self.availability_zones = [zone]
            if zone in subnet_of:
                self.vpc_zone_identifier = subnet_of[zone]
            try:
                with _pinned_version(self):
                    launch(self, 1, dict(propagated_tags))
            finally:
                self.availability_zones, self.vpc_zone_identifier = zones, subnets
            for state in self.instance_states[before:]:
                state.launched_with = self.launch_template_version

    group_cls.replace_autoscaling_group_instances = replace_instances

    state_cls = asg_models.InstanceState
    reported = _require(state_cls, "launch_template")

    def instance_launch_template(self):
        spec = reported.fget(self)
        version = getattr(self, "launched_with", None)
        if spec is not None and version is not None:
            spec = dict(spec, Version=version)
        return spec

    state_cls.launch_template = property(instance_launch_template)

    create_version = _require(LaunchTemplates, "create_launch_template_version")

    def create_launch_template_version(self):
        source = self._get_param("SourceVersion")
        if not source:
            return create_version(self)
        name, template_id = self._get_param("LaunchTemplateName"), self._get_param("LaunchTemplateId")
        if template_id:
            template = self.ec2_backend.get_launch_template(template_id)
        else:
            template = self.ec2_backend.get_launch_template_by_name(name)
        inherited = copy.deepcopy(template.get_version(source).data)
        add_version = template.create_version

        def create_from_source(data, description):
            # (c) the given parameters overwrite the inherited ones
            return add_version(dict(inherited, **data), description)

        template.create_version = create_from_source
        try:
            return create_version(self)
        finally:
            del template.create_version

    LaunchTemplates.create_launch_template_version = create_launch_template_version

    modify = _require(LaunchTemplates, "modify_launch_template")

    def modify_launch_template(self):
        # (e) the query protocol's name of DefaultVersion
        get = self._get_param

        def get_param(name, *args, **kwargs):
            if name == "DefaultVersion":
                return get("SetDefaultVersion", *args, **kwargs) or get(name, *args, **kwargs)
            return get(name, *args, **kwargs)

        self._get_param = get_param
        try:
            return modify(self)
        finally:
            del self._get_param

    LaunchTemplates.modify_launch_template = modify_launch_template

    backend_cls = asg_models.AutoScalingBackend
    terminate = _require(backend_cls, "terminate_instance")

    def terminate_instance(self, instance_id, should_decrement):
        managed = any(
            state.instance.id == instance_id
            for group in self.autoscaling_groups.values()
            for state in group.instance_states
        )
        if not managed:
            # (d) AWS's answer for an instance no group manages
            raise ValidationError(f"Instance Id not found - No managed instance found for instance ID: {instance_id}")
        return terminate(self, instance_id, should_decrement)

    backend_cls.terminate_instance = terminate_instance

    def simulate_principal_policy(self):
        # (f) IAM's answer to a caller who may not simulate
        raise AccessDeniedError(f"arn:aws:sts::{self.current_account}:user/moto", "iam:SimulatePrincipalPolicy")

    IamResponse.simulate_principal_policy = simulate_principal_policy

    if not hasattr(EC2Response, "describe_capacity_reservations"):
        def describe_capacity_reservations(self):
            # (g) an account without capacity reservations
            return ActionResult({"CapacityReservations": []})

        EC2Response.describe_capacity_reservations = describe_capacity_reservations


def serialised(app):
    """moto's models are not thread-safe and the patches above swap
    attributes for the span of a call: one request at a time."""
    lock = threading.Lock()

    def handle(environ, start_response):
        with lock:
            return list(app(environ, start_response))

    return handle


def exit_when_stdin_closes():
    sys.stdin.buffer.read()
    os._exit(0)


def main(argv):
    if "--as-installed" not in argv:
        patch()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", 0, serialised(app), threaded=True)
    os.environ["MOTO_PORT"] = str(server.server_port)
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    print(f"port {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
