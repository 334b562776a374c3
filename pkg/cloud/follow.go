package cloud

import "context"

// DefaultFollower is a Group that may launch whatever version its template
// names as its default (AWS: $Default) rather than a fixed one. Such a
// group keeps following the default after a run, so the run makes the
// target the default instead of pinning the group, and abort and rollback
// make the old one the default again.
type DefaultFollower interface {
	Scaler
	// TemplateDefault reports whether the group launches its template's
	// default version, and which version that is now.
	TemplateDefault(ctx context.Context) (follows bool, version string, err error)
	// SetTemplateDefault makes version the template's default.
	SetTemplateDefault(ctx context.Context, version string) error
}
