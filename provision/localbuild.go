package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// Local builds of a git ref (a comparison side, issue 11): the commit's
// tree is exported with git archive (the repository's own worktrees are
// not touched) into DataDir/builds/<commit>-<hash>/src, and
// target.build.command runs there with $LONGHAUL_ENV_DIR set to .../out.
// The build is cached by commit (and command): a second comparison of the
// same commit reuses it. Provision with Request.Prebuilt set to the build's
// directory copies out/ into the environment's directory instead of
// building, and runs the target in the matching directory of src/.

// buildsDir is the local builds' directory under the data directory.
const buildsDir = "builds"

// builtLayout is written last into a build directory: its presence means
// the build is complete.
type builtLayout struct {
	Commit string `json:"commit"`
	// Root is the repository's top directory the tree was exported from;
	// target.dir and target.build.dir under it map into src/.
	Root string `json:"root"`
}

const layoutFile = "longhaul-build.json"

// BuildLocalRef builds ref of the local target in spec once per commit and
// returns the commit and the build's directory (for Request.Prebuilt).
// The repository is target.build.repo (a local path) or the one holding
// target.build.dir (else target.dir).
func BuildLocalRef(ctx context.Context, opts Options, spec scenarios.Environment, ref string) (commit, dir string, err error) {
	opts = opts.withDefaults()
	t := spec.Target
	if t.Build == nil || t.Build.Command == "" {
		return "", "", fmt.Errorf("%w: building a ref locally needs target.build.command", ErrInvalidSpec)
	}
	buildDir := firstNonEmpty(t.Build.Dir, t.Dir)
	repo := t.Build.Repo
	if repo == "" {
		repo = buildDir
	}
	if repo == "" {
		if repo, err = os.Getwd(); err != nil {
			return "", "", err
		}
	}
	if isRemoteRepo(repo) {
		return "", "", fmt.Errorf("%w: the local provider builds refs of a local repository, not %s", ErrInvalidSpec, repo)
	}
	root, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", fmt.Errorf("%w: %s is not in a git repository: %v", ErrInvalidSpec, repo, err)
	}
	if commit, err = resolveRef(ctx, root, ref, false); err != nil {
		return "", "", err
	}
	rel := "."
	if buildDir != "" {
		abs, err := filepath.Abs(buildDir)
		if err != nil {
			return "", "", err
		}
		if rel, err = relInside(root, abs); err != nil {
			return "", "", fmt.Errorf("%w: target.build.dir %s is outside the repository %s", ErrInvalidSpec, buildDir, root)
		}
	}
	dir = filepath.Join(opts.DataDir, buildsDir, fmt.Sprintf("%s-%08x", commit, fnv32(t.Build.Command+"\x00"+rel)))
	if _, err := os.Stat(filepath.Join(dir, layoutFile)); err == nil {
		opts.Logger.Info("reusing the build of this commit", "commit", commit, "dir", dir)
		return commit, dir, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".building-")
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return "", "", fmt.Errorf("create the builds directory: %w", err)
		}
		if tmp, err = os.MkdirTemp(filepath.Dir(dir), ".building-"); err != nil {
			return "", "", fmt.Errorf("create a build directory: %w", err)
		}
	}
	defer os.RemoveAll(tmp) // gone after the rename unless the build failed
	src, out := filepath.Join(tmp, "src"), filepath.Join(tmp, "out")
	for _, d := range []string{src, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", err
		}
	}
	if err := exportTree(ctx, root, commit, src); err != nil {
		return "", "", err
	}
	if err := runBuild(ctx, t.Build.Command, filepath.Join(src, rel), out, "", opts.Logger); err != nil {
		return "", "", err
	}
	// Inputs that are not in the tree (build.log) stay out of src: the log
	// goes to out/, which runBuild wrote it to.
	b, err := json.Marshal(builtLayout{Commit: commit, Root: root})
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, layoutFile), b, 0o644); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, layoutFile)); serr == nil {
			return commit, dir, nil // another worker built it meanwhile
		}
		return "", "", fmt.Errorf("store the build: %w", err)
	}
	opts.Logger.Info("built ref", "ref", ref, "commit", commit, "dir", dir)
	return commit, dir, nil
}

// exportTree writes commit's tree of the repository at root into dst.
func exportTree(ctx context.Context, root, commit, dst string) error {
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dst)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	var aerr, terr strings.Builder
	archive.Stderr, untar.Stderr = &aerr, &terr
	if err := untar.Start(); err != nil {
		return fmt.Errorf("export %s: tar: %w", commit, err)
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return fmt.Errorf("export %s: git archive: %v %s", commit, err, strings.TrimSpace(aerr.String()))
	}
	if err := untar.Wait(); err != nil {
		return fmt.Errorf("export %s: tar: %v %s", commit, err, strings.TrimSpace(terr.String()))
	}
	return nil
}

// relInside is target's path relative to root, or an error when it is
// outside.
func relInside(root, target string) (string, error) {
	// Compare real paths: the repository top from git is symlink-free.
	if r, err := filepath.EvalSymlinks(target); err == nil {
		target = r
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", errors.New("outside")
	}
	return rel, nil
}

// usePrebuilt copies the build's out/ into envDir and returns the
// directory to run the target in: target.dir mapped into the build's
// src/ (the build's src/ top when target.dir is empty or outside the
// repository).
func usePrebuilt(prebuilt, envDir, targetDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(prebuilt, layoutFile))
	if err != nil {
		return "", fmt.Errorf("prebuilt target %s: %w", prebuilt, err)
	}
	var l builtLayout
	if err := json.Unmarshal(b, &l); err != nil {
		return "", fmt.Errorf("prebuilt target %s: %w", prebuilt, err)
	}
	if err := copyTree(filepath.Join(prebuilt, "out"), envDir); err != nil {
		return "", fmt.Errorf("copy the prebuilt target: %w", err)
	}
	src := filepath.Join(prebuilt, "src")
	if targetDir == "" {
		return src, nil
	}
	abs, err := filepath.Abs(targetDir)
	if err != nil {
		return src, nil
	}
	rel, err := relInside(l.Root, abs)
	if err != nil {
		return src, nil
	}
	return filepath.Join(src, rel), nil
}

// copyTree copies the regular files and directories under from into to,
// keeping their modes (build.log is left out: it is the build's, not the
// environment's).
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm()|0o700)
		case !info.Mode().IsRegular() || rel == "build.log":
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
