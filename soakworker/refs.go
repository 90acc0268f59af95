package soakworker

import (
	"context"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

// refBuilder builds a comparison side's git ref once: for the local
// provider with provision.BuildLocalRef (cached by commit under the data
// directory); for the docker provider Provision builds the Dockerfile at
// the ref itself, once per commit (its image tag cache), so the side is
// left as it is.
type refBuilder struct{ opts provision.Options }

func (b refBuilder) Build(ctx context.Context, req activities.BuildRequest) (store.Build, error) {
	out := req.Build
	kind := req.Provider
	if kind == "" {
		kind = req.Spec.Provider
	}
	if kind != "local" {
		return out, nil
	}
	commit, dir, err := provision.BuildLocalRef(ctx, b.opts, req.Spec, out.Ref)
	if err != nil {
		return out, err
	}
	out.Commit, out.Artifact = commit, dir
	return out, nil
}

// gitRefs resolves a scheduled run's git ref with package provision.
type gitRefs struct{}

func (gitRefs) ResolveRef(ctx context.Context, repo, ref string) (string, error) {
	return provision.ResolveRef(ctx, repo, ref)
}

func (gitRefs) HeadCommit(ctx context.Context, dir string) string {
	return provision.HeadCommit(ctx, dir)
}
