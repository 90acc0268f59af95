package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// TargetImageRepo is the repository of images built from a git ref:
// longhaul-target/<name>:<commit>.
const TargetImageRepo = "longhaul-target"

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// buildFromGit resolves b.Ref to a commit and returns the image tagged
// longhaul-target/<name>:<commit>, building it from a git archive of the
// commit (no worktree is touched) only when that tag does not exist yet.
// <name> is the repository's base name, plus a hash of context and
// dockerfile when they are not the defaults (they change the image).
func (d *Docker) buildFromGit(ctx context.Context, b *scenarios.Build) (image, commit string, err error) {
	repo, ref := b.Repo, b.Ref
	if ref == "" {
		ref = "HEAD"
	}
	bctx := strings.Trim(path.Clean("/"+filepath.ToSlash(b.Context)), "/")
	dockerfile := b.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	remote := isRemoteRepo(repo)
	if !remote {
		if st, err := os.Stat(repo); err != nil || !st.IsDir() {
			return "", "", fmt.Errorf("%w: target.build.repo %q is not a directory or a URL", ErrInvalidSpec, repo)
		}
	}
	if commit, err = resolveRef(ctx, repo, ref, remote); err != nil {
		return "", "", err
	}
	image = TargetImageRepo + "/" + imageName(repo, bctx, dockerfile) + ":" + commit
	log := d.opts.Logger.With("image", image)

	d.buildMu.Lock()
	defer d.buildMu.Unlock()
	if d.imagePresent(ctx, image) {
		log.Info("reusing target image built from the same commit")
		return image, commit, nil
	}

	src := repo
	if remote {
		tmp, err := os.MkdirTemp(d.opts.TempDir, "longhaul-clone-")
		if err != nil {
			return "", "", fmt.Errorf("build target: %w", err)
		}
		defer os.RemoveAll(tmp)
		if _, err := git(ctx, "", "clone", "--quiet", "--bare", repo, tmp); err != nil {
			return "", "", fmt.Errorf("%w: clone %s: %v", ErrBuild, repo, err)
		}
		src = tmp
	}
	tarFile, err := os.CreateTemp(d.opts.TempDir, "longhaul-context-*.tar")
	if err != nil {
		return "", "", fmt.Errorf("build target: %w", err)
	}
	defer os.Remove(tarFile.Name())
	defer tarFile.Close()
	tree := commit
	if bctx != "" {
		tree = commit + ":" + bctx
	}
	if _, err := git(ctx, src, "archive", "--format=tar", "-o", tarFile.Name(), tree); err != nil {
		return "", "", fmt.Errorf("%w: target.build.context %q at %s: %v", ErrInvalidSpec, b.Context, shortID(commit), err)
	}

	start := time.Now()
	log.Info("building target image", "repo", repo, "ref", ref, "commit", commit)
	d.builds.Add(1)
	resp, err := d.cli.ImageBuild(ctx, tarFile, client.ImageBuildOptions{
		Tags:        []string{image},
		Dockerfile:  dockerfile,
		Remove:      true,
		ForceRemove: true,
		Labels:      map[string]string{"dev.longhaul.commit": commit, "dev.longhaul.repo": repo},
	})
	if err != nil {
		return "", "", fmt.Errorf("%w: target image %s: %s", ErrBuild, image, oneLine(err))
	}
	defer resp.Body.Close()
	tail := &tailBuffer{n: 20}
	if err := readBuildStream(resp.Body, tail); err != nil {
		return "", "", fmt.Errorf("%w: target image %s from %s at %s: %s", ErrBuild, image, repo, ref,
			withTail(oneLine(err), "the build log", tail.String()))
	}
	if !d.imagePresent(ctx, image) {
		return "", "", fmt.Errorf("%w: target image %s: %s", ErrBuild, image,
			withTail("the build ended without the image", "the build log", tail.String()))
	}
	log.Info("target image built", "seconds", time.Since(start).Seconds())
	return image, commit, nil
}

// readBuildStream follows a build's JSON message stream, keeping its text in
// tail, and returns the build's error, if any.
func readBuildStream(r io.Reader, tail io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read build output: %w", err)
		}
		if m.Stream != "" {
			_, _ = io.WriteString(tail, m.Stream)
		}
		if m.Error != nil {
			_, _ = io.WriteString(tail, m.Error.Message+"\n")
			return m.Error
		}
	}
}

// isRemoteRepo tells a URL (or scp-like git@host:path) from a local path.
func isRemoteRepo(repo string) bool {
	return strings.Contains(repo, "://") || strings.HasPrefix(repo, "git@")
}

// resolveRef returns the commit ref names.
func resolveRef(ctx context.Context, repo, ref string, remote bool) (string, error) {
	if !remote {
		out, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		if err != nil {
			return "", fmt.Errorf("%w: target.build.ref %q is not a commit in %s", ErrInvalidSpec, ref, repo)
		}
		return out, nil
	}
	if fullSHA.MatchString(ref) {
		return ref, nil
	}
	out, err := git(ctx, "", "ls-remote", repo, ref, ref+"^{}")
	if err != nil {
		return "", fmt.Errorf("%w: resolve %s in %s: %v", ErrInvalidSpec, ref, repo, err)
	}
	var commit string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if strings.HasSuffix(f[1], "^{}") || commit == "" { // a peeled tag wins
			commit = f[0]
		}
	}
	if commit == "" {
		return "", fmt.Errorf("%w: target.build.ref %q not found in %s", ErrInvalidSpec, ref, repo)
	}
	return commit, nil
}

var imageNameBad = regexp.MustCompile(`[^a-z0-9]+`)

// imageName is the repository part of a built image's name.
func imageName(repo, bctx, dockerfile string) string {
	base := strings.TrimSuffix(path.Base(strings.TrimRight(filepath.ToSlash(repo), "/")), ".git")
	if i := strings.LastIndexAny(base, ":"); i >= 0 { // git@host:name
		base = base[i+1:]
	}
	name := strings.Trim(imageNameBad.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if name == "" {
		name = "target"
	}
	if bctx != "" || dockerfile != "Dockerfile" {
		name += fmt.Sprintf("-%08x", fnv32(bctx+"\x00"+dockerfile))
	}
	return name
}

// git runs git with args (in dir unless empty) and returns its trimmed
// stdout; the error carries stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[len(args)-1], strings.Join(strings.Fields(msg), " "))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// ResolveRef returns the commit a git ref names in repo (a path or URL), as
// a docker build of target.build.ref would build it. A scheduled run calls
// it when it starts, so that each night soaks the then-current commit.
func ResolveRef(ctx context.Context, repo, ref string) (string, error) {
	return resolveRef(ctx, repo, ref, isRemoteRepo(repo))
}

// HeadCommit returns the commit checked out in the git work tree holding
// dir, or "" when dir is not in one: the commit a local build of dir builds.
func HeadCommit(ctx context.Context, dir string) string {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return ""
	}
	return out
}
