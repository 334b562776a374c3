package awsfake

import (
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

func (s *Server) ec2(action string, f form) ([]*node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch action {
	case "DescribeLaunchTemplateVersions":
		return s.describeLTVersions(f)
	case "CreateLaunchTemplateVersion":
		return s.createLTVersion(f)
	case "DescribeInstances":
		return s.describeInstances(f)
	case "DescribeImages":
		return s.describeImages(f)
	case "ModifyLaunchTemplate":
		return s.modifyLaunchTemplate(f)
	case "DescribeInstanceTypes":
		return s.describeInstanceTypes(f)
	case "DescribeInstanceTypeOfferings":
		return s.describeOfferings(f)
	case "DescribeSubnets":
		return s.describeSubnets(f)
	}
	if res, ok, err := s.reservationCall(action, f); ok {
		return res, err
	}
	return nil, ec2Err("InvalidAction", "The action %s is not valid for this web service.", action)
}

func (s *Server) templateArg(f form) (*LaunchTemplate, error) {
	id, name := f.get("LaunchTemplateId"), f.get("LaunchTemplateName")
	switch {
	case id != "":
		if lt := s.templates[id]; lt != nil {
			return lt, nil
		}
		if !strings.HasPrefix(id, "lt-") {
			return nil, ec2Err("InvalidLaunchTemplateId.Malformed", "The specified ID for the launch template (%s) is not valid. Launch template IDs start with 'lt-'.", id)
		}
		return nil, ec2Err("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	case name != "":
		for _, lt := range s.templates {
			if lt.Name == name {
				return lt, nil
			}
		}
		return nil, ec2Err("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
	}
	return nil, ec2Err("MissingParameter", "The request must contain the parameter LaunchTemplateId or LaunchTemplateName")
}

func ltVersion(lt *LaunchTemplate, v TemplateVersion) *node {
	return el("item",
		txt("createTime", v.Created.Format(timeFormat)),
		txt("createdBy", "arn:aws:iam::123456789012:user/awsfake"),
		boolean("defaultVersion", v.Number == lt.DefaultVersion),
		el("launchTemplateData", txt("imageId", v.ImageID), txt("instanceType", v.InstanceType)),
		txt("launchTemplateId", lt.ID),
		txt("launchTemplateName", lt.Name),
		txt("versionDescription", v.Description),
		num("versionNumber", v.Number),
	)
}

func (s *Server) describeLTVersions(f form) ([]*node, error) {
	lt, err := s.templateArg(f)
	if err != nil {
		return nil, err
	}
	want := f.list("LaunchTemplateVersion")
	var items []*node
	if len(want) == 0 {
		// MinVersion is "the version number after which", MaxVersion "up
		// to which" to describe.
		lo, hi := int64(0), int64(len(lt.Versions))
		for _, b := range []struct {
			param string
			to    *int64
		}{{"MinVersion", &lo}, {"MaxVersion", &hi}} {
			if v := f.get(b.param); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, ec2Err("InvalidParameterValue", "Invalid value %q for %s.", v, b.param)
				}
				*b.to = n
			}
		}
		for _, v := range lt.Versions {
			if v.Number > lo && v.Number <= hi {
				items = append(items, ltVersion(lt, v))
			}
		}
	}
	for _, w := range want {
		n, ok := lt.resolve(w)
		if !ok {
			return nil, ec2Err("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template ID %s.", w, lt.ID)
		}
		items = append(items, ltVersion(lt, lt.Versions[n-1]))
	}
	return []*node{list("launchTemplateVersionSet", "item", items)}, nil
}

func (s *Server) createLTVersion(f form) ([]*node, error) {
	lt, err := s.templateArg(f)
	if err != nil {
		return nil, err
	}
	op := "CreateLaunchTemplateVersion/" + lt.ID
	if n, ok := s.remembered(op, f.get("ClientToken")); ok {
		it := ltVersion(lt, lt.Versions[n.(int64)-1])
		it.name = "launchTemplateVersion"
		return []*node{it}, nil
	}
	var v TemplateVersion
	if src := f.get("SourceVersion"); src != "" {
		n, ok := lt.resolve(src)
		if !ok {
			return nil, ec2Err("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template ID %s.", src, lt.ID)
		}
		v = lt.Versions[n-1]
	}
	if img := f.get("LaunchTemplateData.ImageId"); img != "" {
		if !strings.HasPrefix(img, "ami-") || len(img) < 5 {
			return nil, ec2Err("InvalidAMIID.Malformed", "Invalid id: %q (expecting \"ami-...\")", img)
		}
		v.ImageID = img
	}
	if t := f.get("LaunchTemplateData.InstanceType"); t != "" {
		v.InstanceType = t
	}
	v.Number = int64(len(lt.Versions) + 1)
	v.Description = f.get("VersionDescription")
	v.Created = timeNow()
	lt.Versions = append(lt.Versions, v)
	s.remember(op, f.get("ClientToken"), v.Number)
	s.notify()
	it := ltVersion(lt, v)
	it.name = "launchTemplateVersion"
	return []*node{it}, nil
}

func (s *Server) describeInstances(f form) ([]*node, error) {
	ids := f.list("InstanceId")
	var missing []string
	var sel []*instance
	if len(ids) > 0 {
		for _, id := range ids {
			if in := s.instances[id]; in != nil {
				sel = append(sel, in)
			} else {
				missing = append(missing, id)
			}
		}
	} else {
		for _, in := range s.instances {
			sel = append(sel, in)
		}
		sort.Slice(sel, func(i, j int) bool { return sel[i].ID < sel[j].ID })
	}
	if len(missing) == 1 {
		return nil, ec2Err("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", missing[0])
	} else if len(missing) > 1 {
		return nil, ec2Err("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	sel, err := filtered(f, sel, instanceField, func(values []string, v string) bool { return slices.Contains(values, v) })
	if err != nil {
		return nil, err
	}
	var items []*node
	for _, in := range sel {
		items = append(items, reservationNode(in))
	}
	return []*node{el("reservationSet", items...)}, nil
}

// instanceField is the value of an instance that a DescribeInstances
// filter of that name selects by.
func instanceField(name string) (func(*instance) string, bool) {
	switch {
	case name == "instance-id":
		return func(in *instance) string { return in.ID }, true
	case name == "instance-state-name":
		return func(in *instance) string { return in.State }, true
	case name == "availability-zone":
		return func(in *instance) string { return in.Zone }, true
	case strings.HasPrefix(name, "tag:"):
		key := strings.TrimPrefix(name, "tag:")
		return func(in *instance) string { return tags(in)[key] }, true
	}
	return nil, false
}

// filtered keeps the items every Filter.N of the request selects: the
// item's field of the filter's name matches one of its values. An
// unknown filter name is EC2's InvalidParameterValue.
func filtered[T any](f form, sel []T, field func(string) (func(T) string, bool), match func(values []string, v string) bool) ([]T, error) {
	for i := 1; ; i++ {
		p := "Filter." + strconv.Itoa(i)
		if !f.has(p + ".Name") {
			return sel, nil
		}
		name, values := f.get(p+".Name"), f.list(p+".Value")
		get, ok := field(name)
		if !ok {
			return nil, ec2Err("InvalidParameterValue", "The filter '%s' is invalid", name)
		}
		sel = slices.DeleteFunc(sel, func(x T) bool { return !match(values, get(x)) })
	}
}

// reservationNode is an instance as DescribeInstances answers it: one
// reservation per instance, as a group's launches are.
func reservationNode(in *instance) *node {
	var tagItems []*node
	t := tags(in)
	for _, k := range slices.Sorted(maps.Keys(t)) {
		tagItems = append(tagItems, el("item", txt("key", k), txt("value", t[k])))
	}
	return el("item",
		txt("reservationId", "r-"+strings.TrimPrefix(in.ID, "i-")),
		txt("ownerId", "123456789012"),
		el("instancesSet", el("item",
			txt("instanceId", in.ID),
			txt("imageId", in.ImageID),
			el("instanceState", num("code", stateCode(in.State)), txt("name", in.State)),
			txt("privateDnsName", in.PrivateDNS),
			txt("privateIpAddress", in.PrivateIP),
			txt("instanceType", in.InstanceType),
			txt("launchTime", in.LaunchTime.Format(timeFormat)),
			el("placement", txt("availabilityZone", in.Zone), txt("tenancy", "default")),
			el("tagSet", tagItems...),
		).add(subnetNode(in))),
	)
}

// tags are the ones EC2 and Auto Scaling put on a group's instances: the
// group's propagated tags, Name (the group's, unless it propagates one) and
// the aws: ones, which no user tag can override.
func tags(in *instance) map[string]string {
	t := map[string]string{"Name": in.Group}
	maps.Copy(t, in.tags)
	t["aws:autoscaling:groupName"] = in.Group
	t["aws:ec2launchtemplate:id"] = in.LaunchTemplateID
	t["aws:ec2launchtemplate:version"] = in.LaunchTemplateVersion
	return t
}

// subnetNode is the instance's subnetId, if its group has subnets.
func subnetNode(in *instance) *node {
	if in.subnet == "" {
		return nil
	}
	return txt("subnetId", in.subnet)
}

func stateCode(state string) int {
	switch state {
	case StatePending:
		return 0
	case StateRunning:
		return 16
	case StateShuttingDown:
		return 32
	case StateTerminated:
		return 48
	}
	return 0
}

// describeImages answers DescribeImages from the registered images. Owner.N
// and ExecutableBy.N are ignored: every image belongs to the caller.
func (s *Server) describeImages(f form) ([]*node, error) {
	ids := f.list("ImageId")
	var sel []*Image
	var missing []string
	for _, id := range ids {
		if !strings.HasPrefix(id, "ami-") || len(id) < 5 {
			return nil, ec2Err("InvalidAMIID.Malformed", "Invalid id: %q (expecting \"ami-...\")", id)
		}
		im := s.images[id]
		switch {
		case im == nil:
			missing = append(missing, id)
		case !slices.Contains(sel, im):
			sel = append(sel, im)
		}
	}
	// Ids named outright must exist; ids in a filter merely select.
	if len(missing) == 1 {
		return nil, ec2Err("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", missing[0])
	} else if len(missing) > 1 {
		return nil, ec2Err("InvalidAMIID.NotFound", "The image ids '[%s]' do not exist", strings.Join(missing, ", "))
	}
	if len(ids) == 0 {
		for _, im := range s.images {
			sel = append(sel, im)
		}
		sort.Slice(sel, func(i, j int) bool { return sel[i].ID < sel[j].ID })
	}
	// Image filters take the wildcards * and ?.
	sel, err := filtered(f, sel, imageField, func(values []string, v string) bool {
		return slices.ContainsFunc(values, func(w string) bool { return wildcard(w).MatchString(v) })
	})
	if err != nil {
		return nil, err
	}
	var items []*node
	for _, im := range sel {
		items = append(items, imageNode(im))
	}
	return []*node{el("imagesSet", items...)}, nil
}

// imageField is the value of an image that a DescribeImages filter of
// that name selects by.
func imageField(name string) (func(*Image) string, bool) {
	switch name {
	case "image-id":
		return func(im *Image) string { return im.ID }, true
	case "name":
		return func(im *Image) string { return im.Name }, true
	case "state":
		return func(*Image) string { return "available" }, true
	}
	return nil, false
}

func imageNode(im *Image) *node {
	return el("item",
		txt("imageId", im.ID),
		txt("imageLocation", "123456789012/"+im.Name),
		txt("imageState", "available"),
		txt("imageOwnerId", "123456789012"),
		txt("creationDate", im.Created.Format(timeFormat)),
		boolean("isPublic", false),
		txt("architecture", "x86_64"),
		txt("imageType", "machine"),
		txt("name", im.Name),
		txt("rootDeviceType", "ebs"),
		txt("rootDeviceName", "/dev/xvda"),
		txt("virtualizationType", "hvm"),
		txt("hypervisor", "xen"),
		boolean("enaSupport", true),
	)
}

// wildcard compiles an EC2 filter value, where * matches any run of
// characters and ? any one character.
func wildcard(v string) *regexp.Regexp {
	q := regexp.QuoteMeta(v)
	q = strings.ReplaceAll(q, `\*`, ".*")
	q = strings.ReplaceAll(q, `\?`, ".")
	return regexp.MustCompile("^" + q + "$")
}
