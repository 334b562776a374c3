package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	compute "google.golang.org/api/compute/v1"
)

// Target is the instance template an upgrade moves the groups to.
type Target struct {
	// Template is its name; Create says the run makes it, as a copy of
	// Source with the boot disk's image Image.
	Template string
	Image    string
	Create   bool
	Source   *compute.InstanceTemplate
}

// namePattern is what Compute takes as a resource name (RFC 1035).
var namePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// imagePattern is what --image takes: a name, or a full or partial URL
// of an image or an image family.
var imagePattern = regexp.MustCompile(`^((https://[^/]+/compute/v1/)?projects/[a-z0-9.:-]+/global/images/(family/)?)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidImage reports whether s has the form --image takes.
func ValidImage(s string) bool { return imagePattern.MatchString(s) }

// ValidTemplate reports whether s names an instance template: a name or
// its global URL.
func ValidTemplate(s string) bool {
	name := lastSegment(s)
	return namePattern.MatchString(name) && (name == s || strings.HasSuffix(s, "/global/instanceTemplates/"+name))
}

// CopyName is the name of the template a run makes from source with
// image: source's name, cut to fit, with a hash of both, so a killed run
// finds the copy it made instead of making another.
func CopyName(source, image string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + image))
	suffix := "-nu-" + hex.EncodeToString(sum[:4])
	if keep := 63 - len(suffix); len(source) > keep {
		source = strings.TrimRight(source[:keep], "-")
	}
	return source + suffix
}

// resolveImage finds the image --image names, in project when it names
// none, and returns its partial URL (an image family resolved to the
// image it points at now, so every machine boots the same one).
func (p *Client) resolveImage(ctx context.Context, ref string) (string, error) {
	project, name := p.project, lastSegment(ref)
	if i := strings.Index(ref, "projects/"); i >= 0 {
		project, _, _ = strings.Cut(ref[i+len("projects/"):], "/")
	}
	var im *compute.Image
	var err error
	if strings.Contains(ref, "/images/family/") {
		im, err = p.svc.Images.GetFromFamily(project, name).Context(ctx).Do()
	} else {
		im, err = p.svc.Images.Get(project, name).Context(ctx).Do()
	}
	if isCode(err, http.StatusNotFound) {
		return "", &Error{Msg: fmt.Sprintf("image %q not found in project %q; check %s", ref, project, flagImage), Err: err, IsInput: true}
	}
	if err != nil {
		return "", wrap(err, "get image %q", ref)
	}
	return fmt.Sprintf("projects/%s/global/images/%s", project, im.Name), nil
}

// getTemplate reads a global instance template; nil when there is none.
func (p *Client) getTemplate(ctx context.Context, name string) (*compute.InstanceTemplate, error) {
	it, err := p.svc.InstanceTemplates.Get(p.project, name).Context(ctx).Do()
	if isCode(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err, "get instance template %q", name)
	}
	return it, nil
}

// templateName is the name of a group's template, refusing a regional
// one (regions/R/instanceTemplates/T), which the run cannot copy.
func templateName(m MIG, url string) (string, error) {
	if strings.Contains(url, "/regions/") {
		return "", inputErrorf("managed instance group %q uses regional instance template %q, which is not supported; use a global one", m.String(), url)
	}
	return lastSegment(url), nil
}

// bootImage is the source image of a template's boot disk.
func bootImage(it *compute.InstanceTemplate) string {
	if it.Properties == nil {
		return ""
	}
	for _, d := range it.Properties.Disks {
		if d.Boot && d.InitializeParams != nil {
			return d.InitializeParams.SourceImage
		}
	}
	return ""
}

// sameImage compares image URLs, full or partial.
func sameImage(a, b string) bool {
	cut := func(s string) string {
		if i := strings.Index(s, "projects/"); i >= 0 {
			return s[i:]
		}
		return s
	}
	return a != "" && cut(a) == cut(b)
}

// ResolveTarget works out, changing nothing, the template the groups move
// to: with image, a copy of current (the groups' template now) with only
// the boot image changed (none to make when current has that image, as
// after an interrupted run, or when the copy exists, as after a run killed
// before it pointed the groups at it); with template, that existing one;
// with neither, current.
func (p *Client) ResolveTarget(ctx context.Context, current, image, template string) (Target, error) {
	if template != "" {
		it, err := p.getTemplate(ctx, lastSegment(template))
		if err != nil {
			return Target{}, err
		}
		if it == nil {
			return Target{}, inputErrorf("instance template %q not found in project %q; check %s", template, p.project, flagTemplate)
		}
		return Target{Template: it.Name, Image: bootImage(it)}, nil
	}
	src, err := p.getTemplate(ctx, current)
	if err != nil {
		return Target{}, err
	}
	if src == nil {
		return Target{}, fmt.Errorf("instance template %q of the group not found in project %q", current, p.project)
	}
	t := Target{Template: current, Image: bootImage(src)}
	if image == "" {
		return t, nil
	}
	img, err := p.resolveImage(ctx, image)
	if err != nil || sameImage(t.Image, img) {
		return t, err
	}
	name := CopyName(current, img)
	made, err := p.getTemplate(ctx, name)
	if err != nil {
		return Target{}, err
	}
	if made != nil {
		return t, p.checkCopy(made, src, img, &t)
	}
	return Target{Template: name, Image: img, Create: true, Source: src}, nil
}

// checkCopy makes t the copy made when it is one of src with img, and
// refuses a template of that name that is something else.
func (p *Client) checkCopy(made, src *compute.InstanceTemplate, img string, t *Target) error {
	if !isCopy(made, src, img) {
		return inputErrorf("instance template %q exists but is not a copy of %q with image %q; delete it or pass %s", made.Name, src.Name, img, flagTemplate)
	}
	*t = Target{Template: made.Name, Image: img}
	return nil
}

// copyOf is src's properties with the boot disk's image set to img.
func copyOf(src *compute.InstanceTemplate, img string) (*compute.InstanceProperties, error) {
	b, err := json.Marshal(src.Properties)
	if err != nil {
		return nil, err
	}
	var props compute.InstanceProperties
	if err := json.Unmarshal(b, &props); err != nil {
		return nil, err
	}
	for _, d := range props.Disks {
		if d.Boot && d.InitializeParams != nil {
			d.InitializeParams.SourceImage = img
		}
	}
	return &props, nil
}

// isCopy reports whether made has src's properties but for the boot image,
// which is img.
func isCopy(made, src *compute.InstanceTemplate, img string) bool {
	want, err := copyOf(src, img)
	if err != nil || made.Properties == nil {
		return false
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(made.Properties)
	return string(a) == string(b)
}

// CreateTarget makes the template a Target asks for, or settles on the
// one a concurrent or earlier call made under its name.
func (p *Client) CreateTarget(ctx context.Context, t Target) error {
	if !t.Create {
		return nil
	}
	props, err := copyOf(t.Source, t.Image)
	if err != nil {
		return err
	}
	op, err := p.svc.InstanceTemplates.Insert(p.project, &compute.InstanceTemplate{
		Name:        t.Template,
		Description: fmt.Sprintf("kubectl nodeupgrade: %s with image %s", t.Source.Name, t.Image),
		Properties:  props,
	}).Context(ctx).Do()
	if isCode(err, http.StatusConflict) {
		made, gerr := p.getTemplate(ctx, t.Template)
		if gerr != nil || made == nil {
			return wrap(err, "create instance template %q", t.Template)
		}
		return p.checkCopy(made, t.Source, t.Image, &Target{})
	}
	if err != nil {
		if isCode(err, http.StatusBadRequest) {
			return &Error{Msg: fmt.Sprintf("image %q was refused for instance template %q: %s; check %s", t.Image, t.Template, oneLine(err.Error()), flagImage), Err: err, IsInput: true}
		}
		return wrap(err, "create instance template %q", t.Template)
	}
	return p.waitGlobal(ctx, op)
}
