package awsfake

import (
	"fmt"
	"strconv"
)

// modifyLaunchTemplate changes which version is the template's default
// (SetDefaultVersion), what a group launching "$Default" launches next.
func (s *Server) modifyLaunchTemplate(f form) ([]*node, error) {
	lt, err := s.templateArg(f)
	if err != nil {
		return nil, err
	}
	if v := f.get("SetDefaultVersion"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > int64(len(lt.Versions)) {
			return nil, ec2Err("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template ID %s.", v, lt.ID)
		}
		lt.DefaultVersion = n
		s.notify()
	}
	return []*node{el("launchTemplate",
		txt("launchTemplateId", lt.ID),
		txt("launchTemplateName", lt.Name),
		num("defaultVersionNumber", lt.DefaultVersion),
		num("latestVersionNumber", int64(len(lt.Versions))),
	)}, nil
}

// SetDefaultVersion makes version n the template's default, as an IaC
// tool does with ModifyLaunchTemplate; for tests that set the scene
// without the SDK.
func (s *Server) SetDefaultVersion(id string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lt := s.templates[id]
	if lt == nil || n < 1 || n > int64(len(lt.Versions)) {
		return fmt.Errorf("launch template %q has no version %d", id, n)
	}
	lt.DefaultVersion = n
	s.notify()
	return nil
}
